"""Small helpers shared by the foreign-framework importers."""

from __future__ import annotations

import json
import math
from typing import Any


def clean(value: Any) -> Any:
    """Replace NaN/inf (not representable in strict JSON) by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def parse_json(value: Any, default: Any) -> Any:
    """A JSON column that may be NULL, already decoded, or malformed."""
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return default


def finite_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(as_text(v) for v in value)
    return json.dumps(value, sort_keys=True, default=str)
