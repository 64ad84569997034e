"""How values are written to the store: strict JSON (NaN/inf become null), finite floats, and
redaction of secret values from everything written: the run's configured API keys and the value
of every credential-named variable of the environment (`core/secrets.py`), configured or not."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from cambrian.core.secrets import MIN_SECRET_CHARS, environment_secrets

REDACTED = "[redacted]"


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def clean(value: Any) -> Any:
    """Replace NaN/inf (not representable in strict JSON) by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """The JSON text the store writes for ``value`` (before redaction): strict, keys sorted."""
    return json.dumps(clean(value), sort_keys=True, default=_json_default, allow_nan=False)


def finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


class Codec:
    """Encodes values for the store; every text goes through :meth:`text`, so no secret value
    is ever written, whoever produced the text (a candidate printing a key it should not have
    had, a provider echoing it in an error, a task's scorer that read one).

    `secrets`: the run's configured key values; the environment's credential-named variables
    (`environment_secrets`, read when the codec is made) are always added."""

    def __init__(self, secrets: tuple[str, ...] = (),
                 environ: Mapping[str, str] | None = None) -> None:
        values = {*secrets, *environment_secrets(environ)}
        self.secrets = tuple(sorted({s for s in values if s and len(s) >= MIN_SECRET_CHARS},
                                    key=len, reverse=True))

    def text(self, value: str | None) -> str | None:
        if value is None or not self.secrets:
            return value
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def json(self, value: Any) -> str:
        return self.text(json_text(value)) or ""


def loads(text: str | None, default: Any = None) -> Any:
    return json.loads(text) if text else default
