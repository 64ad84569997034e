"""The candidate page of a program of several files in headless Chromium: its file tree (which
files changed from the parent, which are fixed) and one diff per changed file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import in_thread
from support.several_files import run_package

from cambrian.store.store import Store


def test_a_child_of_two_changed_files_shows_its_tree_and_per_file_diffs(
        page: Any, serve: Any, tmp_path: Path):
    run_dir, _ = in_thread(lambda: run_package(tmp_path / "runs"))
    with Store.open(run_dir, read_only=True) as store:
        child = next(r for r in store.candidates.list() if r.description.startswith("Sort"))
    base = serve([tmp_path / "runs"])

    page.goto(f"{base}/runs/{run_dir.name}/candidates/{child.id}")
    tree = page.locator("#file-tree")
    assert tree.locator("li").first.inner_text() == "schedule/"  # the folder, then its files
    files = tree.locator("li.file")
    assert [files.nth(i).get_attribute("data-path") for i in range(files.count())] == [
        "schedule/__init__.py", "schedule/order.py", "schedule/assign.py"]
    changed = tree.locator("li.changed")
    assert [changed.nth(i).get_attribute("data-path") for i in range(changed.count())] == [
        "schedule/order.py", "schedule/assign.py"]
    assert tree.locator("li.fixed").get_attribute("data-path") == "schedule/__init__.py"
    # Each file's code under its path; the tree's links lead to it.
    tree.locator("li[data-path='schedule/assign.py'] a").click()
    page.wait_for_url("**#file-3")
    assign = page.locator(".source-file[data-path='schedule/assign.py'] .source-code")
    assert "loads[machine] += times[job]" in assign.inner_text()

    diffs = page.locator("#diff .file-diff")
    assert [diffs.nth(i).get_attribute("data-path") for i in range(diffs.count())] == [
        "schedule/order.py", "schedule/assign.py"]
    order = page.locator("#diff .file-diff[data-path='schedule/order.py']")
    assert order.locator("h3").inner_text() == "schedule/order.py"
    assert order.locator(".dl.del").first.inner_text() == "-    return list(range(len(times)))"
    assert order.locator(".dl.add").first.inner_text() == (
        "+    return sorted(range(len(times)), key=lambda job: -times[job])")
    head = order.locator(".dl.head").first.inner_text()
    assert head == "--- candidate 1: schedule/order.py"
    assign_diff = page.locator("#diff .file-diff[data-path='schedule/assign.py']").inner_text()
    assert "+        loads[machine] += times[job]" in assign_diff
    assert "__init__" not in page.locator("#diff").inner_text().split("Diff against")[0]
