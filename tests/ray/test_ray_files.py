"""A program of several files evaluated on Ray workers: the job carries the program's text,
the worker's node-local copy of the task folder (the task bundle) holds the other task files,
and the worker writes each of the program's files at its path before evaluating."""

from __future__ import annotations

from pathlib import Path

from ray_helpers import LocalRayCluster, worker_label
from support.several_files import run_package

from cambrian.store.store import Store


def test_a_package_child_is_evaluated_on_a_worker(tmp_path: Path, ray_cluster: LocalRayCluster,
                                                  two_workers: list[str]):
    run_dir, _ = run_package(tmp_path, 2, "execution.backend=ray",
                             f"execution.ray_address={ray_cluster.address}",
                             f"execution.worker_dir={tmp_path / 'workers'}")
    with Store.open(run_dir, read_only=True) as store:
        child = next(r for r in store.candidates.list() if r.description.startswith("Sort"))
        assert child.status == "correct" and child.score is not None and child.score > 0.95
        assert store.evaluations.worker_of(child.id) in {worker_label(n) for n in two_workers}
        assert len(store.candidates.blobs.files(child.id)) == 3
    # The workers' copies of the task folder hold the initial files, never a child's.
    copies = list((tmp_path / "workers").rglob("schedule/order.py"))
    assert copies and all("list(range(len(times)))" in p.read_text() for p in copies)
