"""Weights & Biases: one W&B run per Cambrian run (``mode: offline`` writes it under the run
folder for a later ``wandb sync``); resumed sessions continue it by its id."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cambrian.config.tracking import WandbConfig
from cambrian.core.extras import require_extra


class WandbSink:
    name = "wandb"

    def __init__(self, settings: WandbConfig, project: str, run_name: str, run_dir: Path,
                 run_id: str | None) -> None:
        require_extra("tracking", "tracking.wandb (export to Weights & Biases)", ("wandb",))
        self.settings = settings
        self.project = settings.project or project
        self.run_name = settings.run_name or run_name
        self.dir = Path(settings.dir) if settings.dir else run_dir
        self.run_id = run_id
        self.run: Any = None

    def start(self, params: Mapping[str, str], tags: Mapping[str, str]) -> None:
        os.environ.setdefault("WANDB_SILENT", "true")  # no banner on the run's console
        import wandb

        self.dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=self.project, entity=self.settings.entity, mode=self.settings.mode,
            dir=str(self.dir), name=self.run_name, id=self.run_id, resume="allow",
            config={**params, **tags},
            tags=[tag for tag in (f"{k}:{v}" for k, v in tags.items()) if len(tag) <= 64],
            reinit="create_new", settings=wandb.Settings(silent=True, console="off"))
        self.run_id = self.run.id

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        if self.run is not None:
            self.run.log(dict(metrics), step=step)

    def finish(self, outcome: str) -> None:
        if self.run is not None:
            failed = outcome in ("failed", "nothing_evaluated", "llm_unreachable", "stalled")
            self.run.finish(exit_code=1 if failed else 0)
            self.run = None


__all__ = ["WandbSink"]
