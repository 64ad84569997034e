"""Figures over edit labels (seed 001 §5.1, B.4).

- **prevalence**: share of labelled edits that carry a label (edits are multi-label, so shares
  sum to more than one);
- **helpfulness**: odds ratio that an edit improves on its parent when it carries the label,
  against when it does not, with the Haldane-Anscombe correction (0.5 added to every cell of
  the 2x2 table, so a label that never or always improves still gets a finite ratio) and a 95%
  Woolf interval on the log scale;
- **agreement** of the judge with reference labels (a human re-annotation): per-label
  precision, recall, F1 and Cohen's kappa, their macro mean, micro-F1, mean Jaccard similarity
  of the label sets, and exact-match accuracy.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cambrian.trace.taxonomy import LABELS

HALDANE = 0.5
Z_95 = 1.959964


def prevalence(labels: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Share of labelled edits carrying each of the nine labels (absent labels get 0)."""
    labelled = [set(v) for v in labels.values() if v]
    if not labelled:
        return {}
    return {label: sum(label in s for s in labelled) / len(labelled) for label in LABELS}


@dataclass(frozen=True)
class Helpfulness:
    label: str
    improved_with: int  # a: carries the label and improved
    other_with: int  # b: carries the label, did not improve
    improved_without: int  # c
    other_without: int  # d
    odds_ratio: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def odds_ratio(a: int, b: int, c: int, d: int) -> tuple[float, float, float]:
    """(odds ratio, 95% low, 95% high) of the table [[a, b], [c, d]], Haldane-corrected."""
    a_, b_, c_, d_ = (x + HALDANE for x in (a, b, c, d))
    log_or = math.log((a_ * d_) / (b_ * c_))
    se = math.sqrt(1 / a_ + 1 / b_ + 1 / c_ + 1 / d_)
    return math.exp(log_or), math.exp(log_or - Z_95 * se), math.exp(log_or + Z_95 * se)


def helpfulness(labels: Mapping[str, Sequence[str]],
                improved: Mapping[str, bool]) -> list[Helpfulness]:
    """One row per label, over the labelled edits whose outcome is known."""
    edits = [(set(v), improved[k]) for k, v in labels.items() if v and k in improved]
    rows = []
    for label in LABELS:
        a = sum(1 for s, up in edits if label in s and up)
        b = sum(1 for s, up in edits if label in s and not up)
        c = sum(1 for s, up in edits if label not in s and up)
        d = sum(1 for s, up in edits if label not in s and not up)
        ratio, low, high = odds_ratio(a, b, c, d)
        rows.append(Helpfulness(label, a, b, c, d, ratio, low, high))
    return rows


# ---------------------------------------------------------------------------- agreement


@dataclass(frozen=True)
class LabelAgreement:
    label: str
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    precision: float | None  # None when the judge never gave the label
    recall: float | None  # None when the reference never has the label
    f1: float | None
    kappa: float | None  # None when chance agreement is total (both raters constant)


@dataclass(frozen=True)
class AgreementReport:
    edits: int  # edits labelled by both
    per_label: list[LabelAgreement]
    macro_kappa: float | None
    micro_precision: float | None
    micro_recall: float | None
    micro_f1: float | None
    mean_jaccard: float | None
    exact_match: float | None
    missing_from_judge: list[str]  # reference edits the judge has no labels for

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None or precision + recall == 0:
        return None if precision is None or recall is None else 0.0
    return 2 * precision * recall / (precision + recall)


def cohen_kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Cohen's kappa of two binary raters (reference: tp+fn positives; judge: tp+fp)."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    observed = (tp + tn) / n
    ref_yes, judge_yes = (tp + fn) / n, (tp + fp) / n
    chance = ref_yes * judge_yes + (1 - ref_yes) * (1 - judge_yes)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


def agreement(reference: Mapping[str, Sequence[str]],
              judged: Mapping[str, Sequence[str]]) -> AgreementReport:
    """Agreement on the edits both sides labelled; ``reference`` is treated as the truth."""
    common = [k for k in reference if k in judged]
    pairs = [(set(reference[k]), set(judged[k])) for k in common]
    per_label = []
    totals = [0, 0, 0]
    for label in LABELS:
        tp = sum(1 for r, j in pairs if label in r and label in j)
        fp = sum(1 for r, j in pairs if label not in r and label in j)
        fn = sum(1 for r, j in pairs if label in r and label not in j)
        tn = len(pairs) - tp - fp - fn
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        per_label.append(LabelAgreement(label, tp, fp, fn, tn, precision, recall,
                                        _f1(precision, recall), cohen_kappa(tp, fp, fn, tn)))
        totals = [totals[0] + tp, totals[1] + fp, totals[2] + fn]
    kappas = [row.kappa for row in per_label if row.kappa is not None]
    tp, fp, fn = totals
    micro_p, micro_r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    jaccards = [len(r & j) / len(r | j) if r | j else 1.0 for r, j in pairs]
    return AgreementReport(
        edits=len(pairs), per_label=per_label,
        macro_kappa=sum(kappas) / len(kappas) if kappas else None,
        micro_precision=micro_p, micro_recall=micro_r, micro_f1=_f1(micro_p, micro_r),
        mean_jaccard=sum(jaccards) / len(jaccards) if jaccards else None,
        exact_match=_ratio(sum(1 for r, j in pairs if r == j), len(pairs)),
        missing_from_judge=[k for k in reference if k not in judged],
    )


_ID_KEYS = ("child_id", "edit_id", "id")


def read_reference_labels(path: str | Path) -> dict[str, tuple[str, ...]]:
    """A labelled JSONL file: one object per edit with the child's id (``child_id``, or
    ``edit_id`` / ``id``) and ``labels`` (a list of the nine label names; "Bug fix" style
    spellings are accepted). Raises ValueError naming the line of a malformed row."""
    result: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
        key = next((row[k] for k in _ID_KEYS if isinstance(row, dict) and k in row), None)
        labels = row.get("labels") if isinstance(row, dict) else None
        if key is None or not isinstance(labels, list):
            raise ValueError(f"{path}:{number}: needs an edit id ({', '.join(_ID_KEYS)}) and a "
                             "list of labels")
        names = [re.sub(r"[\s\-]+", "_", str(v).strip().lower()) for v in labels]
        unknown = [n for n in names if n not in LABELS]
        if unknown:
            raise ValueError(f"{path}:{number}: unknown label(s) {', '.join(unknown)}; "
                             f"expected some of {', '.join(LABELS)}")
        result[str(key)] = tuple(dict.fromkeys(names))
    return result
