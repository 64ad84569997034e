"""A peer's own configuration file in a task folder: OpenEvolve's ``config.yaml`` or
ShinkaEvolve's ``shinka*.yaml`` (without those, the first by name of the folder's YAML files
whose keys are a peer's, e.g. ``config_phase_1.yaml``), recognised by their distinctive keys and
translated into a Cambrian config layer.

Only settings whose meaning is the same in Cambrian are carried over: the system message
(-> ``task.description``), the evaluator's time limit, the seed, the language, the number of
iterations or generations, OpenEvolve's cascade and ShinkaEvolve's initial program and cost cap.
Everything else is named in one line (:attr:`PeerConfig.note`); the peers' ``llm.models`` are
never mapped onto a model of Cambrian's, since that would silently change which model runs.

A file whose top-level keys are not all the peer's own is not treated as the peer's: Cambrian's
strict validation then names the unknown key, as for any Cambrian config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.config import ConfigError, RunConfig, read_config_file
from cambrian.lang.languages import language_by_name

# Top-level keys of OpenEvolve's Config (openevolve/config.py).
OPENEVOLVE_KEYS = frozenset({
    "max_iterations", "checkpoint_interval", "checkpoint_on_improvement", "log_level",
    "log_dir", "logger_prefix", "random_seed", "language", "file_suffix", "llm", "prompt",
    "database", "evaluator", "evolution_trace", "diff_based_evolution",
    "full_rewrite_probability", "allow_full_rewrites", "max_code_length",
    "enforce_evolve_blocks", "diff_pattern", "early_stopping_patience",
    "convergence_threshold", "early_stopping_metric", "max_tasks_per_child",
})
# ...of which these are not Cambrian sections: one of them must be there.
OPENEVOLVE_ONLY = OPENEVOLVE_KEYS - {"llm", "prompt", "database"}
# Top-level keys of ShinkaEvolve's run files (shinka.yaml, shinka_small.yaml, Hydra configs).
SHINKA_KEYS = frozenset({
    "evo_config", "db_config", "job_config", "max_evaluation_jobs", "max_proposal_jobs",
    "max_db_workers", "exp_name", "evaluate_function", "distributed_job_config", "verbose",
    "debug", "defaults", "results_dir",
})
SHINKA_ONLY = SHINKA_KEYS - {"defaults", "verbose", "debug", "results_dir"}
# Sections only a Cambrian config has: a file with one of them is Cambrian's, strictly checked.
CAMBRIAN_ONLY = frozenset(RunConfig.model_fields) - {"llm", "prompt", "database"}
# OpenEvolve's default prompt.system_message is a template name, not a message.
OPENEVOLVE_TEMPLATE_NAMES = frozenset({"system_message", "evaluator_system_message"})
CONFIG_FILE_NAMES = ("config.yaml", "config.yml")
SHINKA_FILE_NAMES = ("shinka.yaml", "shinka.yml", "shinka_small.yaml")
# Without one of those, any other YAML file of the folder whose keys are a peer's is its run
# file (OpenEvolve's circle packing has config_phase_1/2.yaml, ShinkaEvolve's shinka_long.yaml,
# shinka_medium.yaml...): the first by name is read, the others are named in the note.
YAML_SUFFIXES = (".yaml", ".yml")
MAX_KEYS_NAMED = 4  # of one section, in the note; more are "section.* but those used"
MODELS_NOT_CARRIED = "models are not carried over: Cambrian uses its own llm.models"


@dataclass(frozen=True)
class PeerConfig:
    peer: str  # "OpenEvolve" | "ShinkaEvolve"
    path: Path
    layer: dict[str, Any]  # a Cambrian config layer
    used: tuple[str, ...]  # "max_iterations -> evolution.generations"
    ignored: tuple[str, ...]  # dotted keys (or "section.*") left out
    others: tuple[str, ...] = ()  # the folder's other peer run files, not read

    @property
    def note(self) -> str:
        """One line: what was translated and what was ignored."""
        used = ", ".join(self.used) if self.used else "nothing"
        ignored = "; ignored: " + ", ".join(self.ignored) if self.ignored else ""
        others = f" ({', '.join(self.others)}: not read)" if self.others else ""
        return f"{self.path.name} is {self.peer}'s config{others}: used {used}{ignored}"


def peer_kind(data: Mapping[str, Any]) -> str | None:
    """"OpenEvolve", "ShinkaEvolve" or None (a Cambrian config, or not recognisably a peer's).
    A peer's file holds one of its own distinctive keys and no section only Cambrian has (the
    peers ignore keys they do not know, so their files may hold such keys too)."""
    keys = set(data)
    if keys & CAMBRIAN_ONLY:
        return None
    if keys & OPENEVOLVE_ONLY and not keys & SHINKA_ONLY:
        return "OpenEvolve"
    if keys & SHINKA_ONLY:
        return "ShinkaEvolve"
    if keys and keys <= {"llm", "prompt", "database"} and _openevolve_sections(data):
        return "OpenEvolve"
    return None


def _openevolve_sections(data: Mapping[str, Any]) -> bool:
    """A config of only OpenEvolve's shared section names, in OpenEvolve's shape."""
    llm, prompt = data.get("llm"), data.get("prompt")
    llm_keys = {"primary_model", "secondary_model", "api_base", "primary_model_weight"}
    return ((isinstance(llm, dict) and bool(llm_keys & set(llm)))
            or (isinstance(prompt, dict) and "system_message" in prompt))


def find_config_file(task_dir: Path) -> Path | None:
    """config.yaml (Cambrian's or a peer's), else ShinkaEvolve's shinka.yaml, else the first
    by name of the folder's other YAML files that is a peer's run file."""
    for name in CONFIG_FILE_NAMES + SHINKA_FILE_NAMES:
        path = task_dir / name
        if path.is_file():
            return path
    found = peer_run_files(task_dir)
    return found[0] if found else None


def peer_run_files(task_dir: Path) -> list[Path]:
    """The folder's YAML files whose keys are OpenEvolve's or ShinkaEvolve's, by name."""
    found = []
    for path in sorted(task_dir.iterdir()) if task_dir.is_dir() else []:
        if path.suffix not in YAML_SUFFIXES or not path.is_file():
            continue
        try:
            data = read_config_file(path)
        except ConfigError:
            continue  # not a mapping, not YAML: not a run file of a peer
        if peer_kind(data) is not None:
            found.append(path)
    return found


def read_peer_config(path: Path, task_dir: Path) -> PeerConfig | None:
    data = read_config_file(path)
    kind = peer_kind(data)
    if kind is None:
        return None
    translate = _translate_openevolve if kind == "OpenEvolve" else _translate_shinka
    layer, used, ignored = translate(data, task_dir)
    others = tuple(other.name for other in peer_run_files(task_dir) if other.name != path.name)
    return PeerConfig(kind, path, layer, tuple(used), tuple(ignored), others)


# --------------------------------------------------------------------------- translation


class _Layer:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.layer: dict[str, Any] = {}
        self.used: list[str] = []
        self.taken: set[str] = set()  # dotted source keys translated (or deliberately dropped)

    def get(self, dotted: str) -> Any:
        value: Any = self.data
        for part in dotted.split("."):
            if not isinstance(value, Mapping) or part not in value:
                return None
            value = value[part]
        return value

    def put(self, source: str, target: str, value: Any, shown: Any = None) -> None:
        section, key = target.split(".")
        self.layer.setdefault(section, {})[key] = value
        self.taken.add(source)
        self.used.append(f"{source} -> {target}" + ("" if shown is None else f" ({shown})"))

    def ignored(self, dropped_note: Mapping[str, str] = {}) -> list[str]:
        """Every source key not taken, grouped: a section none of whose keys was taken is
        "section.*"; a note explains a few (the models)."""
        out: list[str] = []
        for key, value in self.data.items():
            if key in self.taken:
                continue
            if isinstance(value, Mapping) and value:
                inner = [f"{key}.{k}" for k in value if f"{key}.{k}" not in self.taken]
                if not inner:
                    continue
                if len(inner) == len(value):
                    label = f"{key}.*"
                elif len(inner) <= MAX_KEYS_NAMED:
                    label = ", ".join(inner)
                else:
                    label = f"{key}.* but those used"
            else:
                label = key
            note = dropped_note.get(key)
            out.append(f"{label} ({note})" if note else label)
        return out


def _take_int(layer: _Layer, source: str, target: str, minimum: int = 0) -> None:
    value = layer.get(source)
    if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
        layer.put(source, target, value, value)


def _take_language(layer: _Layer, source: str) -> None:
    value = layer.get(source)
    if not isinstance(value, str) or not value.strip():
        return
    try:
        language_by_name(value.strip().lower())
    except KeyError:
        return  # left in the ignored list: a language Cambrian does not know
    layer.put(source, "task.language", value.strip().lower(), value)


def _take_description(layer: _Layer, source: str) -> None:
    value = layer.get(source)
    if isinstance(value, str) and value.strip() and value.strip() not in OPENEVOLVE_TEMPLATE_NAMES:
        layer.put(source, "task.description", value.strip())


def _translate_openevolve(data: Mapping[str, Any],
                          task_dir: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    layer = _Layer(data)
    _take_description(layer, "prompt.system_message")
    timeout = layer.get("evaluator.timeout")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        layer.put("evaluator.timeout", "evaluation.timeout_s", float(timeout), f"{timeout:g} s")
    _take_int(layer, "random_seed", "evolution.seed")
    _take_language(layer, "language")
    _take_int(layer, "max_iterations", "evolution.generations")
    cascade = layer.get("evaluator.cascade_evaluation")
    if isinstance(cascade, bool):
        layer.put("evaluator.cascade_evaluation", "evaluation.cascade", "on" if cascade else "off")
    thresholds = layer.get("evaluator.cascade_thresholds")
    if (isinstance(thresholds, list) and thresholds
            and all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in thresholds)):
        layer.put("evaluator.cascade_thresholds", "evaluation.cascade_thresholds",
                  [float(t) for t in thresholds])
    return layer.layer, layer.used, layer.ignored({"llm": MODELS_NOT_CARRIED})


_HMS = re.compile(r"^\s*(\d+):(\d{1,2}):(\d{1,2})\s*$")


def _translate_shinka(data: Mapping[str, Any],
                      task_dir: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    layer = _Layer(data)
    _take_description(layer, "evo_config.task_sys_msg")
    time_limit = layer.get("job_config.time")
    match = _HMS.match(time_limit) if isinstance(time_limit, str) else None
    if match:
        hours, minutes, seconds = (int(part) for part in match.groups())
        total = hours * 3600 + minutes * 60 + seconds
        if total > 0:
            layer.put("job_config.time", "evaluation.timeout_s", float(total), time_limit)
    _take_int(layer, "seed", "evolution.seed")
    _take_int(layer, "evo_config.seed", "evolution.seed")
    _take_language(layer, "evo_config.language")
    _take_int(layer, "evo_config.num_generations", "evolution.generations")
    initial = layer.get("evo_config.init_program_path")
    if isinstance(initial, str) and (task_dir / Path(initial).name).is_file():
        layer.put("evo_config.init_program_path", "task.initial_program", Path(initial).name)
    cost = layer.get("evo_config.max_api_costs")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
        layer.put("evo_config.max_api_costs", "budget.max_cost_usd", float(cost), f"${cost:g}")
    models = {"evo_config": MODELS_NOT_CARRIED} if layer.get("evo_config.llm_models") else {}
    return layer.layer, layer.used, layer.ignored(models)


__all__ = ["PeerConfig", "find_config_file", "peer_kind", "peer_run_files", "read_peer_config"]
