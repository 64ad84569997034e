"""The session's Ray cluster (``ray_helpers.LocalRayCluster``) and a fixture that makes sure
it has two worker nodes (a test may have killed one)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_helpers import CLUSTER_ENV, LocalRayCluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalRayCluster]:
    saved = {name: os.environ.get(name) for name in CLUSTER_ENV}
    os.environ.update(CLUSTER_ENV)  # this process (the driver) and the drivers it starts
    # A short folder: Ray's socket paths must fit in 107 characters.
    cluster = LocalRayCluster(Path(tempfile.mkdtemp(prefix="cr-", dir="/tmp")))
    try:
        cluster.start_head()
        cluster.ensure_workers(2)
        yield cluster
    finally:
        cluster.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def two_workers(ray_cluster: LocalRayCluster) -> list[str]:
    return ray_cluster.ensure_workers(2)
