"""Which optional dependencies a configuration needs, checked before a run folder is made."""

from __future__ import annotations

from cambrian.config.sections import RunConfig
from cambrian.core.extras import require_extra

Need = tuple[str, str, tuple[str, ...] | None]  # extra, the setting needing it, its modules


def required_extras(config: RunConfig) -> list[Need]:
    """(extra, the setting that needs it, the modules of the extra it needs; None: all) for
    every optional feature the config turns on."""
    needed: list[Need] = []
    for index, model in enumerate(config.llm.models):
        if model.provider == "local":
            needed.append(("local", f"llm.models[{index}] (provider local, {model.model})",
                           None))
    if config.novelty.enabled and config.novelty.embedding == "local":
        needed.append(("novelty", ("novelty rejection with the bundled MiniLM embeddings "
                                   "(novelty.embedding: local; or set novelty.enabled: false, "
                                   "or novelty.embedding: openai)"), None))
    if config.execution.backend == "ray":
        needed.append(("ray", "execution.backend: ray", None))
    if config.tracking.mlflow is not None:
        needed.append(("tracking", "tracking.mlflow (export to MLflow)", ("mlflow",)))
    if config.tracking.wandb is not None:
        needed.append(("tracking", "tracking.wandb (export to Weights & Biases)", ("wandb",)))
    return needed


def check_extras(config: RunConfig) -> None:
    """Raise MissingExtra (an ImportError) naming the first missing extra and its setting."""
    for extra, feature, modules in required_extras(config):
        require_extra(extra, feature, modules)


__all__ = ["check_extras", "required_extras"]
