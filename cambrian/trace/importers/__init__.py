"""Readers that turn a stored run, whatever produced it, into a
:class:`~cambrian.trace.model.Trace`.

Each reader is chosen by the files it leaves behind (``detect_format``), in the spirit of the
backend markers EvoTrace's adapters use (seed 001 §3.2).
"""

from __future__ import annotations

from pathlib import Path

from cambrian.trace.model import Trace

CAMBRIAN = "cambrian"
EVOTRACE = "evotrace"
SHINKAEVOLVE = "shinkaevolve"
OPENEVOLVE = "openevolve"


class UnknownTraceFormat(ValueError):
    """The path holds none of the supported trace layouts."""


def detect_format(path: Path) -> str:
    path = Path(path)
    if path.is_file():
        if path.name == "programs.sqlite":
            return SHINKAEVOLVE
        if path.suffix == ".sqlite":
            return CAMBRIAN
        raise UnknownTraceFormat(f"{path} is not a run store (run.sqlite) or programs.sqlite")
    if not path.is_dir():
        raise FileNotFoundError(f"no such file or directory: {path}")
    if (path / "run.sqlite").exists():
        return CAMBRIAN
    if (path / "meta.json").exists() and (path / "candidates.jsonl").exists():
        return EVOTRACE
    if (path / "programs.sqlite").exists():
        return SHINKAEVOLVE
    from cambrian.trace.importers.openevolve import find_checkpoint

    if find_checkpoint(path) is not None:
        return OPENEVOLVE
    raise UnknownTraceFormat(
        f"{path} holds no known trace: expected run.sqlite (Cambrian), meta.json + "
        "candidates.jsonl (exported trace), programs.sqlite (ShinkaEvolve) or "
        "checkpoint_N/programs/*.json (OpenEvolve)"
    )


def read_any(path: Path, fmt: str) -> Trace:
    if fmt == CAMBRIAN:
        from cambrian.trace.importers.cambrian_store import read_cambrian_run

        return read_cambrian_run(path)
    if fmt == EVOTRACE:
        from cambrian.trace.importers.evotrace import read_exported_trace

        return read_exported_trace(path)
    if fmt == SHINKAEVOLVE:
        from cambrian.trace.importers.shinka import read_shinka_results

        return read_shinka_results(path)
    if fmt == OPENEVOLVE:
        from cambrian.trace.importers.openevolve import read_openevolve_checkpoint

        return read_openevolve_checkpoint(path)
    raise UnknownTraceFormat(f"unknown trace format {fmt!r}")
