"""Read a trace from wherever it is: a Cambrian run, an export, ShinkaEvolve or OpenEvolve."""

from __future__ import annotations

from pathlib import Path

from cambrian.trace.importers import detect_format, read_any
from cambrian.trace.model import Trace


def load_trace(path: str | Path) -> Trace:
    """Read a trace from any supported location, detected by file markers:

    - a Cambrian run directory (``run.sqlite``) or the ``run.sqlite`` file itself;
    - an exported EvoTrace folder (``meta.json`` + ``candidates.jsonl``);
    - a ShinkaEvolve results folder (``programs.sqlite``) or that file;
    - an OpenEvolve checkpoint (``checkpoint_N/`` with ``programs/*.json``), or an output folder
      holding ``checkpoint_*`` directories (the latest one is read).
    """
    target = Path(path)
    return read_any(target, detect_format(target))
