"""Trace science: the unified EvoTrace model, export/import, and the analyses of seed 001.

Heavier analyses live in their own modules and are imported where used: the edit taxonomy
(:mod:`~cambrian.trace.taxonomy_judge`, :mod:`~cambrian.trace.taxonomy_stats`), the tuning gap
(:func:`cambrian.trace.tuning.tune_program`) and replay stability (:mod:`~cambrian.trace.replay`).
"""

from __future__ import annotations

from cambrian.trace.cycling import (
    CyclingReport,
    analyse_cycling,
    lineage_deletions,
    reintroduction_share,
)
from cambrian.trace.deletion import deleted_lines_in_lineage, deletion_history_text
from cambrian.trace.export import export_trace
from cambrian.trace.importers.evotrace import read_exported_trace as import_trace
from cambrian.trace.loading import load_trace
from cambrian.trace.model import Trace
from cambrian.trace.static import StaticReport, analyse_static
from cambrian.trace.store_lineage import StoreLineage
from cambrian.trace.to_store import import_to_store

__all__ = [
    "CyclingReport",
    "StaticReport",
    "StoreLineage",
    "Trace",
    "analyse_cycling",
    "analyse_static",
    "deleted_lines_in_lineage",
    "deletion_history_text",
    "export_trace",
    "import_to_store",
    "import_trace",
    "lineage_deletions",
    "load_trace",
    "reintroduction_share",
]
