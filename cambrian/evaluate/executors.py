"""Choosing where evaluations run from ``execution:`` (the composition root calls this).

The local backend never imports Ray; the Ray backend needs the ``cambrian[ray]`` extra.
"""

from __future__ import annotations

from typing import Any

from cambrian.config import RunConfig
from cambrian.core.errors import ConfigError
from cambrian.evaluate.executor import EvaluationExecutor, LocalExecutor
from cambrian.llm.factory import key_env_name

RAY_MISSING = ("execution.backend is 'ray', but Ray is not installed; install it with "
               "pip install 'cambrian[ray]'")


def build_executor(config: RunConfig, evaluator: Any) -> EvaluationExecutor:
    if config.execution.backend == "local":
        return LocalExecutor(evaluator)
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    from cambrian.evaluate.distributed.executor import RayExecutor

    secret_env = tuple(name for name in map(key_env_name, config.llm.models) if name)
    return RayExecutor(evaluator, config.execution, secret_env)
