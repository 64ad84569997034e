"""Checking a model-written improvement-step score against the evaluator (Python programs).

A task that gives no score for its step (``mutation.improve_score``) has the model write
``score_<entry>``; a score that rates solutions in another order than the evaluator does makes
the loop climb the wrong way (or, for a hidden objective such as function_minimum's, towards
nothing the evaluator counts). Before such a child is evaluated, the search runs ``count + 1``
variants of it through the task's own evaluator (``search/step_score_check.py``): each builds
the solution as the program does, variant ``i > 0`` then changes it a little (one element of one
part: a number scaled or nudged, two entries of an order swapped; seeded by ``i``), reports the
model's score of it on the evaluator's stderr (``MARKER value``) and returns it instead of
improving it. ``judge`` compares the two orders on the variants the evaluator found valid.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass

from cambrian.core.python_ast import parse_python
from cambrian.lang.languages import as_language
from cambrian.mutate.step.python import BUILD_PREFIX, Scaffold
from cambrian.mutate.step.wiring import _normalised, definition_text, scaffold, with_definition

MARKER = "CAMBRIAN_STEP_SCORE"
_REPORTED = re.compile(rf"^{MARKER} (\S+)$", re.MULTILINE)
ERROR_MARKER = "CAMBRIAN_STEP_SCORE_ERROR"
_ERROR = re.compile(rf"^{ERROR_MARKER} (.*)$", re.MULTILINE)
PARTS_MARKER = "CAMBRIAN_STEP_PARTS"
_PARTS = re.compile(rf"^{PARTS_MARKER} (\[.*\])$", re.MULTILINE)
PERTURB = "_cambrian_perturb"
AGREES = "agrees with the evaluator"  # how an accepted verdict that compared pairs begins
KINDS = "_cambrian_kinds"
# What a part of a solution is made of, as the built variant reports it (which moves fit).
PART_KINDS = ("order", "integers", "numbers", "text", "other")

# Appended to each variant: a seeded small change of one part of the solution.
PERTURB_SOURCE = f'''

def {PERTURB}(parts, seed):
    """Variant `seed` of a solution (0: as built): one element of one part changed a little."""
    import copy
    import random
    if seed == 0:
        return parts
    rng = random.Random(seed)
    parts = copy.deepcopy(list(parts))
    amount = rng.choice((0.02, 0.05, 0.1, 0.2))
    shrink = seed % 2 == 1

    def number(value, scale):
        if shrink:
            return value * (1 - amount)
        return value + rng.choice((-1, 1)) * amount * max(abs(value), scale, 1e-3)

    def change(value):
        try:
            import numpy as np
        except ImportError:
            np = None
        if np is not None and isinstance(value, np.ndarray) and value.size \\
                and value.dtype.kind in "fiu":
            flat = value.reshape(-1).copy()
            if value.dtype.kind in "iu" and value.ndim == 1 and len(set(flat.tolist())) == len(flat) > 1:
                i, j = rng.sample(range(len(flat)), 2)
                flat[i], flat[j] = flat[j], flat[i]
            else:
                flat = flat.astype(float)
                k = rng.randrange(len(flat))
                flat[k] = number(float(flat[k]), float(np.std(flat)))
            return flat.reshape(value.shape)
        if isinstance(value, (list, tuple)) and value:
            items = list(value)
            if all(isinstance(v, int) and not isinstance(v, bool) for v in items) \\
                    and len(set(items)) == len(items) > 1:
                i, j = rng.sample(range(len(items)), 2)
                items[i], items[j] = items[j], items[i]
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
                k = rng.randrange(len(items))
                spread = (max(items) - min(items)) if len(items) > 1 else 0.0
                items[k] = number(float(items[k]), spread)
            else:
                k = rng.randrange(len(items))
                items[k] = change(items[k])
            return type(value)(items) if isinstance(value, tuple) else items
        if isinstance(value, str) and len(value) > 1:
            i, j = rng.sample(range(len(value)), 2)
            chars = list(value)
            chars[i], chars[j] = chars[j], chars[i]
            return "".join(chars)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return number(float(value), 0.0)
        return value

    k = (seed - 1) % len(parts)  # each part in turn (changed_part): every part changed by one
    parts[k] = change(parts[k])
    return parts


def {KINDS}(parts):
    """Each part as [kind, description]: its kind an order (a permutation of a range of
    integers), integers, numbers, text or other; its description what the move gets."""
    try:
        import numpy as np
    except ImportError:
        np = None

    def kind(value):
        if isinstance(value, bool):
            return "other"
        if isinstance(value, str):
            return "text"
        if isinstance(value, int):
            return "integers"
        if isinstance(value, float):
            return "numbers"
        if np is not None and isinstance(value, np.generic):
            return kind(value.item())
        if np is not None and isinstance(value, np.ndarray):
            if value.dtype.kind == "f":
                return "numbers"
            if value.dtype.kind in "iu":
                return ordering(value.reshape(-1).tolist()) if value.ndim == 1 else "integers"
            return "other"
        if isinstance(value, (list, tuple)) and value:
            items = list(value)
            if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
                return ordering(items)
            inner = {{kind(v) for v in items}}
            if inner <= {{"integers", "order"}}:
                return "integers"
            if inner <= {{"numbers", "integers", "order"}}:
                return "numbers"
            return "text" if inner == {{"text"}} else "other"
        return "other"

    def ordering(items):
        return "order" if len(items) > 1 and sorted(items) == list(
            range(min(items), min(items) + len(items))) else "integers"

    def described(value):
        if np is not None and isinstance(value, np.ndarray):
            return f"a numpy array of shape {{value.shape}}, dtype {{value.dtype}}"
        if isinstance(value, (list, tuple)):
            first = f" of {{described(value[0])}}, ..." if value else ""
            return f"a {{type(value).__name__}} of {{len(value)}} items{{first}}"
        if isinstance(value, str):
            return f"a string of {{len(value)}} characters"
        name = type(value).__name__
        return ("an " if name[:1] in "aeiou" else "a ") + name

    return [[kind(part), described(part)[:160]] for part in parts]
'''


def written_score(child: str, parent: str | None, language: str,
                  given_score: str | None = None, entry: str | None = None) -> Scaffold | None:
    """The child's step when its score is the model's and new (not the stub, not the task's,
    not the parent's); None otherwise or for another language than Python. ``entry``: the
    run's step entry (``wiring.scaffold``)."""
    if as_language(language).name != "python":
        return None
    wired = scaffold(child, language, given_score, entry)
    # The child's own step (not one the scaffold just wired in); its source may still differ
    # from the child's by the leftovers the scaffold drops, which never run.
    if wired is None or wired.score in wired.stubs or wired.score in wired.given \
            or definition_text(child, wired.step, as_language(language)) is None:
        return None
    text = definition_text(child, wired.score, as_language(language))
    before = definition_text(parent, wired.score, as_language(language)) if parent else None
    if text is None or (before is not None and _normalised(before) == _normalised(text)):
        return None
    return wired


def score_text(wired: Scaffold) -> str:
    """The score function as it runs, without comments or layout (what a check is remembered
    by: a score a child copied with another comment is not checked again)."""
    text = definition_text(wired.source, wired.score, as_language("python")) or ""
    try:
        return ast.unparse(parse_python(text))
    except SyntaxError:
        return _normalised(text)


def variant_sources(wired: Scaffold, count: int) -> list[str]:
    """The unperturbed variant and ``count`` perturbed ones of the child ``wired``."""
    inputs = ", ".join(wired.inputs)
    parts = ", ".join(wired.solution)
    packed = f"({parts},)"
    given = ", ".join((*wired.inputs, *wired.solution))
    returned = parts if len(wired.solution) > 1 else wired.solution[0]
    variants = []
    for seed in range(count + 1):
        entry = "\n".join([
            f"def {wired.entry}({wired.entry_parameters}):",
            f"    {parts}, = {BUILD_PREFIX}{wired.entry}({inputs}),"
            if len(wired.solution) == 1 else
            f"    {parts} = {BUILD_PREFIX}{wired.entry}({inputs})",
            "    import sys as _cambrian_sys",
            *([  # what the solution is made of (which moves fit it, what a move gets)
                "    try:",
                "        import json as _cambrian_json",
                f'        print("{PARTS_MARKER}", _cambrian_json.dumps({KINDS}({packed})), '
                "file=_cambrian_sys.stderr, flush=True)",
                "    except Exception:",
                "        pass"] if seed == 0 else []),
            f"    {parts}, = {PERTURB}({packed}, {seed})",
            "    try:",
            f"        _cambrian_value = float({wired.score}({given}))",
            "    except Exception as _cambrian_error:",
            "        _cambrian_value = float('nan')",
            f'        print("{ERROR_MARKER}", (type(_cambrian_error).__name__ + ": "',
            '              + str(_cambrian_error))[:300].replace("\\n", " "),',
            "              file=_cambrian_sys.stderr, flush=True)",
            f'    print("{MARKER}", _cambrian_value, file=_cambrian_sys.stderr, flush=True)',
            f"    return {returned}",
        ])
        source = with_definition(wired.source, wired.entry, entry, as_language("python"))
        variants.append(source + PERTURB_SOURCE)
    return variants


def reported_error(stderr: str) -> str:
    """What the score raised on the variant (its first call's), "" when it raised nothing."""
    found = _ERROR.search(stderr or "")
    return found.group(1).strip() if found else ""


def reported_score(stderr: str) -> float | None:
    """The score the variant reported: summed over every call of the entry (an evaluator may
    call it on several instances); None when it reported none (the evaluator ran the program
    where its stderr is not kept), NaN when the score raised or was not a finite number."""
    values = _REPORTED.findall(stderr or "")
    if not values:
        return None
    try:
        total = math.fsum(float(v) for v in values)
    except ValueError:
        return math.nan
    return total if math.isfinite(total) else math.nan


def changed_part(variant: int, parts: int) -> int:
    """The part perturbed variant ``variant`` (> 0) changed, as ``PERTURB_SOURCE`` picks it."""
    return (variant - 1) % parts


@dataclass(frozen=True)
class SolutionPart:
    kind: str  # one of PART_KINDS
    description: str  # "a numpy array of shape (26, 2), dtype float64"


def reported_parts(stderr: str) -> list[SolutionPart]:
    """The solution's parts as the built variant reported them (its first call's); empty
    when it reported none or something else."""
    found = _PARTS.search(stderr or "")
    try:
        parts = json.loads(found.group(1)) if found else []
        reported = [SolutionPart(str(kind), str(text)) for kind, text in parts]
    except (ValueError, TypeError):
        return []
    return reported if all(part.kind in PART_KINDS for part in reported) else []


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str
    ignores_solution: bool = False  # the evaluator rated every changed solution as the built one


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def judge(evaluator: list[float | None], model: list[float | None],
          every_part_changed: bool = True, errors: list[str] | None = None) -> Verdict:
    """Compare the evaluator's fitness (higher is better; None: invalid) with the model's score
    (None: not reported; NaN: it raised) over the variants (index 0: the solution as built).
    Refused: a score that raised on a valid solution, a pair the two order oppositely, pairs
    the evaluator tells apart that the score rates the same and none it orders alike, or an
    evaluator that scores every changed solution as the built one (function_minimum's scores
    the calls of f, not the point returned) while the score tells them apart
    (``every_part_changed``: only said when some variant changed each part), or a score that
    both tells apart solutions the evaluator rates the same and rates the same solutions it
    tells apart (it follows a part the evaluator ignores: a reported value, not the point)."""
    if all(m is None for m in model):
        return Verdict(True, "unchecked: the evaluator's output did not carry the score (it "
                             "may run the program in a process of its own)")
    valid = [e for e in evaluator if e is not None]
    # The evaluator rating the built solution and every changed one alike shows it blind to
    # the solution whatever the score did (function_minimum: five scores raised, so the step
    # was never found useless there and kept being drawn).
    evaluator_flat = (every_part_changed and len(valid) >= 3
                      and all(_close(e, valid[0]) for e in valid))
    for index, (e, m) in enumerate(zip(evaluator, model)):
        if e is not None and m is not None and math.isnan(m):
            raised = errors[index] if errors and index < len(errors) else ""
            return Verdict(False, f"the score raised or returned no number on "
                                  f"{variant_name(index)}, a valid solution"
                                  + (f" ({raised})" if raised else ""),
                           ignores_solution=evaluator_flat)
    concordant, flat, unseen = 0, 0, 0
    for i in range(len(evaluator)):
        for j in range(i + 1, len(evaluator)):
            e_i, e_j, m_i, m_j = evaluator[i], evaluator[j], model[i], model[j]
            if e_i is None or e_j is None or m_i is None or m_j is None:
                continue
            if _close(e_i, e_j):
                unseen += not _close(m_i, m_j)
                continue
            if _close(m_i, m_j):
                flat += 1
            elif (m_i > m_j) == (e_i > e_j):
                concordant += 1
            else:
                better, worse = (i, j) if e_i > e_j else (j, i)
                return Verdict(False, (
                    f"the score orders solutions against the evaluator: the evaluator rates "
                    f"{variant_name(better)} above {variant_name(worse)}, the score gives "
                    f"{model[better]:.6g} < {model[worse]:.6g}"))
    if flat and unseen:
        return Verdict(False, "the score measures something else than the evaluator: it "
                              f"changes where the evaluator's score does not ({unseen} pairs) "
                              f"and stays the same where the evaluator's changes ({flat} pairs)")
    if flat and not concordant:
        return Verdict(False, "the score rates solutions the evaluator tells apart the same "
                              f"({flat} pairs)")
    if not concordant and unseen >= 2 and every_part_changed:
        return Verdict(False, "the evaluator scores every changed solution as the one built: "
                              "its score does not depend on the solution the program returns, "
                              "so an improvement step cannot raise it", ignores_solution=True)
    if not concordant:
        return Verdict(True, "unchecked: no two valid variants the evaluator tells apart "
                             "(every perturbed solution was invalid or scored the same)")
    return Verdict(True, f"{AGREES} on {concordant} pairs")


def variant_name(index: int) -> str:
    return "the solution as built" if index == 0 else f"perturbed solution {index}"
