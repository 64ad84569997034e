"""Which optional dependencies a configuration needs, checked before a run folder is made."""

from __future__ import annotations

import logging

from cambrian.config.sections import RunConfig
from cambrian.core.extras import missing_module, require_extra

log = logging.getLogger(__name__)

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


def fit_defaults_to_installed(config: RunConfig) -> RunConfig:
    """A new run's defaults that need an extra which is not installed are turned off, with a
    warning, when the configuration did not ask for them: novelty rejection is on by default
    with the ``novelty`` extra's local embeddings, which an API-only install
    (``pip install cambrian``) does not have. A setting the user gave is never changed: it is
    checked by :func:`check_extras` instead."""
    novelty = config.novelty
    asked = {"enabled", "embedding"} & novelty.model_fields_set
    if not (novelty.enabled and novelty.embedding == "local" and not asked):
        return config
    module = missing_module("novelty")
    if module is None:
        return config
    log.warning("novelty rejection is off: its default local embeddings need the 'novelty' "
                "extra (%s is missing; pip install 'cambrian[novelty]', or set "
                "novelty.embedding: openai)", module)
    return config.model_copy(update={"novelty": novelty.model_copy(update={"enabled": False})})


def check_extras(config: RunConfig) -> None:
    """Raise MissingExtra (an ImportError) naming the first missing extra and its setting."""
    for extra, feature, modules in required_extras(config):
        require_extra(extra, feature, modules)


__all__ = ["check_extras", "fit_defaults_to_installed", "required_extras"]
