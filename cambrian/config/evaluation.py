"""The `evaluation:` section of the run config: how a candidate is evaluated and contained
(contract, limits, network, devices; ``cambrian/evaluate/``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from cambrian.config.destinations import parse_destination
from cambrian.config.strict import StrictModel


class DevicesConfig(StrictModel):
    """Accelerators each evaluation holds (cambrian/evaluate/devices.py)."""

    gpu: int = Field(
        0, ge=0,
        description="GPUs per evaluation, passed as CUDA_VISIBLE_DEVICES; 0: evaluations see "
                    "no GPU. An evaluation holding one runs without the address-space limit "
                    "(CUDA maps the device's memory); evaluation.memory_limit_mb then bounds "
                    "its resident size.",
    )
    share: bool = Field(
        False,
        description="Concurrent evaluations may hold the same GPU (their timings then disturb "
                    "each other); otherwise evaluations wait for a free GPU and "
                    "evolution.max_parallel_evaluations is capped at the number of GPUs over "
                    "`gpu`.",
    )
    fallback: Literal["error", "cpu"] = Field(
        "error",
        description="No GPU on this machine: \"error\" stops before the run starts; \"cpu\" "
                    "evaluates without one (the evaluator must then fall back to the CPU "
                    "itself).",
    )


class EvaluationConfig(StrictModel):
    contract: Literal["auto", "module", "command"] = Field(
        "auto",
        description="How the evaluator is run: module (evaluate(program_path) -> dict), "
                    "command (a script writing metrics.json), or auto (by its shape).",
    )
    timeout_s: float = Field(
        120.0, gt=0,
        description="Wall-time limit of one evaluation, in seconds (the whole process group "
                    "is killed).",
    )
    memory_limit_mb: int | None = Field(
        4096, gt=0,
        description="Address-space limit of an evaluation in MB (resident size when it holds "
                    "a GPU); None: none.",
    )
    cpu_time_limit_s: float | None = Field(
        None, gt=0,
        description="CPU-time limit of an evaluation, in seconds; None: none.",
    )
    max_output_bytes: int = Field(
        64_000, ge=1_000,
        description="Output of an evaluation kept (head and tail), in bytes.",
    )
    extra_args: dict[str, str] = Field(
        default_factory=dict,
        description="Extra --name value arguments given to a command-contract evaluator.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment variables set for evaluations (the environment is otherwise "
                    "an allow-list without credentials).",
    )
    python: str | None = Field(
        None,
        description="The interpreter the evaluator runs under (a path, or a name on PATH), "
                    "for an evaluator needing packages Cambrian's own environment lacks; "
                    "None: Cambrian's interpreter. The sandbox lets the evaluation read that "
                    "interpreter's installation.",
    )
    warm_worker: bool = Field(
        True,
        description="Evaluate in a warm interpreter forked per evaluation "
                    "(cambrian/evaluate/warm_worker.py: same containment, no interpreter "
                    "start-up or re-import of the evaluator's packages).",
    )
    isolate_network: bool = Field(
        True,
        description="A network namespace of its own: the evaluation reaches no network, not "
                    "even this machine's loopback services (the LLM server, the web UI), but "
                    "its own loopback and the \"HOST:PORT\" destinations of network_allow (a "
                    "scorer service it scores against, say).",
    )
    network_allow: list[str] = Field(
        default_factory=list,
        description="HOST:PORT destinations an isolated evaluation may still reach (through a "
                    "forwarder the sandbox runs).",
    )
    disk_limit_mb: int | None = Field(
        2048, gt=0,
        description="What one evaluation may add to its scratch folder (files it writes, in "
                    "MB); over it, the evaluation is killed and fails with status \"disk\". "
                    "None: no quota.",
    )
    devices: DevicesConfig = Field(
        default_factory=DevicesConfig,
        description="Accelerators (GPUs) each evaluation holds.",
    )
    cascade: Literal["auto", "on", "off"] = Field(
        "auto",
        description="OpenEvolve's cascade (module contract): evaluate_stage1, then "
                    "evaluate_stage2 when its score reaches cascade_thresholds[0], then "
                    "evaluate_stage3 past cascade_thresholds[1]. \"auto\": when the evaluator "
                    "defines evaluate_stage1 (OpenEvolve's default is on).",
    )
    cascade_thresholds: list[float] = Field(
        default_factory=lambda: [0.5, 0.75, 0.9],
        description="Scores a cascade stage must reach for the next stage to run.",
    )
    llm_feedback_weight: float = Field(
        0.0, ge=0, le=1,
        description="Share of a correct program's score that an LLM's rating of its code "
                    "quality (0 to 1) takes: score = (1 - w) * the evaluator's score + w * "
                    "the rating, both kept as metrics (evaluator_score, llm_quality). 0: no "
                    "rating call. OpenEvolve's evaluator.use_llm_feedback/llm_feedback_weight.",
    )
    llm_feedback_model: str | None = Field(
        None,
        description="Label of the llm.models entry that rates code quality; default: the "
                    "first model.",
    )

    @field_validator("cascade", mode="before")
    @classmethod
    def _yaml_switch(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` as false (and `on` as true).
        return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("network_allow")
    @classmethod
    def _destinations(cls, value: list[str]) -> list[str]:
        for entry in value:
            parse_destination(entry)
        return value

    @model_validator(mode="after")
    def _allow_needs_isolation(self) -> EvaluationConfig:
        if self.network_allow and not self.isolate_network:
            raise ValueError("evaluation.network_allow limits an isolated evaluation's network; "
                             "with isolate_network: false every destination is reachable")
        return self
