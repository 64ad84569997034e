"""The command table (``cli/commands.py``) that ``cambrian --help`` lists without importing
the commands: it must name every command the modules register, with its help's first
sentence, and ``--help``/``--version`` must import no command module."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import typer.main

import cambrian.cli
from cambrian.cli import app
from cambrian.cli.commands import BY_NAME, COMMANDS, one_line


def every_cli_module() -> list[str]:
    return [f"cambrian.cli.{m.name}" for m in pkgutil.iter_modules(cambrian.cli.__path__)
            if m.name != "__main__"]


def test_the_table_matches_the_registered_commands():
    for name in every_cli_module():  # a command module the table forgot registers here too
        importlib.import_module(name)
    group = typer.main.get_command(app)
    registered = dict(group.commands.items())  # every table entry loaded, and any other
    assert sorted(registered) == sorted(BY_NAME)
    for entry in COMMANDS:
        assert entry.help == one_line(registered[entry.name].help), entry.name
        defined_in = getattr(registered[entry.name].callback, "__module__", None)
        assert defined_in is None or defined_in in entry.modules, entry.name
    # A module that registers commands at import (on the application or the config group)
    # or when its register(app) is called must be in the table, or its commands never load.
    registering = re.compile(r"^@(app|config_app)\.command|app\.add_typer|^def register\(app",
                             re.MULTILINE)
    listed = {m for entry in COMMANDS for m in entry.modules}
    for name in every_cli_module():
        source = Path(importlib.import_module(name).__file__).read_text()
        assert not registering.search(source) or name in listed, \
            f"{name} registers commands: add it to cli/commands.py"


PROBE = """
import json, sys
sys.argv = ["cambrian", *sys.argv[1:]]
from cambrian.cli import main
try:
    main()
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.startswith("cambrian."))
print("MODULES", json.dumps(loaded))
"""


def loaded_by(*argv: str) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          timeout=120, check=True, env={"COLUMNS": "200", "PATH": "/usr/bin"})
    head, _, modules = done.stdout.rpartition("MODULES ")
    return json.loads(modules), head


def test_help_and_version_import_no_command_module():
    for argv in (["--version"], ["--help"], []):
        modules, shown = loaded_by(*argv)
        commands = {m for entry in COMMANDS for m in entry.modules}
        assert not commands & set(modules), argv
        assert not any(m.startswith(("cambrian.api", "cambrian.search", "cambrian.config"))
                       for m in modules), argv
        if argv != ["--version"]:
            assert all(entry.name in shown for entry in COMMANDS)
            assert "Start a new evolution run on TASK_DIR." in shown
    modules, shown = loaded_by("algorithms")
    assert "cambrian.cli.inspect" in modules and "cambrian.cli.run" not in modules
    assert "cambrian" in loaded_by("--version")[1]
