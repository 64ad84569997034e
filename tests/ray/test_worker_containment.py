"""A Ray worker contains what it evaluates exactly as the driver's process does: the sandbox's
probe command, run from inside a worker, finds the same mechanisms active."""

from __future__ import annotations

import ray
from ray_helpers import LocalRayCluster

from cambrian.evaluate.containment import containment_report


def test_workers_contain_evaluations_like_the_driver(
        ray_cluster: LocalRayCluster, two_workers: list[str]):
    ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        probe = ray.remote(containment_report).options(num_cpus=1)
        on_workers = ray.get([probe.remote(refresh=True) for _ in two_workers])
    finally:
        ray.shutdown()
    here = containment_report(refresh=True)
    for report in on_workers:
        assert {k: v for k, v in report.items() if k != "warnings"} == \
            {k: v for k, v in here.items() if k != "warnings"}
    assert here["pid_namespace"] and here["read_only_outside_scratch"]
