"""Command line: ``cambrian run | resume | replay | status | best | guide | control | ui |
init | algorithms | doctor``, the ``trace`` and ``config`` groups, ``report``,
``generalization`` and ``bench``. Each module registers its commands on
:data:`cambrian.cli.app.app`; ``cli/commands.py`` lists them, and a command's modules are
imported only when it is invoked (``cambrian --help`` and ``--version`` import none)."""

from __future__ import annotations

from cambrian.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
