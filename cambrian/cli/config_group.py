"""`cambrian config ...`: the command group for working with configuration files. Its commands
live in their own modules and register on `config_app`."""

from __future__ import annotations

import typer

from cambrian.cli.app import app

config_app = typer.Typer(no_args_is_help=True,
                         help="Inspect and translate configuration files.")
app.add_typer(config_app, name="config")
