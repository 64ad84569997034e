"""The `tracking:` section of the run config: export to MLflow and Weights & Biases
(``cambrian/tracking/``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cambrian.config.strict import StrictModel


class MLflowConfig(StrictModel):
    tracking_uri: str | None = Field(
        None,
        description="MLflow tracking URI, e.g. sqlite:///mlflow.db or file:///path/mlruns; "
                    "None: MLflow's own default.",
    )
    experiment: str | None = Field(None, description="MLflow experiment name; None: the "
                                                     "task's name.")
    run_name: str | None = Field(None, description="MLflow run name; None: the run folder's "
                                                   "name.")


class WandbConfig(StrictModel):
    project: str | None = Field(None, description="W&B project; None: the task's name.")
    entity: str | None = Field(
        None,
        description="The W&B entity (user or team); None: W&B's default.",
    )
    mode: Literal["online", "offline", "disabled"] = Field(
        "offline",
        description="W&B mode: online, offline (wandb sync later) or disabled.",
    )
    dir: str | None = Field(None, description="Folder W&B writes to; None: the run folder.")
    run_name: str | None = Field(None, description="W&B run name; None: the run folder's "
                                                   "name.")


class TrackingConfig(StrictModel):
    """Export of the run's scores, costs and events to experiment trackers (``cambrian/
    tracking/``; ``pip install 'cambrian[tracking]'``). Absent section: nothing is exported."""

    mlflow: MLflowConfig | None = Field(None, description="Export to MLflow; None: not.")
    wandb: WandbConfig | None = Field(None, description="Export to Weights & Biases; None: not.")
