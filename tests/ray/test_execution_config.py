"""The ``execution:`` section and the choice of executor (no cluster needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cambrian.config import ConfigError, build_config
from cambrian.evaluate.executor import LocalExecutor
from cambrian.evaluate.executors import build_executor


def test_execution_section_is_strict():
    config = build_config([], ["execution.backend=ray", "execution.ray_address=auto"])
    assert config.execution.backend == "ray" and config.execution.ray_address == "auto"
    assert build_config([]).execution.backend == "local"
    with pytest.raises(ConfigError, match="did you mean 'backend'"):
        build_config([], ["execution.bakend=ray"])
    with pytest.raises(ConfigError, match="execution.backend"):
        build_config([], ["execution.backend=spark"])
    with pytest.raises(ConfigError, match="num_cpus sizes the local cluster"):
        build_config([], ["execution.ray_address=auto", "execution.num_cpus=4"])


def test_the_local_backend_never_imports_ray():
    code = ("import sys\nfrom cambrian.config import build_config\n"
            "from cambrian.evaluate.executors import build_executor\n"
            "import cambrian.search.build\n"
            "executor = build_executor(build_config([]), object())\n"
            "assert type(executor).__name__ == 'LocalExecutor'\n"
            "assert 'ray' not in sys.modules, 'ray was imported'\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]


def test_the_ray_backend_without_ray_names_the_extra():
    code = ("import sys\nsys.modules['ray'] = None  # as if it were not installed\n"
            "from cambrian.config import build_config\n"
            "from cambrian.evaluate.executors import build_executor\n"
            "build_executor(build_config([], ['execution.backend=ray']), object())\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=False)
    assert completed.returncode != 0
    assert "ConfigError" in completed.stderr and "cambrian[ray]" in completed.stderr


def test_the_ray_backend_builds_a_ray_executor():
    from cambrian.evaluate.distributed.executor import RayExecutor

    evaluator = object()
    local = build_executor(build_config([]), evaluator)
    assert isinstance(local, LocalExecutor) and local.evaluator is evaluator
    remote = build_executor(build_config([], ["execution.backend=ray"]), evaluator)
    assert isinstance(remote, RayExecutor) and remote.evaluator is evaluator
