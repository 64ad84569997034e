"""requirements/constraints.txt pins what ./scripts/setup.sh installs: every dependency
pyproject.toml names (core, each extra, dev) has an exact pin there that satisfies
pyproject's range, and the environment the tests run in has that version."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("constraints_script",
                                               ROOT / "scripts" / "constraints.py")
assert _spec is not None and _spec.loader is not None
constraints_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(constraints_script)


def declared() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"core": project["dependencies"], **project["optional-dependencies"]}
    return {group: [Requirement(text) for text in texts
                    if canonicalize_name(Requirement(text).name) != "cambrian"]
            for group, texts in groups.items()}


def pins() -> dict[str, str]:
    return constraints_script.parse((ROOT / "requirements" / "constraints.txt").read_text())


def test_every_dependency_of_pyproject_is_pinned_within_its_range():
    pinned = pins()
    for group, requirements in declared().items():
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            assert name in pinned, (f"{requirement.name} ({group}) has no pin in "
                                    "requirements/constraints.txt: run "
                                    ".venv/bin/python scripts/constraints.py")
            assert requirement.specifier.contains(pinned[name], prereleases=True), (
                f"{name}=={pinned[name]} is outside pyproject's {requirement}")


def test_the_environment_has_the_pinned_versions():
    """What the tests run with is what a fresh machine gets (setup.sh installs with -c)."""
    pinned = pins()
    for requirements in declared().values():
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            installed = Version(metadata.version(requirement.name)).public
            assert installed == pinned[name], (
                f"{name} {installed} is installed but {pinned[name]} is pinned: rerun "
                ".venv/bin/python scripts/constraints.py (or ./scripts/setup.sh)")


def test_setup_installs_with_the_constraints():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert '-c "$CONSTRAINTS" -e ".[dev]"' in setup
    assert 'CONSTRAINTS="$ROOT/requirements/constraints.txt"' in setup
