"""What each OpenEvolve and ShinkaEvolve setting becomes in Cambrian: one table per peer.

A :class:`Rule` reads one or more of the peer's keys (dotted, as in its YAML files) and gives
the Cambrian settings they become; a value Cambrian cannot use as it is (a language it does not
know, a model whose provider is unknown, a number out of range) gives nothing and the key is
reported as ignored. ``IGNORED`` says why the keys no rule reads are left out. The translation
(``peer_configs.py``) and the migration guides (``peer_guide.py`` writes
``docs/from-openevolve.md`` and ``docs/from-shinkaevolve.md``) both come from these tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.lang.languages import language_by_name

# OpenEvolve's default prompt.system_message is a template name, not a message.
OPENEVOLVE_TEMPLATE_NAMES = frozenset({"system_message", "evaluator_system_message"})


@dataclass(frozen=True)
class Put:
    target: str | None  # a dotted Cambrian key; None: honoured as Cambrian works anyway
    value: Any = None
    shown: str | None = None  # how the report shows the value
    # A part of the peer's value left out (a model of an unknown provider), for the report.
    dropped: tuple[str, ...] = ()


class Source:
    """The peer's settings, read by dotted key, and the task folder they belong to."""

    def __init__(self, data: Mapping[str, Any], task_dir: Path) -> None:
        self.data = data
        self.task_dir = task_dir

    def get(self, dotted: str) -> Any:
        value: Any = self.data
        for part in dotted.split("."):
            if not isinstance(value, Mapping) or part not in value:
                return None
            value = value[part]
        return value


@dataclass(frozen=True)
class Rule:
    sources: tuple[str, ...]  # the peer's keys this rule reads
    becomes: str  # what the guide says they become
    apply: Callable[[Source], list[Put]]


# --------------------------------------------------------------------------- value helpers


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(source: str, target: str, minimum: int = 0) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return [Put(target, value, str(value))]
        return []
    return Rule((source,), f"`{target}`", apply)


def _float(source: str, target: str, unit: str = "") -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        return [Put(target, float(value), f"{value:g}{unit}")] if _number(value) else []
    return Rule((source,), f"`{target}`", apply)


def _flag(source: str, target: str) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        return [Put(target, value, str(value).lower())] if isinstance(value, bool) else []
    return Rule((source,), f"`{target}`", apply)


def _description(source: str) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        if (isinstance(value, str) and value.strip()
                and value.strip() not in OPENEVOLVE_TEMPLATE_NAMES):
            return [Put("task.description", value.strip())]
        return []
    return Rule((source,), "`task.description` (the task paragraph of every prompt's system "
                "message; also the problem statement when the folder has none)", apply)


def _language(source: str) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        if not isinstance(value, str) or not value.strip():
            return []
        try:
            language_by_name(value.strip().lower())
        except KeyError:
            return []  # a language Cambrian does not know: left in the ignored list
        return [Put("task.language", value.strip().lower(), value)]
    return Rule((source,), "`task.language` (when Cambrian knows the language)", apply)


# --------------------------------------------------------------------------- models

PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                 "gemini": "GEMINI_API_KEY"}
_NATIVE_BASES = {"api.openai.com": "openai", "generativelanguage.googleapis.com": "gemini",
                 "api.anthropic.com": "anthropic"}
_ENV_REFERENCE = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")
# ShinkaEvolve's own model names for a server: "local-<model>-http://host:port/v1".
_SHINKA_LOCAL = re.compile(r"^local-(.+?)-(https?://.+)$")


def provider_of(model: str) -> str | None:
    """The provider a model name belongs to, when its name says so."""
    name = model.lower().split("/")[-1]
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith("gemini"):
        return "gemini"
    if re.match(r"^(gpt-|o\d|chatgpt|text-)", name):
        return "openai"
    return None


def model_entry(model: str, api_base: str | None, api_key: Any = None) -> dict[str, Any] | None:
    """One ``llm.models`` entry for a peer's model, or None when its provider is unknown.

    An OpenAI-compatible server (any ``api_base`` that is not a provider's own API) is
    provider ``openai`` with that ``base_url``; else the provider follows the name. The key is
    never copied: ``api_key_env`` names the variable (the peer's ``${VAR}``, else the
    provider's usual one)."""
    if "/" in model and model.split("/")[0] in ("bedrock", "azure", "vertex_ai", "openrouter"):
        return None  # a gateway Cambrian has no provider for
    host = re.sub(r"^https?://", "", api_base or "").split("/")[0]
    native = _NATIVE_BASES.get(host) if api_base else None
    if api_base and native is None:
        entry: dict[str, Any] = {"provider": "openai", "model": model, "base_url": api_base}
    else:
        provider = provider_of(model) or native
        if provider is None:
            return None
        entry = {"provider": provider, "model": model}
        entry["api_key_env"] = PROVIDER_KEYS[provider]
    reference = _ENV_REFERENCE.match(api_key) if isinstance(api_key, str) else None
    if reference:
        entry["api_key_env"] = reference.group(1)
    return entry


def openevolve_entry(model: str, api_base: str | None, api_key: Any = None) -> dict[str, Any]:
    """OpenEvolve speaks OpenAI's protocol to every model, at ``api_base`` (OpenAI's own API by
    default), with the key in ``OPENAI_API_KEY`` unless ``api_key: ${VAR}`` names another:
    provider ``openai``, that ``base_url`` and that variable (a literal key is never copied)."""
    entry: dict[str, Any] = {"provider": "openai", "model": model,
                             "api_key_env": PROVIDER_KEYS["openai"]}
    host = re.sub(r"^https?://", "", api_base or "").split("/")[0]
    if api_base and host != "api.openai.com":
        entry["base_url"] = api_base
    reference = _ENV_REFERENCE.match(api_key) if isinstance(api_key, str) else None
    if reference:
        entry["api_key_env"] = reference.group(1)
    return entry


def _openevolve_models(s: Source) -> list[Put]:
    llm = s.get("llm")
    if not isinstance(llm, Mapping):
        return []
    listed: list[tuple[str, float, Mapping[str, Any]]] = []
    for item in llm.get("models") or []:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            weight = item.get("weight")
            listed.append((item["name"], float(weight) if _number(weight) else 1.0, item))
    if isinstance(llm.get("primary_model"), str):
        weight = llm.get("primary_model_weight")
        listed.append((llm["primary_model"], float(weight) if _number(weight) else 1.0, {}))
    if isinstance(llm.get("secondary_model"), str):
        weight = llm.get("secondary_model_weight")
        weight = float(weight) if _number(weight) else 0.2
        if weight > 0:
            listed.append((llm["secondary_model"], weight, {}))
    entries = []
    dropped = []
    for name, weight, own in listed:
        def setting(key: str, own: Mapping[str, Any] = own) -> Any:
            return own.get(key) if own.get(key) is not None else llm.get(key)
        if weight <= 0:
            dropped.append(f"{name} (weight {weight:g})")
            continue
        entry = openevolve_entry(name, setting("api_base"), setting("api_key"))
        entry["weight"] = weight
        if _number(setting("temperature")):
            entry["temperatures"] = [float(setting("temperature"))]
        if isinstance(setting("max_tokens"), int) and setting("max_tokens") > 0:
            entry["max_tokens"] = setting("max_tokens")
        if _number(setting("timeout")) and setting("timeout") > 0:
            entry["timeout_s"] = float(setting("timeout"))
        entries.append(entry)
    if not entries:
        return []
    if len({e["model"] for e in entries}) < len(entries):
        for index, entry in enumerate(entries):
            entry["name"] = f"{entry['model']}-{index + 1}"
    shown = ", ".join(f"{e['model']} x{e['weight']:g}" for e in entries)
    bases = sorted({e.get("base_url", "OpenAI") for e in entries})
    shown += f" at {', '.join(bases)}, key in {entries[0]['api_key_env']}"
    return [Put("llm.models", entries, shown, tuple(f"llm model {d}" for d in dropped))]


def _shinka_models(s: Source) -> list[Put]:
    models = s.get("evo_config.llm_models")
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not models:
        return []
    kwargs = s.get("evo_config.llm_kwargs")
    kwargs = kwargs if isinstance(kwargs, Mapping) else {}
    temperatures = kwargs.get("temperatures")
    if _number(temperatures):
        temperatures = [temperatures]
    entries = []
    dropped = []
    for model in models:
        if not isinstance(model, str):
            return []
        local = _SHINKA_LOCAL.match(model)
        entry = (model_entry(local.group(1), local.group(2)) if local
                 else model_entry(model, None))
        if entry is None:
            dropped.append(f"evo_config.llm_models {model} (no provider Cambrian knows)")
            continue
        if isinstance(temperatures, list) and temperatures and all(map(_number, temperatures)):
            entry["temperatures"] = [float(t) for t in temperatures]
        if isinstance(kwargs.get("max_tokens"), int) and kwargs["max_tokens"] > 0:
            entry["max_tokens"] = kwargs["max_tokens"]
        entries.append(entry)
    if not entries:
        return []
    shown = ", ".join(f"{e['provider']}:{e['model']}" for e in entries)
    return [Put("llm.models", entries, shown, tuple(dropped))]


# --------------------------------------------------------------------------- OpenEvolve


def _timeout(source: str) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        if _number(value) and value > 0:
            return [Put("evaluation.timeout_s", float(value), f"{value:g} s")]
        return []
    return Rule((source,), "`evaluation.timeout_s`", apply)


def _cascade(s: Source) -> list[Put]:
    value = s.get("evaluator.cascade_evaluation")
    return [Put("evaluation.cascade", "on" if value else "off")] if isinstance(value, bool) else []


def _thresholds(s: Source) -> list[Put]:
    value = s.get("evaluator.cascade_thresholds")
    if isinstance(value, list) and value and all(map(_number, value)):
        return [Put("evaluation.cascade_thresholds", [float(t) for t in value])]
    return []


def _diff_based(s: Source) -> list[Put]:
    value = s.get("diff_based_evolution")
    if not isinstance(value, bool):
        return []
    share = s.get("full_rewrite_probability")
    if value and s.get("allow_full_rewrites") is True and _number(share) and 0 < share < 1:
        return [Put("evolution.patch_types", ["diff", "full"], f"diff/full {1 - share:g}/{share:g}"),
                Put("evolution.patch_type_probs", [1.0 - float(share), float(share)])]
    kind = "diff" if value else "full"
    return [Put("evolution.patch_types", [kind], kind), Put("evolution.patch_type_probs", [1.0])]


def _early_metric(s: Source) -> list[Put]:
    value = s.get("early_stopping_metric")
    return [Put(None, shown="the score")] if value == "combined_score" else []


def _artifacts(s: Source) -> list[Put]:
    value = s.get("evaluator.enable_artifacts")
    return [Put(None, shown="artifacts are always fed back")] if value is True else []


def _llm_feedback(s: Source) -> list[Put]:
    value = s.get("evaluator.use_llm_feedback")
    if value is False:
        return [Put(None, shown="off")]
    if value is not True:
        return []
    weight = s.get("evaluator.llm_feedback_weight")
    weight = float(weight) if _number(weight) else 0.1  # OpenEvolve's default
    return [Put("evaluation.llm_feedback_weight", weight, f"{weight:g}")]


OPENEVOLVE_RULES: tuple[Rule, ...] = (
    _int("max_iterations", "evolution.generations"),
    _int("random_seed", "evolution.seed"),
    _language("language"),
    _description("prompt.system_message"),
    Rule(("llm.primary_model", "llm.primary_model_weight", "llm.secondary_model",
          "llm.secondary_model_weight", "llm.models", "llm.api_base", "llm.api_key",
          "llm.temperature", "llm.max_tokens", "llm.timeout"),
         "`llm.models`: one entry per model with its weight, temperature, reply budget and "
         "timeout, as OpenEvolve calls it: provider `openai` (OpenEvolve speaks OpenAI's "
         "protocol to every model), `api_base` as `base_url` (none for OpenAI's own API), "
         "the key in `OPENAI_API_KEY` or the variable `api_key: ${VAR}` names (a literal "
         "key is never copied)", _openevolve_models),
    _timeout("evaluator.timeout"),
    Rule(("evaluator.cascade_evaluation",), "`evaluation.cascade` (`on`/`off`)", _cascade),
    Rule(("evaluator.cascade_thresholds",), "`evaluation.cascade_thresholds`", _thresholds),
    _int("evaluator.parallel_evaluations", "evolution.max_parallel_evaluations", 1),
    _int("evaluator.memory_limit_mb", "evaluation.memory_limit_mb", 1),
    Rule(("evaluator.enable_artifacts",), "honoured: Cambrian always feeds an evaluator's "
         "artifacts back into the next prompt (`false` is listed as ignored)", _artifacts),
    Rule(("evaluator.use_llm_feedback", "evaluator.llm_feedback_weight"),
         "`evaluation.llm_feedback_weight` (OpenEvolve's default 0.1 when only "
         "`use_llm_feedback: true`): an LLM rates each correct program's code quality from 0 "
         "to 1 and the score becomes (1 - w) x the evaluator's score + w x the rating; both "
         "stay in the metrics (`evaluator_score`, `llm_quality`)", _llm_feedback),
    _int("database.num_islands", "database.num_islands", 1),
    _int("database.migration_interval", "database.migration_interval", 1),
    _float("database.migration_rate", "database.migration_rate"),
    _int("database.archive_size", "database.archive_size", 1),
    _float("database.elite_selection_ratio", "database.elite_ratio"),
    _int("prompt.num_top_programs", "database.top_k_inspirations"),
    _int("prompt.num_diverse_programs", "database.archive_inspirations"),
    Rule(("diff_based_evolution", "allow_full_rewrites", "full_rewrite_probability"),
         "`evolution.patch_types`: `true` is `[diff]` (with `allow_full_rewrites` and "
         "`full_rewrite_probability: p`, `[diff, full]` drawn 1-p / p), `false` `[full]` "
         "(whole-program rewrites)", _diff_based),
    _int("early_stopping_patience", "evolution.patience", 1),
    Rule(("early_stopping_metric",), "honoured when it is `combined_score` (Cambrian stops "
         "on the score)", _early_metric),
)

# --------------------------------------------------------------------------- ShinkaEvolve

_HMS = re.compile(r"^\s*(\d+):(\d{1,2}):(\d{1,2})\s*$")
_SELECTION = {"weighted": "weighted", "power_law": "power_law", "beam_search": "beam",
              "hill_climbing": "hill_climb", "uniform": "uniform"}


def _job_time(s: Source) -> list[Put]:
    value = s.get("job_config.time")
    match = _HMS.match(value) if isinstance(value, str) else None
    if not match:
        return []
    hours, minutes, seconds = (int(part) for part in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return [Put("evaluation.timeout_s", float(total), value)] if total > 0 else []


def _task_file(source: str, target: str) -> Rule:
    def apply(s: Source) -> list[Put]:
        value = s.get(source)
        if isinstance(value, str) and (s.task_dir / Path(value).name).is_file():
            return [Put(target, Path(value).name)]
        return []
    return Rule((source,), f"`{target}` (when the file is in the task folder)", apply)


def _cost(s: Source) -> list[Put]:
    value = s.get("evo_config.max_api_costs")
    if _number(value) and value > 0:
        return [Put("budget.max_cost_usd", float(value), f"${value:g}")]
    return []


def _patch_types(s: Source) -> list[Put]:
    types, probs = s.get("evo_config.patch_types"), s.get("evo_config.patch_type_probs")
    if not isinstance(types, list) or not types or not set(types) <= {"diff", "full", "cross"}:
        return []
    if not (isinstance(probs, list) and len(probs) == len(types) and all(map(_number, probs))):
        probs = [1.0 / len(types)] * len(types)
    return [Put("evolution.patch_types", list(types), "/".join(types)),
            Put("evolution.patch_type_probs", [float(p) for p in probs])]


def _selection(s: Source) -> list[Put]:
    value = s.get("db_config.parent_selection_strategy")
    if isinstance(value, str) and value in _SELECTION:
        return [Put("database.parent_selection", _SELECTION[value], value)]
    return []


def _dynamic_selection(s: Source) -> list[Put]:
    value = s.get("evo_config.llm_dynamic_selection")
    puts = []
    if value == "ucb1":
        puts.append(Put("llm.selection", "ucb1", "ucb1"))
    elif value is None and "llm_dynamic_selection" in (s.get("evo_config") or {}):
        puts.append(Put("llm.selection", "fixed", "none"))
    coefficient = s.get("evo_config.llm_dynamic_selection_kwargs.exploration_coef")
    if puts and _number(coefficient) and coefficient >= 0:
        puts.append(Put("llm.exploration", float(coefficient), f"{coefficient:g}"))
    return puts


def _parallel_jobs(s: Source) -> list[Put]:
    for key in ("max_evaluation_jobs", "evo_config.max_parallel_jobs"):
        value = s.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return [Put("evolution.max_parallel_evaluations", value, f"{value} from {key}")]
    return []


SHINKA_RULES: tuple[Rule, ...] = (
    _description("evo_config.task_sys_msg"),
    _int("evo_config.num_generations", "evolution.generations"),
    _int("seed", "evolution.seed"),
    _int("evo_config.seed", "evolution.seed"),
    _language("evo_config.language"),
    _task_file("evo_config.init_program_path", "task.initial_program"),
    _task_file("job_config.eval_program_path", "task.evaluator"),
    Rule(("job_config.time",), "`evaluation.timeout_s` (`HH:MM:SS`)", _job_time),
    Rule(("evo_config.max_api_costs",), "`budget.max_cost_usd`", _cost),
    Rule(("evo_config.llm_models", "evo_config.llm_kwargs"),
         "`llm.models`: one entry per model, the provider following the name (`gpt-*`/`o*` "
         "OpenAI, `claude-*` Anthropic, `gemini-*` Gemini, `local-NAME-URL` an "
         "OpenAI-compatible server at URL) with the provider's usual key variable; "
         "`llm_kwargs.temperatures` and `max_tokens` go to every entry. A model of an "
         "unknown provider (`bedrock/...`) is left out and named in the report (none "
         "known: Cambrian's own models stay)", _shinka_models),
    Rule(("evo_config.llm_dynamic_selection", "evo_config.llm_dynamic_selection_kwargs"),
         "`llm.selection` (`ucb1`; none: `fixed`) and `llm.exploration` "
         "(`exploration_coef`)", _dynamic_selection),
    Rule(("evo_config.patch_types", "evo_config.patch_type_probs"),
         "`evolution.patch_types` and `evolution.patch_type_probs`", _patch_types),
    _int("evo_config.max_patch_attempts", "evolution.max_patch_attempts", 1),
    _int("evo_config.max_patch_resamples", "evolution.max_patch_resamples", 1),
    Rule(("max_evaluation_jobs", "evo_config.max_parallel_jobs"),
         "`evolution.max_parallel_evaluations`", _parallel_jobs),
    _int("max_proposal_jobs", "evolution.max_proposals_in_flight", 1),
    _int("db_config.num_islands", "database.num_islands", 1),
    _int("db_config.archive_size", "database.archive_size", 1),
    _float("db_config.elite_selection_ratio", "database.elite_ratio"),
    _int("db_config.num_archive_inspirations", "database.archive_inspirations"),
    _int("db_config.num_top_k_inspirations", "database.top_k_inspirations"),
    _int("db_config.migration_interval", "database.migration_interval", 1),
    _float("db_config.migration_rate", "database.migration_rate"),
    _flag("db_config.island_elitism", "database.island_elitism"),
    Rule(("db_config.parent_selection_strategy",), "`database.parent_selection` (`weighted`, "
         "`power_law`, `beam_search` -> `beam`, `hill_climbing` -> `hill_climb`)", _selection),
    _float("db_config.parent_selection_lambda", "database.parent_selection_lambda"),
    _float("db_config.exploitation_alpha", "database.power_law_alpha"),
    _int("db_config.num_beams", "database.num_beams", 1),
    _int("evo_config.meta_rec_interval", "meta.interval", 1),
    _float("evo_config.code_embed_sim_threshold", "novelty.threshold"),
    _int("evo_config.max_novelty_attempts", "novelty.max_attempts"),
    _flag("evo_config.evolve_prompts", "prompt_evolution.enabled"),
    _int("evo_config.prompt_evolution_interval", "prompt_evolution.mutate_every", 1),
    _int("evo_config.prompt_archive_size", "prompt_evolution.max_prompts", 2),
    _float("evo_config.prompt_ucb_exploration_constant", "prompt_evolution.exploration"),
)

# --------------------------------------------------------------------------- left out, and why

_LOGS = "logging and output folders: Cambrian's run folder holds everything"
_STORE = "Cambrian commits every evaluation to its store; `cambrian resume` continues"
_MODELS = "side models: Cambrian's side tasks use `llm.models` (or their own `model:` label)"

OPENEVOLVE_IGNORED: dict[str, str] = {
    "checkpoint_interval": _STORE, "checkpoint_on_improvement": _STORE,
    "log_level": _LOGS, "log_dir": _LOGS, "logger_prefix": _LOGS,
    "file_suffix": "the initial program's own suffix is used",
    "evolution_trace": "every run is a trace already (`cambrian trace export`)",
    "max_code_length": "no length cap; the prompt fits the model's window",
    "enforce_evolve_blocks": "Cambrian always keeps code outside EVOLVE-BLOCKs fixed",
    "diff_pattern": "Cambrian's diff format is its own",
    "convergence_threshold": "Cambrian counts any gain of the best score as progress",
    "max_tasks_per_child": "each evaluation runs in a fresh (or forked) process",
    "hierarchical": "no equivalent",
    "llm.system_message": "see `prompt.system_message`",
    "llm.evaluator_models": "the rating model is `evaluation.llm_feedback_model` (default: "
                            "the first of `llm.models`)",
    "llm.top_p": "not sent", "llm.retries": "`llm.retries.max_attempts`, Cambrian's own default",
    "llm.retry_delay": "as above", "llm.reasoning_effort": "not sent",
    "llm.random_seed": "not sent",
    "prompt.template_dir": "Cambrian's prompts are its own",
    "prompt.evaluator_system_message": "as above",
    "prompt.use_template_stochasticity": "as above", "prompt.template_variations": "as above",
    "prompt.use_meta_prompting": "`prompt_evolution.enabled` is Cambrian's (off by default)",
    "prompt.include_artifacts": "artifacts are always shown",
    "database.population_size": "an island keeps its archive (`database.archive_size`)",
    "database.db_path": _STORE, "database.in_memory": _STORE, "database.log_prompts": _STORE,
    "database.feature_dimensions": "`search.algorithm: openevolve` with "
                                   "`search.options.features`",
    "database.feature_bins": "as above",
    "database.exploration_ratio": "`search.algorithm: openevolve` options",
    "database.exploitation_ratio": "as above",
    "evaluator.max_retries": "a failed evaluation is the program's failure",
    "evaluator.distributed": "`execution.backend: ray`",
}

SHINKA_IGNORED: dict[str, str] = {
    "exp_name": _LOGS, "results_dir": _LOGS, "evo_config.results_dir": _LOGS,
    "verbose": _LOGS, "debug": _LOGS, "defaults": "Hydra's composition: give the composed "
    "file", "max_db_workers": "one store writer", "evaluate_function": "the evaluator is "
    "`evaluate.py` (or `task.evaluator`)",
    "evo_config.job_type": "`execution.backend`", "job_config.conda_env": "`evaluation.python`",
    "evo_config.llm_kwargs.reasoning_efforts": "not sent",
    "evo_config.meta_llm_models": _MODELS, "evo_config.meta_llm_kwargs": _MODELS,
    "evo_config.novelty_llm_models": _MODELS, "evo_config.novelty_llm_kwargs": _MODELS,
    "evo_config.embedding_model": "`novelty.embedding` (a local model by default)",
    "db_config.db_path": _STORE,
    "db_config.archive_selection_strategy": "the archive keeps the best by score",
    "db_config.archive_criteria": "as above",
    "db_config.enable_dynamic_islands": "no equivalent", "db_config.stagnation_threshold":
    "no equivalent", "db_config.island_spawn_strategy": "no equivalent",
    "db_config.island_spawn_subtree_size": "no equivalent",
    "db_config.island_selection_strategy": "islands are drawn uniformly",
    "db_config.enforce_island_separation": "inspirations come from the parent's island",
    "db_config.exploitation_ratio": "the power law draws from the whole island",
    "db_config.max_stdout_log_chars": _STORE,
}

__all__ = ["OPENEVOLVE_IGNORED", "OPENEVOLVE_RULES", "PROVIDER_KEYS", "Put", "Rule",
           "SHINKA_IGNORED", "SHINKA_RULES", "Source", "model_entry", "openevolve_entry",
           "provider_of"]
