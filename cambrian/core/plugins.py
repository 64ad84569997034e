"""Plugin modules (``search.plugins``): imported before a run is built, so the algorithms,
components, reply formats, languages and providers they register are there by name."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from cambrian.core.errors import ConfigError


def load_plugins(modules: Sequence[str]) -> None:
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"search.plugins: cannot import '{module}': {exc}") from None
