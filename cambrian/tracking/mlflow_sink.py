"""MLflow: one MLflow run per Cambrian run (resumed sessions log into the same one), through
``MlflowClient`` so nothing depends on MLflow's global active run."""

from __future__ import annotations

import os
from collections.abc import Mapping

from cambrian.config.tracking import MLflowConfig
from cambrian.core.extras import require_extra

# Cambrian's session outcome (RunOutcome.word) -> MLflow's run status; others: FINISHED.
_STATUS = {"interrupted": "KILLED", "stopped": "KILLED", "failed": "FAILED",
           "nothing_evaluated": "FAILED", "llm_unreachable": "FAILED", "stalled": "FAILED"}


class MLflowSink:
    name = "mlflow"

    def __init__(self, settings: MLflowConfig, experiment: str, run_name: str,
                 run_id: str | None) -> None:
        require_extra("tracking", "tracking.mlflow (export to MLflow)", ("mlflow",))
        uri = settings.tracking_uri
        if uri is not None and (uri.startswith("file:") or "://" not in uri):
            # A local folder store, asked for by name: MLflow 3 refuses it unless told so.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=settings.tracking_uri)
        self.experiment = settings.experiment or experiment
        self.run_name = settings.run_name or run_name
        self.run_id = run_id

    def start(self, params: Mapping[str, str], tags: Mapping[str, str]) -> None:
        if self.run_id is not None:  # a resumed session: the same MLflow run goes on
            self.client.update_run(self.run_id, status="RUNNING")
            return
        found = self.client.get_experiment_by_name(self.experiment)
        experiment_id = (found.experiment_id if found is not None
                         else self.client.create_experiment(self.experiment))
        run = self.client.create_run(experiment_id, run_name=self.run_name, tags=dict(tags))
        self.run_id = run.info.run_id
        from mlflow.entities import Param

        self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in params.items()])

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        assert self.run_id is not None
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), now, step)
                                                    for k, v in metrics.items()])

    def finish(self, outcome: str) -> None:
        if self.run_id is not None:
            self.client.set_terminated(self.run_id, _STATUS.get(outcome, "FINISHED"))


__all__ = ["MLflowSink"]
