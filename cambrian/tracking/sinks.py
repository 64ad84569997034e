"""What a tracker is to the run: start (with the run's parameters), metrics at a step, finish."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class TrackingSink(Protocol):
    name: str

    def start(self, params: Mapping[str, str], tags: Mapping[str, str]) -> None: ...

    def log(self, metrics: Mapping[str, float], step: int) -> None: ...

    def finish(self, outcome: str) -> None: ...


def flat_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A nested configuration as dotted keys with short string values (trackers' params)."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_params(value, dotted + "."))
        else:
            text = str(value)
            flat[dotted] = text if len(text) <= 250 else text[:247] + "..."
    return flat


__all__ = ["TrackingSink", "flat_params"]
