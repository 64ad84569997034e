"""The one check of a control request, wherever it is made (the web UI, ``cambrian control``,
the Python API): the action is known, a budget value is a finite number of the right type and
within the setting's range, an integer budget is never truncated (2.7 evaluations is refused,
not read as 2), and a budget that ends the run at once (at or below what was already spent,
or 0) is applied only when the request says it was confirmed. What is accepted comes back as
the plan the run will follow ("evaluations 30 → 40"); the run checks the request again when it
applies it, against the settings it has then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from cambrian.config import BudgetConfig, EvolutionConfig
from cambrian.core.errors import ConfigError
from cambrian.core.events import CandidateEvaluated
from cambrian.store.store import Store

ACTIONS = ("pause", "resume", "stop", "budget")
# What a ``budget`` request may change, and where it lives in the configuration.
BUDGET_KEYS = {"generations": "evolution", "max_cost_usd": "budget", "max_tokens": "budget",
               "max_llm_calls": "budget", "max_wall_time_s": "budget"}
INTEGER_KEYS = frozenset({"generations", "max_tokens", "max_llm_calls"})
# How a budget is read out: its name and the unit of its value.
NAMES = {"generations": ("evaluation budget", "children"), "max_cost_usd": ("money budget", "USD"),
         "max_tokens": ("token budget", "tokens"), "max_llm_calls": ("LLM call budget", "calls"),
         "max_wall_time_s": ("wall-time budget", "s")}
CONFIRM_KEY = "confirm"  # the request's flag that a budget ending the run was confirmed
_SECTIONS = {"evolution": EvolutionConfig, "budget": BudgetConfig}


class ControlRefused(ConfigError):
    """A control request refused where it was made; the message says why, in one line."""


class NeedsConfirmation(ControlRefused):
    """A budget that would end the run at once, sent without ``confirm``."""


@dataclass(frozen=True)
class BudgetPlan:
    """A checked budget change: the values to set, what the run will do, and whether it ends
    the run at once."""

    values: dict[str, int | float]
    lines: tuple[str, ...]  # "evaluation budget 30 → 40 children"
    ends_run: bool

    @property
    def text(self) -> str:
        return "; ".join(self.lines) + (" (the run stops at once)" if self.ends_run else "")


def budget_value(key: str, value: Any) -> int | float:
    """One budget value as a number of the setting's type: a number or a numeric string,
    finite, an integer for a count; anything else is refused with the reason."""
    if key not in BUDGET_KEYS:
        raise ControlRefused(f"a budget request changes one of {', '.join(BUDGET_KEYS)}; "
                             f"got {key!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ControlRefused(f"{key} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ControlRefused(f"{key} must be a number, got {value!r}") from None
    else:
        number = float(value)
    if not math.isfinite(number):
        raise ControlRefused(f"{key} must be a finite number, got {value!r}")
    if key in INTEGER_KEYS:
        if number != int(number):
            raise ControlRefused(f"{key} must be a whole number, got {value!r}")
        return _in_range(key, int(number))
    return _in_range(key, number)


def _in_range(key: str, number: int | float) -> int | float:
    """The setting's own range (the config model's constraints)."""
    section = _SECTIONS[BUDGET_KEYS[key]]
    try:
        section.model_validate({key: number})
    except ValidationError as exc:
        reason = exc.errors()[0].get("msg", "not allowed").lower()
        raise ControlRefused(f"{key} {number:g}: {reason}") from None
    return number


def spent(store: Store) -> dict[str, float]:
    """What the run has used of each budget so far."""
    latest = store.events.latest(CandidateEvaluated)
    spend = store.contexts.spend()
    return {"generations": float(latest.evaluated if latest else 0),
            "max_cost_usd": spend.cost_usd, "max_tokens": float(spend.tokens),
            "max_llm_calls": float(spend.calls),
            "max_wall_time_s": store.events.active_seconds()}


def plan_budget(changes: dict[str, Any], config: dict[str, Any], used: dict[str, float],
                confirmed: bool = False) -> BudgetPlan:
    """Check a budget change against the run's settings (``config``, the stored dict) and what
    it has ``used``; raise :class:`ControlRefused` or :class:`NeedsConfirmation`."""
    values = {key: budget_value(key, value) for key, value in changes.items()
              if value is not None and value != ""}
    if not values:
        raise ControlRefused(f"give at least one budget value ({', '.join(BUDGET_KEYS)})")
    lines, ending = [], []
    for key, value in values.items():
        name, unit = NAMES[key]
        before = (config.get(BUDGET_KEYS[key]) or {}).get(key)
        was = "none" if before is None else f"{before:g}"
        lines.append(f"{name} {was} → {value:g} {unit}")
        if value <= used.get(key, 0.0):
            ending.append(f"{name} {value:g} {unit} is not above the {used[key]:g} already used")
    if ending and not confirmed:
        raise NeedsConfirmation("; ".join(ending) + ": the run would stop at once. Confirm to "
                                "apply it (the page asks; the API takes \"confirm\": true)")
    return BudgetPlan(values, tuple(lines), bool(ending))


def check_request(action: str, payload: dict[str, Any]) -> None:
    """The request's shape: a known action, and budget keys only with ``budget``."""
    if action not in ACTIONS:
        raise ControlRefused(f"unknown control action {action!r}; one of {', '.join(ACTIONS)}")
    if action != "budget" and payload:
        raise ControlRefused(f"{action} takes no values; budget values go with the action budget")
    if action == "budget":
        unknown = set(payload) - set(BUDGET_KEYS)
        if unknown or not payload:
            raise ControlRefused(f"a budget request changes one of {', '.join(BUDGET_KEYS)}; "
                                 f"got {sorted(payload) or 'nothing'}")
