"""Command line: ``cambrian run | resume | replay | status | best | guide | control | ui |
init | algorithms``, the
``trace`` group, ``report``, ``generalization`` and ``bench``. Each module registers its
commands on :data:`cambrian.cli.app.app`."""

from __future__ import annotations

from cambrian.cli import (  # noqa: F401, I001
    bench,
    config_group,
    config_translate,
    doctor,
    guide,
    inspect,
    judge,
    replay,
    run,
    show,
    trace,
    ui,
)

# (the imports register the commands, in this order)
from cambrian.cli.app import app

trace.register(app)
judge.register(app)
bench.register(app)


def main() -> None:
    app()
