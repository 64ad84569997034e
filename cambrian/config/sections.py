"""Run configuration: one strict pydantic model per section.

Precedence, lowest first: built-in defaults < the task folder's ``config.yaml`` < a config file
given on the command line < ``--set section.key=value`` overrides. An unknown key anywhere is an
error that names the closest valid key (the peers silently ignore such keys; users then wonder why
their setting did nothing).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cambrian.config.decomposition import DecompositionConfig
from cambrian.config.destinations import parse_destination
from cambrian.config.judge import JudgeConfig
from cambrian.config.mutation import MutationConfig
from cambrian.config.niches import NichesConfig
from cambrian.config.phases import PhasesConfig
from cambrian.config.reflection import ReflectionConfig
from cambrian.config.strict import StrictModel

# --------------------------------------------------------------------------- task


class TaskConfig(StrictModel):
    name: str | None = Field(
        None,
        description="The task's name (runs, trackers and reports show it); default: the task "
                    "folder's name.",
    )
    direction: Literal["maximize", "minimize"] = Field(
        "maximize",
        description="Whether a higher (maximize) or lower (minimize) score is better.",
    )
    language: str | None = Field(
        None,
        description="Language of the program; None: inferred from the initial program's "
                    "extension.",
    )
    initial_program: str | None = Field(
        None,
        description="The initial program's file name inside the task folder; None: "
                    "auto-detected (initial.py, init_program.py...).",
    )
    files: list[str] = Field(
        default_factory=list,
        description="A program of several files: their paths (or globs) inside the task "
                    "folder, in the order prompts show them; the first (or initial_program) "
                    "is the entry the evaluator is given. Files with EVOLVE-BLOCKs evolve, "
                    "the others are shown but fixed (task/program_files.py).",
    )
    evaluator: str | None = Field(
        None,
        description="The evaluator's file name inside the task folder; None: auto-detected "
                    "(evaluate.py, evaluator.py...).",
    )
    problem_statement: str | None = Field(
        None,
        description="The problem statement's file name inside the task folder; None: "
                    "auto-detected (problem.md, README.md...).",
    )
    description: str | None = Field(
        None,
        description="One paragraph shown at the top of every prompt.",
    )


# --------------------------------------------------------------------------- llm


# "auto", or the name of a registered reply format (cambrian/mutate/formats/: diff, full,
# function, or one a plugin registers); checked when the run is built.
PatchFormat = str


class ModelConfig(StrictModel):
    """One model of the ensemble. Each (model, temperature) pair is one arm."""

    name: str | None = Field(None, description="Label of the model in the ledger, status and "
                                               "other settings' model references; default: "
                                               "model.")
    provider: str = Field(
        "local",
        description="Who serves the model: local, openai, anthropic, gemini, replay, or a "
                    "provider a plugin registers (cambrian/llm/providers.py); checked when "
                    "the run is built.",
    )
    model: str = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="The provider's model name (for local: a registered embedded model).",
    )
    base_url: str | None = Field(
        None,
        description="Address of an OpenAI-compatible (or other provider's) server; None: the "
                    "provider's default.",
    )
    api_key_env: str | None = Field(
        None,
        description="Name of the environment variable holding the API key (its value is never "
                    "stored or shown to a candidate).",
    )
    temperatures: list[float] = Field(
        default_factory=list,
        description="Sampling temperatures, each one arm; empty: [0.0, 0.5, 1.0] for remote "
                    "models and [0.4, 0.7, 1.0] for local ones (a small model at temperature "
                    "0 repeats the same reply for a repeated parent).",
    )
    weight: float = Field(
        1.0, gt=0,
        description="Relative weight of this model's arms in the ensemble (selection: fixed "
                    "uses it as drawn share).",
    )
    max_tokens: int | None = Field(
        None, gt=0,
        description="Reply budget of one call, in tokens; None: per patch type "
                    "(prompt.reply_tokens_*).",
    )
    context_window: int | None = Field(
        None, gt=0,
        description="The model's context window in tokens; None: the provider's known value.",
    )
    timeout_s: float = Field(
        600.0, gt=0,
        description="Seconds one call may take before it fails (and is retried).",
    )
    price_input_per_mtok: float | None = Field(
        None, ge=0,
        description="Price in USD per million prompt tokens; None: the vendor's list price "
                    "(genai-prices).",
    )
    price_output_per_mtok: float | None = Field(
        None, ge=0,
        description="Price in USD per million completion tokens; None: the vendor's list "
                    "price (genai-prices).",
    )
    patch_format: PatchFormat = Field(
        "auto",
        description="Reply format: auto, or a registered format (diff, full, function, or a "
                    "plugin's).",
    )
    n_threads: int | None = Field(None, gt=0, description="CPU threads llama.cpp uses for a "
                                                          "local model; None: its default.")
    replicas: int = Field(
        1, ge=1,
        description="Local only, with execution.backend: ray: copies of the model, each in a "
                    "Ray actor on its own worker "
                    "(cambrian/evaluate/distributed/llm_replicas.py), so that up to this many "
                    "calls run at once; set evolution.max_proposals_in_flight to at least "
                    "this. 1: in this process.",
    )

    @property
    def label(self) -> str:
        return self.name or self.model

    @field_validator("replicas")
    @classmethod
    def _local_replicas(cls, value: int, info: ValidationInfo) -> int:
        provider = info.data.get("provider", "local")
        if value > 1 and provider != "local":
            raise ValueError(f"replicas > 1 serves a local model from Ray workers; provider "
                             f"'{provider}' is not local (its server scales on its own)")
        return value

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if not self.temperatures:
            defaults = [0.4, 0.7, 1.0] if self.provider == "local" else [0.0, 0.5, 1.0]
            object.__setattr__(self, "temperatures", defaults)
        if any(t < 0 or t > 2 for t in self.temperatures):
            raise ValueError("temperatures must lie in [0, 2]")
        return self


class RetryConfig(StrictModel):
    max_attempts: int = Field(
        4, ge=1,
        description="Attempts of one call (the first included) before it fails.",
    )
    initial_backoff_s: float = Field(
        1.0, ge=0,
        description="Wait before the first retry, doubled after each failed attempt.",
    )
    max_backoff_s: float = Field(30.0, ge=0, description="The longest wait between two "
                                                         "attempts, in seconds.")


class LLMConfig(StrictModel):
    models: list[ModelConfig] = Field(
        default_factory=lambda: [ModelConfig()],
        description="The models of the ensemble; each (model, temperature) pair is one arm of "
                    "the bandit.",
    )
    selection: Literal["ucb1", "fixed", "single"] = Field(
        "ucb1",
        description="How an arm is drawn: ucb1 (bandit over the arms' improvements), fixed "
                    "(by weight), single (the first model only).",
    )
    exploration: float = Field(
        1.0, ge=0,
        description="UCB1 exploration coefficient (seed 000 Appendix B).",
    )
    retries: RetryConfig = Field(
        default_factory=RetryConfig,
        description="Retries of a failed call (timeouts, HTTP 429/5xx, malformed replies).",
    )
    max_reply_chars: int = Field(
        200_000, ge=1_000,
        description="Characters of a reply kept; a longer reply is cut there (and the cut "
                    "recorded).",
    )

    @model_validator(mode="after")
    def _unique_labels(self) -> LLMConfig:
        labels = [m.label for m in self.models]
        duplicates = {x for x in labels if labels.count(x) > 1}
        if duplicates:
            raise ValueError(f"model labels must be unique; repeated: {sorted(duplicates)}")
        if not self.models:
            raise ValueError("llm.models must list at least one model")
        return self


# --------------------------------------------------------------------------- archive


ParentSelection = Literal["weighted", "power_law", "hill_climb", "beam", "best_of_n", "uniform"]


class DatabaseConfig(StrictModel):
    """Island archive and parent sampling (seed 000 §3.1, Appendix B tables)."""

    num_islands: int = Field(
        2, ge=1,
        description="Islands of the archive; each evolves apart, with migration between them.",
    )
    archive_size: int = Field(
        40, ge=1,
        description="Total elite capacity, split evenly across islands.",
    )
    elite_ratio: float = Field(
        0.3, gt=0, le=1,
        description="Share of an island's best programs counted as its elites, the pool "
                    "inspirations are drawn from first.",
    )
    archive_inspirations: int = Field(
        2, ge=0,
        description="Programs from the archive shown as inspirations in each prompt.",
    )
    top_k_inspirations: int = Field(
        1, ge=0,
        description="Best programs shown as inspirations in each prompt.",
    )
    migration_interval: int = Field(
        10, ge=1,
        description="Completed evaluations between two migrations.",
    )
    migration_rate: float = Field(
        0.1, ge=0, le=1,
        description="Share of an island's programs copied to the next island at each "
                    "migration.",
    )
    island_elitism: bool = Field(
        True,
        description="Keep each island's best program through migrations.",
    )
    parent_selection: ParentSelection = Field(
        "weighted",
        description="How a parent is drawn from an island: weighted, power_law, hill_climb, "
                    "beam, best_of_n or uniform.",
    )
    parent_selection_lambda: float = Field(
        10.0, gt=0,
        description="Sharpness of weighted parent selection (higher favours the best more).",
    )
    power_law_alpha: float = Field(
        1.0, ge=0,
        description="Exponent of power-law parent selection: p ~ rank^-alpha.",
    )
    num_beams: int = Field(5, ge=1, description="Parents kept by beam selection.")


class SearchConfig(StrictModel):
    """Which search algorithm runs (``cambrian run --search NAME``) and its own options."""

    algorithm: str = Field(
        "shinka",
        description="The search algorithm by registered name (cambrian algorithms lists them; "
                    "cambrian run --search NAME).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="The algorithm's own options (docs: the algorithm zoo); unknown ones are "
                    "an error.",
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="Python modules imported before the run, registering algorithms, "
                    "components, intents, providers or languages.",
    )
    context_builder: str = Field(
        "default",
        description="The loop's other swappable parts, by registered name "
                    "(cambrian/components.py).",
    )
    generator: str = Field(
        "default",
        description="The generator (prompt to child program) by registered name.",
    )
    evaluator: str = Field("default", description="The evaluator component (program to "
                                                  "evaluation result) by registered name.")


# --------------------------------------------------------------------------- evolution


PatchType = Literal["diff", "full", "cross"]


class EvolutionConfig(StrictModel):
    generations: int = Field(
        20, ge=0,
        description="Children to evaluate (the initial program excluded).",
    )
    patch_types: list[PatchType] = Field(
        default_factory=lambda: ["diff", "full", "cross"],
        description="Patch kinds drawn when mutation.schedule is off: diff, full rewrite, "
                    "crossover.",
    )
    patch_type_probs: list[float] = Field(
        default_factory=lambda: [0.45, 0.45, 0.1],
        description="Probabilities of patch_types, in the same order.",
    )
    max_patch_attempts: int = Field(3, ge=1, description="Reflexion turns within one "
                                                         "proposal's conversation after a "
                                                         "refused reply.")
    max_patch_resamples: int = Field(
        2, ge=1,
        description="Fresh starts (new parent and prompt) of a proposal whose attempts all "
                    "failed.",
    )
    max_parallel_evaluations: int = Field(
        2, ge=1,
        description="Evaluations running at once (on Ray: set it to the number of workers).",
    )
    max_proposals_in_flight: int = Field(
        1, ge=1,
        description="Proposals (LLM conversations) running at once; with a local model served "
                    "by replicas (llm.models[].replicas) at least their number, or the extra "
                    "replicas stay idle.",
    )
    seed: int = Field(
        0,
        description="Seed of the run's random generator (parent choice, intents, arms).",
    )
    repair_initial: bool = Field(
        False,
        description="A failing initial program stops the run with its error (a broken "
                    "evaluator or program would otherwise spend LLM calls); true keeps it and "
                    "asks the LLM to repair it.",
    )
    target_score: float | None = Field(
        None,
        description="Early stops (the run did its work: exit code 0). target_score: stop once "
                    "the best score reaches it (>= when maximising, <= when minimising). "
                    "patience: stop after that many evaluations in a row (children and tune "
                    "trials) without a better best score.",
    )
    patience: int | None = Field(
        None, ge=1,
        description="Stop after this many evaluations in a row (children and tune trials) "
                    "without a better best score; None: never.",
    )

    @field_validator("target_score")
    @classmethod
    def _finite_target(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("evolution.target_score must be a finite number")
        return value

    @model_validator(mode="after")
    def _check_probs(self) -> EvolutionConfig:
        if len(self.patch_types) != len(self.patch_type_probs):
            raise ValueError(
                f"patch_types has {len(self.patch_types)} entries but patch_type_probs has "
                f"{len(self.patch_type_probs)}"
            )
        if not self.patch_types:
            raise ValueError("patch_types must list at least one type")
        if any(p < 0 for p in self.patch_type_probs) or sum(self.patch_type_probs) <= 0:
            raise ValueError("patch_type_probs must be non-negative with a positive sum")
        return self


class BudgetConfig(StrictModel):
    """Caps that stop a run cleanly, and spending pacing (seed 002 §10.9)."""

    max_cost_usd: float | None = Field(
        None, gt=0,
        description="Stop once the LLM calls have cost this much (USD); None: no cap.",
    )
    max_tokens: int | None = Field(
        None, ge=1,
        description="Stop once this many tokens (prompt and completion) were spent; None: no "
                    "cap.",
    )
    max_llm_calls: int | None = Field(
        None, ge=1,
        description="Stop after this many LLM calls; None: no cap.",
    )
    max_wall_time_s: float | None = Field(
        None, gt=0,
        description="Stop after this many seconds of wall time; None: no cap.",
    )
    pacing_factor: float = Field(
        0.8, gt=0, le=1,
        description="Restrict proposals to cheaper arms while budget left < pacing_factor * "
                    "run left.",
    )


class NoveltyConfig(StrictModel):
    """Novelty rejection sampling (seed 000 §3.2, Appendix B: threshold 0.95, then an LLM judge).

    ``judge: auto`` asks the judge when its model is remote and not when it is local: a local
    judge call costs about as much time as the proposal it would save an evaluation of, and a
    1.5B judge almost always answers "different" (measured: benchmarks/small_model.py).
    ``threshold: auto`` is the seed's 0.95 with a judge; without one it is 0.999, so that only
    near-copies are refused: with the bundled MiniLM embeddings, edits of one to three lines
    that changed what a 30-line block does measured 0.996-0.997. Above the threshold, a proposal
    that differs from its nearest program only in comments or layout is refused without asking
    the judge; without a judge and with the automatic threshold every other proposal passes
    (``search/novelty.py``). ``judge_when: cost`` asks the judge only when the evaluation it may
    save is measured to cost more than the call (``search/novelty_cost.py``)."""

    enabled: bool = Field(
        True,
        description="Refuse proposals too close to a program the run already has (embedding "
                    "similarity, then optionally an LLM judge).",
    )
    embedding: Literal["local", "openai"] = Field(
        "local",
        description="Where embeddings come from: local (the bundled MiniLM, "
                    "cambrian[novelty]) or openai (an embeddings API).",
    )
    embedding_model: str = Field("text-embedding-3-small", description="Embedding model name "
                                                                       "for embedding: "
                                                                       "openai.")
    base_url: str | None = Field(
        None,
        description="Address of the embeddings API for embedding: openai; None: OpenAI's.",
    )
    api_key_env: str | None = Field(
        None,
        description="Environment variable holding the embeddings API's key.",
    )
    threshold: float | Literal["auto"] = Field(
        "auto",
        description="Cosine similarity above which a proposal is a near-copy; auto: 0.95 with "
                    "a judge, else 0.999.",
    )
    judge: bool | Literal["auto"] = Field(
        "auto",
        description="Above the threshold an LLM judge decides; auto: only when its model is "
                    "remote.",
    )
    judge_model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    judge_when: Literal["cost", "always"] = Field(
        "cost",
        description="cost: ask the judge only when the run's median evaluation takes longer "
                    "than the judge model's median call (its USD counted at max_wall_time_s / "
                    "max_cost_usd when both caps are set), else evaluate the near-copy; "
                    "always: ask it for every near-copy.",
    )
    max_attempts: int = Field(
        3, ge=0,
        description="Rejections per generation before accepting anyway.",
    )

    @field_validator("threshold")
    @classmethod
    def _threshold_range(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0 < value <= 1:
            raise ValueError("novelty.threshold must lie in (0, 1] (or be auto)")
        return value


class MetaConfig(StrictModel):
    """Meta-scratchpad (seed 000 §3.3, Appendix B: every 10 evaluations, up to 5 recommendations)."""

    enabled: bool = Field(
        True,
        description="Keep the meta-scratchpad: an LLM summarises what worked into "
                    "recommendations for later prompts.",
    )
    interval: int = Field(10, ge=1, description="Evaluations between two scratchpad updates.")
    max_recommendations: int = Field(
        5, ge=1, le=9,
        description="Recommendations one scratchpad update may give.",
    )
    per_prompt: int = Field(
        1, ge=0,
        description="Recommendations sampled into each mutation prompt.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(
        400, gt=0,
        description="Reply budget of one scratchpad update, in tokens.",
    )


class ComprehensionConfig(StrictModel):
    """Problem comprehension (seed 004 §4 "Phase 1", §9 Component 1): before the first proposal an
    LLM reads the problem statement once and writes a structured brief (summary, input/output,
    scoring, constraints, candidate approaches) that every mutation prompt then carries. Acts
    only when the task has a problem statement."""

    enabled: bool = Field(
        True,
        description="Write the problem brief before the first proposal (only when the task "
                    "has a problem statement).",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(900, gt=0, description="Reply budget of the brief, in tokens.")
    temperature: float = Field(
        0.2, ge=0, le=2,
        description="Sampling temperature of the brief: low, for an accurate reading (seed "
                    "004 §4).",
    )
    max_prompt_chars: int = Field(
        3000, ge=200,
        description="Characters of the brief shown in each mutation prompt.",
    )


class FirstProgramConfig(StrictModel):
    """A task with a problem statement but no initial program: an LLM writes the first program,
    which must pass the task's own evaluation before evolution starts."""

    attempts: int = Field(
        3, ge=1,
        description="Each failed attempt's error is fed back to the next.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(
        3072, gt=0,
        description="Reply budget of one attempt at the first program, in tokens.",
    )
    temperature: float = Field(
        0.4, ge=0, le=2,
        description="Sampling temperature of the first program's attempts.",
    )


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


class PromptConfig(StrictModel):
    reply_tokens_full: int = Field(
        1536, gt=0,
        description="Reply budget of a full-rewrite proposal, in tokens.",
    )
    reply_tokens_diff: int = Field(
        1024, gt=0,
        description="Reply budget of a diff proposal, in tokens.",
    )
    show_text_feedback: bool = Field(
        True,
        description="Show the evaluator's text feedback (artifacts, errors) of the parent in "
                    "the prompt.",
    )
    max_feedback_chars: int = Field(1500, ge=0, description="Characters of the evaluator's "
                                                            "feedback shown in a prompt.")
    max_guidance_chars: int = Field(
        2000, ge=1,
        description="Characters a person's active guidance (for every prompt, or for one "
                    "candidate or lineage) may hold; a change that would leave more is refused "
                    "where it is made (cambrian guide, the web UI, guidance.md), so earlier "
                    "guidance is never crowded out of the prompt.",
    )
    history_programs: int = Field(
        3, ge=0,
        description="Lineage steps shown with the parent (0: none).",
    )
    tried_ideas: int = Field(
        4, ge=0,
        description="Changes the parent's last children tried without beating it, shown so "
                    "they are not repeated.",
    )
    context_margin_tokens: int = Field(
        64, ge=0,
        description="Tokens kept free in the context window when fitting a prompt.",
    )
    retry_style: Literal["auto", "continue", "restart"] = Field(
        "auto",
        description="After a refused reply: \"continue\" the conversation with the error "
                    "(Reflexion, seed 000 §3.2) or \"restart\" from the original prompt with "
                    "the error noted at its end. \"auto\" restarts for local models, which tend "
                    "to repeat their own refused reply verbatim.",
    )


class PromptEvolutionConfig(StrictModel):
    """Co-evolved system prompts (seed 002 §10.8): an archive of role prompts scored by the
    improvements of the programs they produced, sampled with UCB1, now and then rewritten by an
    LLM. Off by default: every new system prompt costs a small local model a full re-read of
    the prompt prefix it could otherwise reuse from its KV cache."""

    enabled: bool = Field(
        False,
        description="Co-evolve the system prompts (an archive of role prompts scored by their "
                    "programs' improvements).",
    )
    exploration: float = Field(
        1.0, ge=0,
        description="UCB1 exploration coefficient of the prompt archive.",
    )
    mutate_every: int = Field(
        10, ge=1,
        description="Evaluations between LLM rewrites of the best prompt.",
    )
    max_prompts: int = Field(
        6, ge=2,
        description="Active archive size; the weakest tried prompt retires.",
    )
    min_pulls_to_retire: int = Field(
        3, ge=1,
        description="Uses a prompt gets before it may be retired.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(300, gt=0, description="Reply budget of one prompt rewrite, in tokens.")


class TraceFeedbackConfig(StrictModel):
    """What the trace analyses feed back into the search (seed 001 §6: keep the search from
    re-doing discarded work; cycling §5.2, B.6, B.8; tuning gap §5.4, B.9). See
    ``cambrian/search/recycling.py`` and ``cambrian/search/tune_step.py``.

    ``deletion_filter``: a child more than ``reintroduction_threshold`` of whose added lines are
    lines its lineage already deleted is ``reject``-ed (stored as ``rejected``, never evaluated;
    after ``max_rejections`` in one generation the proposal is kept anyway) or ``penalise``-d
    (evaluated, but whenever the selector draws it as a parent the draw is repeated with
    probability ``penalty``). Fixes of a failing parent are never filtered.
    ``tune_operator``: every ``tune_every`` evaluated children one generation is a ``tune`` step
    instead of an LLM proposal: the best correct program not tuned before gets its numeric knobs
    tuned by Bayesian optimisation through the task's own evaluator (``tune_budget`` trial
    evaluations, plus one at the defaults; trials count towards ``evolution.generations``
    like children, and a step never takes more than what is left of it), and the tuned program
    becomes the child when it scores better than its parent."""

    deletion_filter: Literal["off", "penalise", "reject"] = Field(
        "reject",
        description="What happens to a child re-adding lines its lineage deleted: reject it, "
                    "penalise it as a parent, or off.",
    )
    reintroduction_threshold: float = Field(
        0.5, ge=0, lt=1,
        description="Share of a child's added lines that its lineage deleted before, above "
                    "which the deletion filter acts.",
    )
    max_rejections: int = Field(2, ge=0, description="Rejections by the deletion filter in "
                                                     "one generation, after which the "
                                                     "proposal is kept.")
    penalty: float = Field(
        0.5, ge=0, le=1,
        description="Probability that a penalised child drawn as a parent is drawn again.",
    )
    deletion_history_in_prompt: bool = Field(
        True,
        description="The parent's lineage deletions as a prompt note.",
    )
    deletion_history_lines: int = Field(
        12, ge=1, le=100,
        description="Lines of the deletion history shown in the prompt.",
    )
    tune_operator: bool = Field(
        False,
        description="Every tune_every children, tune the best untuned program's numeric knobs "
                    "by Bayesian optimisation instead of an LLM proposal.",
    )
    tune_every: int = Field(10, ge=1, description="Evaluated children between two tune steps.")
    tune_budget: int = Field(
        8, ge=2, le=64,
        description="B.9 uses 24 per program; one step is smaller.",
    )

    @field_validator("deletion_filter", mode="before")
    @classmethod
    def _yaml_switch(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` as false (and `on` as true).
        return {False: "off", True: "reject"}.get(value, value) if isinstance(value, bool) else value


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


class RunConfig(StrictModel):
    task: TaskConfig = Field(
        default_factory=TaskConfig,
        description="What the task folder holds: name, direction, language, files.",
    )
    llm: LLMConfig = Field(
        default_factory=LLMConfig,
        description="The models, how they are drawn and retried.",
    )
    database: DatabaseConfig = Field(
        default_factory=DatabaseConfig,
        description="The island archive and parent selection.",
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig,
        description="The search algorithm, plugins and the loop's swappable components.",
    )
    evolution: EvolutionConfig = Field(
        default_factory=EvolutionConfig,
        description="Generations, parallelism, seed and early stops.",
    )
    mutation: MutationConfig = Field(
        default_factory=MutationConfig,
        description="Mutation intents, their schedule, strategy menu and improvement step.",
    )
    evaluation: EvaluationConfig = Field(
        default_factory=EvaluationConfig,
        description="How a candidate is evaluated and contained: contract, limits, network, "
                    "devices.",
    )
    execution: ExecutionConfig = Field(
        default_factory=ExecutionConfig,
        description="Where evaluations run: locally or on Ray.",
    )
    budget: BudgetConfig = Field(
        default_factory=BudgetConfig,
        description="Caps on money, tokens, LLM calls and wall time.",
    )
    novelty: NoveltyConfig = Field(
        default_factory=NoveltyConfig,
        description="Novelty rejection of near-copies.",
    )
    meta: MetaConfig = Field(default_factory=MetaConfig, description="The meta-scratchpad.")
    reflection: ReflectionConfig = Field(
        default_factory=ReflectionConfig,
        description="Self-reflection on the run's own statistics.",
    )
    comprehension: ComprehensionConfig = Field(
        default_factory=ComprehensionConfig,
        description="The problem brief written before the first proposal.",
    )
    first_program: FirstProgramConfig = Field(
        default_factory=FirstProgramConfig,
        description="An LLM-written first program for a task without one.",
    )
    prompt: PromptConfig = Field(
        default_factory=PromptConfig,
        description="What prompts show and reply budgets.",
    )
    prompt_evolution: PromptEvolutionConfig = Field(
        default_factory=PromptEvolutionConfig,
        description="Co-evolved system prompts.",
    )
    trace_feedback: TraceFeedbackConfig = Field(
        default_factory=TraceFeedbackConfig,
        description="What the trace analyses feed back: deletion filter, deletion history, "
                    "tune step.",
    )
    tracking: TrackingConfig = Field(
        default_factory=TrackingConfig,
        description="Export to MLflow and Weights & Biases.",
    )
    niches: NichesConfig = Field(
        default_factory=NichesConfig,
        description="Strategy niches: tagging programs by strategy family, and the niche "
                    "archive.",
    )
    phases: PhasesConfig = Field(
        default_factory=PhasesConfig,
        description="Search phases: exploration, exploitation, polishing.",
    )
    decomposition: DecompositionConfig = Field(
        default_factory=DecompositionConfig,
        description="Sub-problems of the task's test cases.",
    )
    judge: JudgeConfig | None = Field(
        None,
        description="A judged (contest-style) task: compiled, run on generated test cases, "
                    "scored per case; None: the task has an evaluator.",
    )
    # The values written as ${VAR} (config/env_vars.py): by path, their text and the value it
    # gave, so what the run stores is the reference, never the value (loading.stored_form).
    _env_templates: dict[tuple[str | int, ...], tuple[str, Any]] = PrivateAttr(
        default_factory=dict)
