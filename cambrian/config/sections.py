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
    name: str | None = None
    direction: Literal["maximize", "minimize"] = "maximize"
    language: str | None = None  # inferred from the initial program's extension when None
    initial_program: str | None = None  # file name inside the task folder; auto-detected
    # A program of several files: their paths (or globs) inside the task folder, in the order
    # prompts show them; the first (or initial_program) is the entry the evaluator is given.
    # Files with EVOLVE-BLOCKs evolve, the others are shown but fixed (task/program_files.py).
    files: list[str] = Field(default_factory=list)
    evaluator: str | None = None  # file name inside the task folder; auto-detected
    problem_statement: str | None = None  # file name; auto-detected (problem.md, README.md...)
    description: str | None = None  # one paragraph shown at the top of every prompt


# --------------------------------------------------------------------------- llm


# "auto", or the name of a registered reply format (cambrian/mutate/formats/: diff, full,
# function, or one a plugin registers); checked when the run is built.
PatchFormat = str


class ModelConfig(StrictModel):
    """One model of the ensemble. Each (model, temperature) pair is one arm."""

    name: str | None = None  # label in the ledger; defaults to ``model``
    # local, openai, anthropic, gemini, or a provider a plugin registers (cambrian/llm/
    # providers.py); checked when the run is built.
    provider: str = "local"
    model: str = "qwen2.5-coder-1.5b-instruct"
    base_url: str | None = None
    api_key_env: str | None = None
    # Default: [0.0, 0.5, 1.0] (seed 000 Appendix B) for remote models; local models skip 0.0,
    # because a small model at temperature 0 repeats the same reply for a repeated parent.
    temperatures: list[float] = Field(default_factory=list)
    weight: float = Field(1.0, gt=0)
    max_tokens: int | None = Field(None, gt=0)  # reply budget; per patch type when None
    context_window: int | None = Field(None, gt=0)
    timeout_s: float = Field(600.0, gt=0)
    price_input_per_mtok: float | None = Field(None, ge=0)
    price_output_per_mtok: float | None = Field(None, ge=0)
    patch_format: PatchFormat = "auto"
    n_threads: int | None = Field(None, gt=0)  # local only
    # Local only, with execution.backend: ray: copies of the model, each in a Ray actor on its
    # own worker (cambrian/evaluate/distributed/llm_replicas.py), so that up to this many calls
    # run at once; set evolution.max_proposals_in_flight to at least this. 1: in this process.
    replicas: int = Field(1, ge=1)

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
    max_attempts: int = Field(4, ge=1)
    initial_backoff_s: float = Field(1.0, ge=0)
    max_backoff_s: float = Field(30.0, ge=0)


class LLMConfig(StrictModel):
    models: list[ModelConfig] = Field(default_factory=lambda: [ModelConfig()])
    selection: Literal["ucb1", "fixed", "single"] = "ucb1"
    exploration: float = Field(1.0, ge=0)  # UCB1 exploration coefficient (seed 000 Appendix B)
    retries: RetryConfig = Field(default_factory=RetryConfig)
    # Characters of a reply kept; a longer reply is cut there (and the cut recorded).
    max_reply_chars: int = Field(200_000, ge=1_000)

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

    num_islands: int = Field(2, ge=1)
    archive_size: int = Field(40, ge=1)  # total elite capacity, split evenly across islands
    elite_ratio: float = Field(0.3, gt=0, le=1)
    archive_inspirations: int = Field(2, ge=0)
    top_k_inspirations: int = Field(1, ge=0)
    migration_interval: int = Field(10, ge=1)  # completed evaluations between migrations
    migration_rate: float = Field(0.1, ge=0, le=1)
    island_elitism: bool = True
    parent_selection: ParentSelection = "weighted"
    parent_selection_lambda: float = Field(10.0, gt=0)
    power_law_alpha: float = Field(1.0, ge=0)
    num_beams: int = Field(5, ge=1)


class SearchConfig(StrictModel):
    """Which search algorithm runs (``cambrian run --search NAME``) and its own options."""

    algorithm: str = "shinka"
    options: dict[str, Any] = Field(default_factory=dict)
    plugins: list[str] = Field(default_factory=list)  # modules registering algorithms/components
    # The loop's other swappable parts, by registered name (cambrian/components.py).
    context_builder: str = "default"
    generator: str = "default"
    evaluator: str = "default"


# --------------------------------------------------------------------------- evolution


PatchType = Literal["diff", "full", "cross"]


class EvolutionConfig(StrictModel):
    generations: int = Field(20, ge=0)  # children to evaluate (the initial program excluded)
    patch_types: list[PatchType] = Field(default_factory=lambda: ["diff", "full", "cross"])
    patch_type_probs: list[float] = Field(default_factory=lambda: [0.45, 0.45, 0.1])
    max_patch_attempts: int = Field(3, ge=1)  # Reflexion turns within one conversation
    max_patch_resamples: int = Field(2, ge=1)  # fresh parent + prompt after failed attempts
    max_parallel_evaluations: int = Field(2, ge=1)
    # Proposals (LLM conversations) running at once; with a local model served by replicas
    # (llm.models[].replicas) at least their number, or the extra replicas stay idle.
    max_proposals_in_flight: int = Field(1, ge=1)
    seed: int = 0
    # A failing initial program stops the run with its error (a broken evaluator or program
    # would otherwise spend LLM calls); true keeps it and asks the LLM to repair it.
    repair_initial: bool = False
    # Early stops (the run did its work: exit code 0). target_score: stop once the best score
    # reaches it (>= when maximising, <= when minimising). patience: stop after that many
    # evaluations in a row (children and tune trials) without a better best score.
    target_score: float | None = None
    patience: int | None = Field(None, ge=1)

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

    max_cost_usd: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, ge=1)
    max_llm_calls: int | None = Field(None, ge=1)
    max_wall_time_s: float | None = Field(None, gt=0)
    # Restrict proposals to cheaper arms while budget left < pacing_factor * run left.
    pacing_factor: float = Field(0.8, gt=0, le=1)


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
    (``search/novelty.py``)."""

    enabled: bool = True
    embedding: Literal["local", "openai"] = "local"
    embedding_model: str = "text-embedding-3-small"  # for embedding: openai
    base_url: str | None = None
    api_key_env: str | None = None
    threshold: float | Literal["auto"] = "auto"
    judge: bool | Literal["auto"] = "auto"  # above the threshold an LLM decides
    judge_model: str | None = None  # label of an llm.models entry; default: the first model
    max_attempts: int = Field(3, ge=0)  # rejections per generation before accepting anyway

    @field_validator("threshold")
    @classmethod
    def _threshold_range(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0 < value <= 1:
            raise ValueError("novelty.threshold must lie in (0, 1] (or be auto)")
        return value


class MetaConfig(StrictModel):
    """Meta-scratchpad (seed 000 §3.3, Appendix B: every 10 evaluations, up to 5 recommendations)."""

    enabled: bool = True
    interval: int = Field(10, ge=1)  # evaluations between updates
    max_recommendations: int = Field(5, ge=1, le=9)
    per_prompt: int = Field(1, ge=0)  # recommendations sampled into each mutation prompt
    model: str | None = None  # label of an llm.models entry; default: the first model
    max_tokens: int = Field(400, gt=0)


class ComprehensionConfig(StrictModel):
    """Problem comprehension (seed 004 §4 "Phase 1", §9 Component 1): before the first proposal an
    LLM reads the problem statement once and writes a structured brief (summary, input/output,
    scoring, constraints, candidate approaches) that every mutation prompt then carries. Acts
    only when the task has a problem statement."""

    enabled: bool = True
    model: str | None = None  # label of an llm.models entry; default: the first model
    max_tokens: int = Field(900, gt=0)
    temperature: float = Field(0.2, ge=0, le=2)  # seed 004 §4: low, for an accurate reading
    max_prompt_chars: int = Field(3000, ge=200)  # the brief as mutation prompts show it


class FirstProgramConfig(StrictModel):
    """A task with a problem statement but no initial program: an LLM writes the first program,
    which must pass the task's own evaluation before evolution starts."""

    attempts: int = Field(3, ge=1)  # each failed attempt's error is fed back to the next
    model: str | None = None  # label of an llm.models entry; default: the first model
    max_tokens: int = Field(3072, gt=0)
    temperature: float = Field(0.4, ge=0, le=2)


class DevicesConfig(StrictModel):
    """Accelerators each evaluation holds (cambrian/evaluate/devices.py)."""

    # GPUs per evaluation, passed as CUDA_VISIBLE_DEVICES; 0: evaluations see no GPU. An
    # evaluation holding one runs without the address-space limit (CUDA maps the device's
    # memory); evaluation.memory_limit_mb then bounds its resident size.
    gpu: int = Field(0, ge=0)
    # Concurrent evaluations may hold the same GPU (their timings then disturb each other);
    # otherwise evaluations wait for a free GPU and evolution.max_parallel_evaluations is
    # capped at the number of GPUs over `gpu`.
    share: bool = False
    # No GPU on this machine: "error" stops before the run starts; "cpu" evaluates without one
    # (the evaluator must then fall back to the CPU itself).
    fallback: Literal["error", "cpu"] = "error"


class EvaluationConfig(StrictModel):
    contract: Literal["auto", "module", "command"] = "auto"
    timeout_s: float = Field(120.0, gt=0)
    memory_limit_mb: int | None = Field(4096, gt=0)
    cpu_time_limit_s: float | None = Field(None, gt=0)
    max_output_bytes: int = Field(64_000, ge=1_000)
    extra_args: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    # The interpreter the evaluator runs under (a path, or a name on PATH), for an evaluator
    # needing packages Cambrian's own environment lacks; None: Cambrian's interpreter. The
    # sandbox lets the evaluation read that interpreter's installation.
    python: str | None = None
    # Evaluate in a warm interpreter forked per evaluation (cambrian/evaluate/warm_worker.py:
    # same containment, no interpreter start-up or re-import of the evaluator's packages).
    warm_worker: bool = True
    # A network namespace of its own: the evaluation reaches no network, not even this
    # machine's loopback services (the LLM server, the web UI), but its own loopback and the
    # "HOST:PORT" destinations of network_allow (a scorer service it scores against, say).
    isolate_network: bool = True
    network_allow: list[str] = Field(default_factory=list)
    # What one evaluation may add to its scratch folder (files it writes, in MB); over it, the
    # evaluation is killed and fails with status "disk". None: no quota.
    disk_limit_mb: int | None = Field(2048, gt=0)
    devices: DevicesConfig = Field(default_factory=DevicesConfig)
    # OpenEvolve's cascade (module contract): evaluate_stage1, then evaluate_stage2 when its
    # score reaches cascade_thresholds[0], then evaluate_stage3 past cascade_thresholds[1].
    # "auto": when the evaluator defines evaluate_stage1 (OpenEvolve's default is on).
    cascade: Literal["auto", "on", "off"] = "auto"
    cascade_thresholds: list[float] = Field(default_factory=lambda: [0.5, 0.75, 0.9])

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

    backend: Literal["local", "ray"] = "local"
    # "auto" (a cluster `ray start` runs on this machine) or the head's "HOST:PORT";
    # None starts a local cluster for the run and stops it afterwards.
    ray_address: str | None = None
    num_cpus: int | None = Field(None, ge=1)  # the local cluster's CPUs (default: all)
    cpus_per_evaluation: float = Field(1.0, gt=0)  # Ray CPUs a job (evaluation, case chunk) holds
    # Judged tasks: chunks one candidate's cases are split into (default: the cluster's job slots).
    case_chunks: int | None = Field(None, ge=1)
    max_retries: int = Field(3, ge=0)  # resubmissions of a job whose worker or node was lost
    # Node-local folder for task copies, compile/case caches and scratch folders
    # (default: TMPDIR/cambrian-ray on each node).
    worker_dir: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ExecutionConfig:
        if self.num_cpus is not None and self.ray_address is not None:
            raise ValueError("execution.num_cpus sizes the local cluster a run starts; it cannot "
                             "apply to the existing cluster at execution.ray_address")
        return self


class PromptConfig(StrictModel):
    reply_tokens_full: int = Field(1536, gt=0)
    reply_tokens_diff: int = Field(1024, gt=0)
    show_text_feedback: bool = True
    max_feedback_chars: int = Field(1500, ge=0)
    history_programs: int = Field(3, ge=0)  # lineage steps shown with the parent (0: none)
    # Changes the parent's last children tried without beating it, shown so they are not repeated.
    tried_ideas: int = Field(4, ge=0)
    context_margin_tokens: int = Field(64, ge=0)
    # After a refused reply: "continue" the conversation with the error (Reflexion, seed 000
    # §3.2) or "restart" from the original prompt with the error noted at its end. "auto"
    # restarts for local models, which tend to repeat their own refused reply verbatim.
    retry_style: Literal["auto", "continue", "restart"] = "auto"


class PromptEvolutionConfig(StrictModel):
    """Co-evolved system prompts (seed 002 §10.8): an archive of role prompts scored by the
    improvements of the programs they produced, sampled with UCB1, now and then rewritten by an
    LLM. Off by default: every new system prompt costs a small local model a full re-read of
    the prompt prefix it could otherwise reuse from its KV cache."""

    enabled: bool = False
    exploration: float = Field(1.0, ge=0)
    mutate_every: int = Field(10, ge=1)  # evaluations between LLM rewrites of the best prompt
    max_prompts: int = Field(6, ge=2)  # active archive size; the weakest tried prompt retires
    min_pulls_to_retire: int = Field(3, ge=1)
    model: str | None = None  # label of an llm.models entry; default: the first model
    max_tokens: int = Field(300, gt=0)


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

    deletion_filter: Literal["off", "penalise", "reject"] = "reject"
    reintroduction_threshold: float = Field(0.5, ge=0, lt=1)  # "mostly": more than half
    max_rejections: int = Field(2, ge=0)  # per generation, then the proposal is kept
    penalty: float = Field(0.5, ge=0, le=1)
    deletion_history_in_prompt: bool = True  # the parent's lineage deletions as a prompt note
    deletion_history_lines: int = Field(12, ge=1, le=100)
    tune_operator: bool = False
    tune_every: int = Field(10, ge=1)  # evaluated children between tune steps
    tune_budget: int = Field(8, ge=2, le=64)  # B.9 uses 24 per program; one step is smaller

    @field_validator("deletion_filter", mode="before")
    @classmethod
    def _yaml_switch(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` as false (and `on` as true).
        return {False: "off", True: "reject"}.get(value, value) if isinstance(value, bool) else value


class MLflowConfig(StrictModel):
    tracking_uri: str | None = None  # e.g. file:///path/mlruns; None: MLflow's own default
    experiment: str | None = None  # default: the task's name
    run_name: str | None = None  # default: the run folder's name


class WandbConfig(StrictModel):
    project: str | None = None  # default: the task's name
    entity: str | None = None
    mode: Literal["online", "offline", "disabled"] = "offline"
    dir: str | None = None  # default: the run folder
    run_name: str | None = None  # default: the run folder's name


class TrackingConfig(StrictModel):
    """Export of the run's scores, costs and events to experiment trackers (``cambrian/
    tracking/``; ``pip install 'cambrian[tracking]'``). Absent section: nothing is exported."""

    mlflow: MLflowConfig | None = None
    wandb: WandbConfig | None = None


class RunConfig(StrictModel):
    task: TaskConfig = Field(default_factory=TaskConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    mutation: MutationConfig = Field(default_factory=MutationConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    novelty: NoveltyConfig = Field(default_factory=NoveltyConfig)
    meta: MetaConfig = Field(default_factory=MetaConfig)
    reflection: ReflectionConfig = Field(default_factory=ReflectionConfig)  # self-reflection
    comprehension: ComprehensionConfig = Field(default_factory=ComprehensionConfig)
    first_program: FirstProgramConfig = Field(default_factory=FirstProgramConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    prompt_evolution: PromptEvolutionConfig = Field(default_factory=PromptEvolutionConfig)
    trace_feedback: TraceFeedbackConfig = Field(default_factory=TraceFeedbackConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    niches: NichesConfig = Field(default_factory=NichesConfig)  # strategy niches
    phases: PhasesConfig = Field(default_factory=PhasesConfig)  # search phases
    decomposition: DecompositionConfig = Field(default_factory=DecompositionConfig)
    # A judged (contest-style) task: compiled, run on generated test cases, scored per case.
    judge: JudgeConfig | None = None
