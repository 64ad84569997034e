"""Tunable numeric knobs of a program (seed 001 §5.4, B.9): where its numeric literals are, the
range rules for a knob's search interval, and a deterministic finder that needs no LLM.

A literal *site* is a numeric literal in code: Python literals come from ``tokenize`` (so text in
strings and comments never counts), C-family literals from a regex over the source with
comments and strings blanked out (``#define`` values do count). A knob must name a literal whose
text occurs exactly once among the program's sites, so replacing it is unambiguous (B.9).
"""

from __future__ import annotations

import io
import math
import re
import tokenize
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from cambrian.lang.code_mask import BRACE_STYLES, mask_code
from cambrian.lang.languages import Language, as_language
from cambrian.lang.lines import NUMBER
from cambrian.task.blocks import BlockError, parse_regions

MAX_KNOBS = 8  # B.9: BO budget scales poorly past this

Scale = Literal["linear", "log"]
Kind = Literal["int", "float"]


@dataclass(frozen=True)
class Knob:
    name: str
    source_literal: str  # byte-identical text of the literal in the program
    context_line: str  # the line it sits on (stripped)
    default: float
    low: float
    high: float
    scale: Scale = "linear"
    kind: Kind = "float"
    rationale: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LiteralSite:
    text: str
    start: int  # offsets into the source
    end: int
    line: int  # 0-based
    column: int  # 0-based offset of the literal in its line
    line_text: str
    name_hint: str  # assigned / compared identifier nearest to the left on the line, or ""
    in_subscript: bool  # written as an index or a shape: a[3], x[:, 2]
    mutable: bool  # inside an EVOLVE-BLOCK (always True when the program has no markers)


# ---------------------------------------------------------------------------- literal sites

_ASSIGNED = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(?::[^=]*)?(?<![=!<>])=(?!=)[^=]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NOT_NAMES = frozenset({"if", "elif", "while", "for", "in", "and", "or", "not", "return", "else",
                        "const", "int", "double", "float", "long", "auto", "static", "constexpr",
                        "unsigned", "size_t", "range", "std", "max", "min", "abs", "def",
                        "lambda", "is", "define"})


def _name_hint(before: str) -> str:
    assigned = _ASSIGNED.search(before)
    if assigned and assigned.group(1) not in _NOT_NAMES:
        return assigned.group(1)
    names = [n for n in _IDENTIFIER.findall(before) if n not in _NOT_NAMES]
    return names[-1] if names else ""


def _python_sites(source: str) -> list[tuple[str, int, int, bool]]:
    line_starts = [0]
    for line in source.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                                    tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError):
        return []
    sites = []
    for index, token in enumerate(tokens):
        if token.type != tokenize.NUMBER:
            continue
        text = token.string
        if text[-1] in "jJ" or text[:2].lower() in ("0x", "0o", "0b"):
            continue
        before = tokens[index - 1].string if index else ""
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        start = line_starts[token.start[0] - 1] + token.start[1]
        sites.append((text, start, start + len(text), before == "[" or after == "]"))
    return sites


def _brace_sites(source: str, language: Language) -> list[tuple[str, int, int, bool]]:
    # Blank comments and strings but keep #define values visible: "#define" -> " define".
    visible = re.sub(r"(?m)^(\s*)#(\s*define\b)", r"\1 \2", source)
    masked = mask_code(visible, language)
    sites = []
    for match in NUMBER.finditer(masked):
        text = match.group(0)
        start, end = match.span()
        if text[:2].lower() in ("0x", "0b") or "'" in masked[max(0, start - 1):end + 1]:
            continue  # hex/binary, or part of a 1'000'000 digit-separated literal
        if len(text) > 1 and text[0] == "0" and text[1].isdigit():
            continue  # C octal
        left = masked[:start].rstrip()[-1:]
        right = masked[end:].lstrip()[:1]
        sites.append((text, start, end, left == "[" or right == "]"))
    return sites


def literal_sites(source: str, language: Language | str) -> list[LiteralSite]:
    lang = as_language(language)
    raw = _python_sites(source) if lang.masking == "python" else (
        _brace_sites(source, lang) if lang.masking in BRACE_STYLES else [])
    try:
        regions = parse_regions(source)
    except BlockError:
        regions = None
    lines = source.split("\n")
    sites = []
    for text, start, end, in_subscript in raw:
        line = source.count("\n", 0, start)
        line_start = source.rfind("\n", 0, start) + 1
        sites.append(LiteralSite(
            text=text, start=start, end=end, line=line, column=start - line_start,
            line_text=lines[line],
            name_hint=_name_hint(source[line_start:start]), in_subscript=in_subscript,
            mutable=regions.is_mutable(line) if regions is not None else True,
        ))
    return sites


_SETTING_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_DECLARATION_TAIL = re.compile(r"^[fFlLuU]*\s*;?\s*(?://.*|#.*)?$")


def is_named_setting(site: LiteralSite) -> bool:
    """The literal is the whole value of an upper-case constant (``RADIUS_SCALE = 1.0``,
    ``const double DISTANCE_POWER = 1.0;``, ``#define ROUNDS 2``). The program declares such a
    value a setting, so it is tunable even when it is 0, 1 or 2, values that written inline are
    almost always identities or index bounds."""
    if not _SETTING_NAME.match(site.name_hint):
        return False
    before = site.line_text[: site.column].rstrip()
    before = before[:-1].rstrip() if before.endswith("-") else before
    after = site.line_text[site.column + len(site.text):]
    return ((before.endswith("=") or before.endswith(site.name_hint))
            and bool(_DECLARATION_TAIL.match(after)))


def literal_value(text: str) -> tuple[float, Kind]:
    """Value and kind of a literal's text (``1_000``, ``1e-6``, ``0.5f``, ``100ULL``)."""
    digits = text.replace("_", "").rstrip("fFlLuU")
    if any(c in digits for c in ".eE"):
        return float(digits), "float"
    return float(int(digits)), "int"


# ---------------------------------------------------------------------------- range rules

# Parameter families of B.9's range guidelines, recognised from the words of the knob's name:
# a word matches a key when it starts with the key ("cooling" -> "cool"), or equals it for the
# keys marked "=" (so "n" does not match "noise"). The first family that matches wins.
_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cooling", ("cool", "decay", "anneal", "gamma", "momentum")),
    ("probability", ("prob", "accept", "frac", "=ratio", "percent", "=pct", "=p")),
    ("tolerance", ("tol", "eps", "thresh")),
    ("step", ("=lr", "learn", "=step", "stepsize", "sigma", "scale", "amp", "temp", "=t0",
              "noise", "perturb", "radius", "delta", "jitter", "mutation")),
    ("weight", ("weight", "penalty", "reward", "bonus", "coef", "factor", "lambda", "alpha",
                "beta")),
    ("iterations", ("iter", "epoch", "budget", "=round", "=rounds", "=steps", "generation",
                    "=gens")),
    ("count", ("restart", "pop", "sample", "count", "trial", "=num", "=n", "=size", "batch",
               "candidates", "attempt")),
)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in re.split(r"[_\W]+", spaced.lower()) if w]


def family_of(name: str) -> str:
    words = _words(name)
    for family, keys in _FAMILIES:
        for key in keys:
            exact = key.startswith("=")
            stem = key.lstrip("=")
            if any(w == stem if exact else w.startswith(stem) for w in words):
                return family
    return ""


def default_range(value: float, kind: Kind, name: str) -> tuple[float, float, Scale]:
    """(low, high, scale) by parameter family (B.9 range guidelines); ``value`` is positive."""
    family = family_of(name)
    if family == "cooling" and 0 < value < 1:
        return min(0.5, value), 0.99999, "linear"
    if family == "probability" and 0 <= value <= 1:
        return 0.0, 1.0, "linear"
    if family == "tolerance":
        return value / 1000, value * 1000, "log"
    if kind == "float" and family in ("step", "weight"):
        return value / 100, value * 100, "log"
    if kind == "int" and family == "iterations":
        return max(1.0, value / 5), value * 5, "log"
    if kind == "int" and (family == "count" or value > 20):
        return max(1.0, value / 10), value * 10, "log"
    if kind == "int":
        return 1.0, max(value * 5, 20.0), "linear"
    if value < 1 or value > 100:
        return value / 10, value * 10, "log"
    return value / 4, value * 4, "linear"  # spans more than one order of magnitude


def enforce_rules(knob: Knob) -> Knob:
    """B.9 hard rules: the default lies inside [low, high]; log scale needs low > 0 and is
    required once high/low >= 100; integer bounds are whole numbers with low >= 1."""
    low, high = min(knob.low, knob.default), max(knob.high, knob.default)
    scale = knob.scale
    if knob.kind == "int":
        low, high = max(1.0, math.floor(low)), float(math.ceil(high))
        low = min(low, knob.default)
    if low <= 0 and scale == "log":
        scale = "linear"
    if low > 0 and high / low >= 100:
        scale = "log"
    return replace(knob, low=float(low), high=float(high), scale=scale)


# ---------------------------------------------------------------------------- fallback finder

_IDENTITY_VALUES = (0.0, 1.0, 2.0)
_PROBLEM_SIZE = re.compile(r"^(n|N|d|D|dim|ndim)$|(^|_)(dim|dims|shape)(_|$)")


def unique_sites(sites: list[LiteralSite]) -> dict[str, LiteralSite]:
    """Sites whose literal text occurs exactly once among all sites, by text."""
    counts: dict[str, int] = {}
    for site in sites:
        counts[site.text] = counts.get(site.text, 0) + 1
    return {s.text: s for s in sites if counts[s.text] == 1}


def _knob_name(site: LiteralSite, taken: set[str]) -> str:
    base = re.sub(r"\W+", "_", site.name_hint).strip("_").lower() or f"knob_line{site.line + 1}"
    name, suffix = base, 2
    while name in taken:
        name, suffix = f"{base}_{suffix}", suffix + 1
    taken.add(name)
    return name


def _tunable_value(site: LiteralSite) -> bool:
    value = literal_value(site.text)[0]
    # A named 0 stays out too: its search interval would be scaled from zero.
    return value not in _IDENTITY_VALUES or (value != 0 and is_named_setting(site))


def find_knobs(source: str, language: Language | str, *, limit: int = MAX_KNOBS) -> list[Knob]:
    """Knobs chosen without an LLM, after the B.9 rules: unambiguous literals inside the mutable
    region, not 0, 1 or 2 (identities, index bounds, halves and squares) unless a named
    upper-case constant holds the 1 or 2, not written as an index or shape, not assigned to a
    problem-size name (n, dim, ...). Literals of a known parameter family come first, then
    floats, then integers; at most ``limit``."""
    candidates = [
        site for site in unique_sites(literal_sites(source, language)).values()
        if site.mutable and not site.in_subscript
        and _tunable_value(site)
        and not _PROBLEM_SIZE.search(site.name_hint)
    ]

    def priority(site: LiteralSite) -> tuple[int, int, int]:
        kind = literal_value(site.text)[1]
        return (0 if family_of(site.name_hint) else 1, 0 if kind == "float" else 1, site.start)

    chosen = sorted(sorted(candidates, key=priority)[:limit], key=lambda s: s.start)
    taken: set[str] = set()
    knobs = []
    for site in chosen:
        value, kind = literal_value(site.text)
        name = _knob_name(site, taken)
        low, high, scale = default_range(value, kind, site.name_hint or name)
        knobs.append(enforce_rules(Knob(
            name=name, source_literal=site.text, context_line=site.line_text.strip(),
            default=value, low=low, high=high, scale=scale, kind=kind,
            rationale=f"literal {site.text} on line {site.line + 1}"
                      + (f" ({family_of(site.name_hint)} family)" if family_of(site.name_hint)
                         else ""),
        )))
    return knobs


def locate(knob: Knob, sites: list[LiteralSite]) -> LiteralSite | str:
    """The site a knob names, or why it names none: the literal must occur exactly once among
    the code literals, and its line must match ``context_line`` (B.9 validation)."""
    matching = [s for s in sites if s.text == knob.source_literal]
    if not matching:
        return f"literal {knob.source_literal!r} does not occur in the code"
    if len(matching) > 1:
        return f"literal {knob.source_literal!r} occurs {len(matching)} times (ambiguous)"
    site = matching[0]
    context = knob.context_line.strip()
    if context and context not in site.line_text and site.line_text.strip() not in context:
        return f"literal {knob.source_literal!r} is not on the line {context!r}"
    return site
