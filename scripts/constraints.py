"""Writes requirements/constraints.txt: the exact version of every package that
`pip install -e '.[dev]'` brings, as installed in this environment (the one the tests passed
in), so that ./scripts/setup.sh on a fresh machine installs the same versions.

Walks the requirements of cambrian[dev] (its extras included, markers evaluated for this
machine) through the installed distributions' metadata; Cambrian itself is not pinned.

    .venv/bin/python scripts/constraints.py            # rewrite the file
    .venv/bin/python scripts/constraints.py --check    # exit 1 when the file would change
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "requirements" / "constraints.txt"
HEADER = """\
# The versions ./scripts/setup.sh installs (pip install -c requirements/constraints.txt):
# every package cambrian[dev] brings, as the tests last passed with them.
# Regenerate after changing a dependency: .venv/bin/python scripts/constraints.py
# (tests/test_constraints.py checks that every dependency of pyproject.toml is pinned here).
"""


def public_version(version: str) -> str:
    """A version without its local label (torch 2.13.0+cpu: the CPU build of 2.13.0, which
    pyproject.toml pins and this machine's wheel folder offers)."""
    return Version(version).public


def requirements_of(name: str, extras: set[str]) -> list[Requirement]:
    found = []
    for text in metadata.requires(name) or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None:
            found.append(requirement)
            continue
        if any(marker.evaluate({"extra": extra}) for extra in extras or {""}):
            found.append(requirement)
    return found


def closure(root: str = "cambrian", extras: tuple[str, ...] = ("dev",)) -> dict[str, str]:
    """name -> installed version of everything ``root[extras]`` needs here (root excluded)."""
    pins: dict[str, str] = {}
    wanted: list[tuple[str, set[str]]] = [(root, set(extras))]
    seen: set[tuple[str, frozenset[str]]] = set()
    while wanted:
        name, asked = wanted.pop()
        key = (canonicalize_name(name), frozenset(asked))
        if key in seen:
            continue
        seen.add(key)
        for requirement in requirements_of(name, asked):
            child = canonicalize_name(requirement.name)
            if child != canonicalize_name(root):
                try:
                    pins[child] = metadata.version(requirement.name)
                except metadata.PackageNotFoundError:
                    sys.exit(f"{requirement.name} (needed by {name}) is not installed here: "
                             "run ./scripts/setup.sh first")
            wanted.append((requirement.name, set(requirement.extras)))
    return pins


def render(pins: dict[str, str]) -> str:
    lines = [f"{name}=={public_version(version)}" for name, version in sorted(pins.items())]
    return HEADER + "\n".join(lines) + "\n"


def parse(text: str) -> dict[str, str]:
    """name -> pinned version of a constraints file."""
    pins = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
        if match:
            pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the file differs from this environment")
    args = parser.parse_args()
    text = render(closure())
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} differs from this environment; rerun scripts/constraints.py")
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(parse(text))} pins)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
