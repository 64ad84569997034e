"""Every package Cambrian's code imports is one pyproject.toml declares: in the core, or in the
extra whose feature imports it. (A package that only arrives as another's dependency can
vanish from a clean install: typer 0.29 stopped bringing click, which cli/app.py imports.)
tests/test_packaging.py checks the same in a clean virtualenv for the paths a run takes."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cambrian"
# Helper modules put on an evaluation's path for a peer's evaluator, not Cambrian's code.
NOT_CAMBRIANS = ("evaluate/peer_path",)
# Imported only where the feature says so, with its own one-line error (api/inline.py's
# to_dataframe: "needs pandas (pip install pandas)").
OPTIONAL_OUTSIDE_EXTRAS = {"pandas"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """distribution -> "core" or the extra declaring it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: dict[str, str] = {}
    for group, texts in [("core", project["dependencies"]),
                         *project["optional-dependencies"].items()]:
        for text in texts:
            name = canonical(re.match(r"[A-Za-z0-9._-]+", text).group(0))
            found.setdefault(name, group)
    return found


def imported_packages() -> dict[str, set[str]]:
    """Top-level third-party module -> the files importing it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(NOT_CAMBRIANS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "cambrian" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(relative)
    return found


def test_every_imported_package_is_declared():
    distributions = metadata.packages_distributions()
    groups = declared()
    undeclared = []
    for module, files in sorted(imported_packages().items()):
        if module in OPTIONAL_OUTSIDE_EXTRAS:
            continue
        names = [canonical(d) for d in distributions.get(module, [])]
        if not any(name in groups for name in names):
            undeclared.append(f"{module} ({', '.join(names) or 'not installed'}; imported by "
                              f"{', '.join(sorted(files)[:3])})")
    assert not undeclared, ("imported but not declared in pyproject.toml's dependencies or "
                            f"an extra: {undeclared}")
