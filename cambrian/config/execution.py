"""The `execution:` section of the run config: where evaluations run, locally or on Ray."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cambrian.config.strict import StrictModel


class ExecutionConfig(StrictModel):
    """Where evaluations run. ``local`` (default): sandboxed subprocesses of this process.
    ``ray``: tasks on a Ray cluster (``pip install 'cambrian[ray]'``), under the same sandbox,
    limits and containment on every worker; judged tasks spread each candidate's test cases
    over the workers (``cambrian/evaluate/distributed/``). The store stays on this machine:
    workers only return results."""

    backend: Literal["local", "ray"] = Field(
        "local",
        description="Where evaluations run: local (sandboxed subprocesses) or ray (jobs on a "
                    "Ray cluster, cambrian[ray]).",
    )
    ray_address: str | None = Field(
        None,
        description="\"auto\" (a cluster `ray start` runs on this machine) or the head's "
                    "\"HOST:PORT\"; None starts a local cluster for the run and stops it "
                    "afterwards.",
    )
    num_cpus: int | None = Field(None, ge=1, description="CPUs of the local Ray cluster a run "
                                                         "starts; None: all.")
    cpus_per_evaluation: float = Field(
        1.0, gt=0,
        description="Ray CPUs a job (evaluation, case chunk) holds.",
    )
    case_chunks: int | None = Field(
        None, ge=1,
        description="Judged tasks: chunks one candidate's cases are split into (default: the "
                    "cluster's job slots).",
    )
    max_retries: int = Field(
        3, ge=0,
        description="Resubmissions of a job whose worker or node was lost.",
    )
    worker_dir: str | None = Field(
        None,
        description="Node-local folder for task copies, compile/case caches and scratch "
                    "folders (default: TMPDIR/cambrian-ray on each node).",
    )

    @model_validator(mode="after")
    def _check(self) -> ExecutionConfig:
        if self.num_cpus is not None and self.ray_address is not None:
            raise ValueError("execution.num_cpus sizes the local cluster a run starts; it cannot "
                             "apply to the existing cluster at execution.ray_address")
        return self
