"""The documentation site: it builds in strict mode (a broken link, a missing file or anchor
fails), every page is in its navigation, and the generated references match the code."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _reference_module():
    spec = importlib.util.spec_from_file_location("docs_reference",
                                                  ROOT / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules.setdefault("docs_reference", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["docs_reference"])
    return sys.modules["docs_reference"]


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _mkdocs_config() -> dict:
    # mkdocs.yml holds no YAML tags, so a plain loader reads it.
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_docs_page_is_in_the_nav():
    nav = _nav_pages(_mkdocs_config()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                   if "hooks" not in p.relative_to(DOCS).parts)
    missing = [page for page in pages if page not in nav]
    assert not missing, f"docs pages missing from mkdocs.yml's nav: {missing}"
    gone = [page for page in nav if not (DOCS / page).is_file()]
    assert not gone, f"mkdocs.yml's nav names pages that do not exist: {gone}"


def test_the_site_builds_in_strict_mode(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'; scripts/setup.sh does)")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "index.html").is_file()
    assert (site / "reference" / "config.html").is_file()
    # A raw benchmark output the results page links to is part of the site.
    assert (site / "repo" / "benchmarks" / "results" / "hostile.txt").is_file()


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The build is a real check: a page linking to a missing page or repository file fails."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'; scripts/setup.sh does)")
    copy = tmp_path / "repo"
    (copy / "docs" / "hooks").mkdir(parents=True)
    shutil.copy(DOCS / "hooks" / "repo_links.py", copy / "docs" / "hooks" / "repo_links.py")
    (copy / "docs" / "index.md").write_text(
        "# Home\n\n[raw output](../benchmarks/results/nothing.txt) and [a page](missing.md)\n")
    config = _mkdocs_config()
    config["nav"] = [{"Home": "index.md"}]
    (copy / "mkdocs.yml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=copy, capture_output=True, text=True, timeout=300, env=env)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "nothing.txt" in output and "missing.md" in output


def test_every_config_key_has_a_description():
    missing = _reference_module().undescribed_keys()
    assert not missing, ("config keys without Field(description=...): " + ", ".join(missing))


def test_the_generated_references_are_current():
    stale = _reference_module().stale_pages()
    assert not stale, (f"{[str(p.relative_to(ROOT)) for p in stale]} differ from the code: "
                       "run python scripts/docs_reference.py")


def test_the_config_reference_lists_every_key_with_its_default():
    module = _reference_module()
    page = (DOCS / "reference" / "config.md").read_text()
    for key in module.config_keys():
        if "." in key.path:
            assert f"| `{key.path}` |" in page
        else:  # a section: its own heading and table
            assert f"## `{key.path}`" in page
    assert "| `evolution.generations` | `int` | `20` |" in page


def test_the_cli_reference_lists_every_command_and_option():
    page = (DOCS / "reference" / "cli.md").read_text()
    module = _reference_module()
    root = module._cli_root()
    for path, command in module._walk(root, ["cambrian"]):
        assert f"## `{' '.join(path)}`" in page
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert f"`{param.opts[0]}" in page
