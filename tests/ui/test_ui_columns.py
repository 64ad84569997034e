"""The UI's columns (``search/ui_columns.py``, written by the run with its resume snapshot) give
the overview the JSON the store's rows give: on a real run, on the rows stored after the
columns (a live run, a pending child), and on a run whose columns are stale or missing (the
store is read instead). The UI only reads them."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path
from typing import Any

from conftest import in_thread, refusing_once, scripted_sets
from fastapi.testclient import TestClient
from support.scripted_llm import ScriptedLLM, write_counter_task
from support.several_files import run_package

from cambrian.api import start
from cambrian.core.evaluation import EvaluationResult
from cambrian.search import ui_columns
from cambrian.store.rows import NewCandidate, NewContext
from cambrian.store.store import Store
from cambrian.ui.app import create_app
from cambrian.ui.runs import RunCatalog

TOKEN = "t"
URLS = ("/api/runs/{key}/overview", "/api/runs/{key}/series", "/api/runs/{key}/plots",
        "/api/runs/{key}/transport")


def make_run(root: Path) -> Path:
    """A finished run of the counter task (7 children, one refused reply, one incorrect)."""
    task = write_counter_task(root / "task", limit=12)
    with ScriptedLLM(refusing_once) as llm:
        evolution = start(task, run_dir=root / "runs" / "counter-run",
                          overrides=scripted_sets(llm, 7))
        in_thread(lambda: asyncio.run(evolution.run()))
        evolution.store.close()
    return root / "runs"


def add_rows(store: Store, count: int, seed: int, *, pending: int = 0) -> list[int]:
    """``count`` more children (correct with two metrics, incorrect, refused), each with its
    LLM call, as a live run stores them; the last ``pending`` left pending. Their ids."""
    rng = random.Random(seed)
    ids = [row.id for row in store.candidates.list() if row.status == "correct"]
    made: list[int] = []
    with store.transaction():
        for n in range(count):
            _add_one(store, rng, ids, made, n, count, pending)
    return made


def _add_one(store: Store, rng: random.Random, ids: list[int], made: list[int], n: int,
             count: int, pending: int) -> None:
    context = store.contexts.add(NewContext(
        purpose="mutation", model=rng.choice(("m-a", "m-b")), provider="openai", params={},
        messages=[{"role": "user", "content": "p"}], response_text="r",
        prompt_tokens=rng.randrange(50, 500), completion_tokens=30,
        cost_usd=rng.choice((0.0, 0.001)), latency_s=rng.random(),
        error="timed out" if n % 17 == 0 else ""))
    notes = {"intent": rng.choice(("refinement", "strategy", ""))}
    parent = rng.choice(ids)
    kind = rng.random()
    if kind < 0.2:
        made.append(store.candidates.add(NewCandidate(
            generation=100 + n, island=rng.randrange(3), parent_id=parent, operator="diff",
            status="patch_failed", language="python", model="m-a", context_id=context,
            notes=notes, error=f"no edit found in reply {n}")))
        return
    child = store.candidates.add(NewCandidate(
        generation=100 + n, island=rng.randrange(3), parent_id=parent, operator="diff",
        status="pending", language="python", model=rng.choice(("m-a", "m-b")),
        context_id=context, source="x = 1\n" * rng.randrange(1, 9), notes=notes))
    made.append(child)
    if count - n <= pending:
        return
    correct = kind < 0.85
    score = round(rng.random() * 10, 2) if correct else None
    # Two reasons that differ only past the 240th character: both are kept apart.
    wrong = f"wrong at case {n} " + "x" * 300 + ("a" if n % 2 else "b")
    store.evaluations.add(child, EvaluationResult(
        status="ok" if correct else "incorrect", combined_score=score,
        public={"speed": rng.random(), "size": rng.randrange(5), "flag": True},
        error="" if correct else wrong, duration_s=rng.random()))
    store.candidates.update(child, status="correct" if correct else "incorrect",
                            score=score, error=None if correct else wrong)
    if correct:
        ids.append(child)


def ui(runs: Path) -> TestClient:
    """A fresh UI process's client."""
    return TestClient(create_app(RunCatalog([runs]), token=TOKEN, read_only=True),
                      base_url="http://127.0.0.1:8765",
                      headers={"Authorization": f"Bearer {TOKEN}"})


def served(runs: Path, client: TestClient | None = None, key: str = "counter-run",
           pareto: bool = True) -> dict[str, Any]:
    """What the UI (a fresh one when no ``client``) answers for the run's overview and its
    fetches (but where the run folder is)."""
    client = client if client is not None else ui(runs)
    found = {}
    for url in URLS + (("/api/runs/{key}/plots?pareto=size,speed",) if pareto else ()):
        response = client.get(url.format(key=key))
        assert response.status_code == 200, response.text
        found[url] = response.json()
    found[URLS[0]]["row"].pop("path")  # where the run folder is
    return found


def without_columns(runs: Path, tmp_path: Path, key: str = "counter-run",
                    pareto: bool = True) -> dict[str, Any]:
    """The same answers from a copy of the run without its columns (read from the store)."""
    copy = tmp_path / "plain" / "runs"
    shutil.copytree(runs, copy)
    shutil.rmtree(copy / key / ui_columns.FOLDER)
    return served(copy, key=key, pareto=pareto)


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file's size and change time (but SQLite's shared memory, which readers write)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and not p.name.endswith("-shm")}


def test_the_overview_from_the_runs_columns_is_the_one_from_its_store(tmp_path: Path):
    runs = make_run(tmp_path)
    run_dir = runs / "counter-run"
    assert (run_dir / ui_columns.FOLDER / ui_columns.HEADER).exists()  # written by the run
    store = Store.open(run_dir)
    add_rows(store, 2500, seed=1)  # thinned series, binned occupancy, sampled scores
    ui_columns.write(store, ui_columns.read(store))  # the run's next checkpoint: appended
    add_rows(store, 40, seed=2, pending=3)  # stored after the columns, the last ones pending
    store.close()
    assert ui_columns.load(Store.open(run_dir, read_only=True)) is not None
    before = files_of(run_dir)
    client = ui(runs)
    with_columns = served(runs, client)
    assert client.app.state.caches.files.used == 1  # type: ignore[attr-defined]
    assert files_of(run_dir) == before  # the UI wrote nothing into the run folder
    assert with_columns == without_columns(runs, tmp_path)
    assert with_columns[URLS[2]]["pareto"]["x"] is not None
    assert with_columns[URLS[1]]["scores"]["sampled"]


def test_columns_that_do_not_describe_the_store_are_not_used(tmp_path: Path):
    runs = make_run(tmp_path)
    run_dir = runs / "counter-run"
    store = Store.open(run_dir)
    written = ui_columns.write(store)
    assert ui_columns.read_checked(store) is not None
    with store.transaction():  # a candidate under the watermark changes: the columns are stale
        store.candidates.update(written.candidate_mark, status="pending")
    assert ui_columns.read_checked(store) is None
    store.candidates.update(written.candidate_mark, status="correct")
    store.close()
    other = make_run(tmp_path / "other")  # another run's columns
    shutil.rmtree(run_dir / ui_columns.FOLDER)
    shutil.copytree(other / "counter-run" / ui_columns.FOLDER, run_dir / ui_columns.FOLDER)
    assert ui_columns.read_checked(Store.open(run_dir, read_only=True)) is None
    client = ui(runs)
    assert served(runs, client) == without_columns(runs, tmp_path)
    assert client.app.state.caches.files.used == 0  # type: ignore[attr-defined]


def test_a_live_run_is_followed_past_its_columns(tmp_path: Path):
    runs = make_run(tmp_path)
    run_dir = runs / "counter-run"
    client = ui(runs)  # one UI process, kept while the run goes on
    served(runs, client)
    store = Store.open(run_dir)
    for seed in (3, 4):
        add_rows(store, 30, seed=seed, pending=2)
        assert served(runs, client) == without_columns(runs, tmp_path / str(seed))
    store.close()


def test_the_rich_runs_overviews_are_the_same_from_their_columns(rich_runs: Path,
                                                                  tmp_path: Path):
    """A judged C++ run with two models, novelty rejections, notes and tune steps, and a priced
    run (``rich_runs.py``): each run wrote its columns, and its overview from them is the one
    from its store."""
    for run in sorted(p for p in rich_runs.iterdir() if (p / "run.sqlite").exists()):
        assert (run / ui_columns.FOLDER / ui_columns.HEADER).exists()
        client = ui(rich_runs)
        answers = served(rich_runs, client, key=run.name, pareto=False)
        assert client.app.state.caches.files.used == 1  # type: ignore[attr-defined]
        assert answers == without_columns(rich_runs, tmp_path / run.name, key=run.name,
                                          pareto=False)


def test_a_run_of_several_files_counts_its_lines_from_its_columns(tmp_path: Path):
    """A program of several files: its size is the lines of all its files, from the columns as
    from the store."""
    run_dir, _ = in_thread(lambda: run_package(tmp_path / "made", 3))
    client = ui(run_dir.parent)
    answers = served(run_dir.parent, client, key=run_dir.name, pareto=False)
    assert client.app.state.caches.files.used == 1  # type: ignore[attr-defined]
    assert answers == without_columns(run_dir.parent, tmp_path, key=run_dir.name, pareto=False)
    assert min(answers[URLS[2]]["sizes"]["lines"]) > 1
