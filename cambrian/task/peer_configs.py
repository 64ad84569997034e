"""A peer's own configuration file: OpenEvolve's ``config.yaml`` or ShinkaEvolve's
``shinka*.yaml`` / ``run_evo.py`` (without those, the first by name of the folder's YAML files
whose keys are a peer's, e.g. ``config_phase_1.yaml``), recognised by the peer's own keys and
translated into a Cambrian config layer by the tables of ``peer_rules.py``.

A file is a peer's when it holds more of that peer's own top-level keys (and section shapes)
than of Cambrian's own sections: OpenEvolve's files may hold a key Cambrian also knows
(``circle_packing_with_artifacts`` has a top-level ``novelty:``), and a Cambrian config with one
mistyped section (``evaluator:``) is still Cambrian's, its unknown key named by the strict
validation. ShinkaEvolve's ``run_evo.py`` is read without running it (``shinka_script.py``); a
folder with both a ``shinka*.yaml`` and a ``run_evo.py`` gets both, the YAML file's settings
first. Every key is reported as used (``key -> cambrian.key``) or ignored, in one line
(:attr:`PeerConfig.note`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cambrian.config import ConfigError, RunConfig, deep_merge, read_config_file
from cambrian.task.peer_rules import (
    OPENEVOLVE_RULES,
    SHINKA_RULES,
    Put,
    Rule,
    Source,
)
from cambrian.task.shinka_script import find_run_script, read_run_script

OPENEVOLVE = "OpenEvolve"
SHINKA = "ShinkaEvolve"
# Top-level keys of OpenEvolve's Config (openevolve/config.py).
OPENEVOLVE_KEYS = frozenset({
    "max_iterations", "checkpoint_interval", "checkpoint_on_improvement", "log_level",
    "log_dir", "logger_prefix", "random_seed", "language", "file_suffix", "llm", "prompt",
    "database", "evaluator", "evolution_trace", "diff_based_evolution",
    "full_rewrite_probability", "allow_full_rewrites", "max_code_length",
    "enforce_evolve_blocks", "diff_pattern", "early_stopping_patience",
    "convergence_threshold", "early_stopping_metric", "max_tasks_per_child", "hierarchical",
})
# ...of which these are not Cambrian sections.
OPENEVOLVE_ONLY = OPENEVOLVE_KEYS - {"llm", "prompt", "database"}
# Top-level keys of ShinkaEvolve's run files (shinka.yaml, shinka_small.yaml, Hydra configs).
SHINKA_KEYS = frozenset({
    "evo_config", "db_config", "job_config", "max_evaluation_jobs", "max_proposal_jobs",
    "max_db_workers", "exp_name", "evaluate_function", "distributed_job_config", "verbose",
    "debug", "defaults", "results_dir",
})
SHINKA_ONLY = SHINKA_KEYS - {"defaults", "verbose", "debug", "results_dir"}
# Sections only a Cambrian config has.
CAMBRIAN_ONLY = frozenset(RunConfig.model_fields) - {"llm", "prompt", "database"}
_OPENEVOLVE_LLM = frozenset({"primary_model", "secondary_model", "api_base",
                             "primary_model_weight", "secondary_model_weight"})
CONFIG_FILE_NAMES = ("config.yaml", "config.yml")
SHINKA_FILE_NAMES = ("shinka.yaml", "shinka.yml", "shinka_small.yaml")
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class PeerConfig:
    peer: str  # "OpenEvolve" | "ShinkaEvolve"
    path: Path
    layer: dict[str, Any]  # a Cambrian config layer
    used: tuple[str, ...]  # "max_iterations -> evolution.generations (3)"
    ignored: tuple[str, ...]  # dotted keys (or "section.*") left out
    others: tuple[str, ...] = ()  # the folder's other peer run files, not read
    also: tuple[str, ...] = ()  # files read with it (run_evo.py beside shinka_small.yaml)

    @property
    def source_name(self) -> str:
        return " + ".join((self.path.name, *self.also))

    @property
    def note(self) -> str:
        """One line: what was translated and what was ignored."""
        used = ", ".join(self.used) if self.used else "nothing"
        ignored = "; ignored: " + ", ".join(self.ignored) if self.ignored else ""
        others = f" ({', '.join(self.others)}: not read)" if self.others else ""
        verb = "are" if self.also else "is"
        return f"{self.source_name} {verb} {self.peer}'s config{others}: used {used}{ignored}"


def _markers(data: Mapping[str, Any]) -> tuple[int, int, int]:
    """How many top-level keys speak for OpenEvolve, ShinkaEvolve and Cambrian."""
    keys = set(data)
    openevolve = len(keys & OPENEVOLVE_ONLY)
    llm, prompt = data.get("llm"), data.get("prompt")
    if isinstance(llm, Mapping) and (_OPENEVOLVE_LLM & set(llm) or any(
            isinstance(m, Mapping) and "name" in m and not {"provider", "model"} & set(m)
            for m in llm.get("models") or [])):
        openevolve += 1
    if isinstance(prompt, Mapping) and "system_message" in prompt:
        openevolve += 1
    return openevolve, len(keys & SHINKA_ONLY), len(keys & CAMBRIAN_ONLY)


def peer_kind(data: Mapping[str, Any]) -> str | None:
    """"OpenEvolve", "ShinkaEvolve" or None (a Cambrian config, or not recognisably a peer's):
    the side with more of its own keys. A tie is Cambrian's, so that a Cambrian config with a
    mistyped section (``evaluator:``) gets its strict error."""
    openevolve, shinka, cambrian = _markers(data)
    if shinka > cambrian and shinka >= openevolve:
        return SHINKA
    if openevolve > cambrian:
        return OPENEVOLVE
    return None


def find_config_file(task_dir: Path) -> Path | None:
    """config.yaml (Cambrian's or a peer's), else ShinkaEvolve's shinka.yaml, else the first
    by name of the folder's other YAML files that is a peer's run file, else a ShinkaEvolve
    ``run_evo.py`` that builds its configs."""
    for name in CONFIG_FILE_NAMES + SHINKA_FILE_NAMES:
        path = task_dir / name
        if path.is_file():
            return path
    found = peer_run_files(task_dir)
    if found:
        return found[0]
    script = find_run_script(task_dir)
    return script if script is not None and read_run_script(script) is not None else None


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


def read_peer_file(path: Path) -> tuple[str, dict[str, Any], list[str]] | None:
    """(peer, settings, keys not readable) of a peer's file; None when it is not a peer's."""
    if path.suffix == ".py":
        script = read_run_script(path)
        return (SHINKA, script.data, script.unreadable) if script is not None else None
    data = read_config_file(path)
    kind = peer_kind(data)
    return (kind, data, []) if kind is not None else None


def read_peer_config(path: Path, task_dir: Path) -> PeerConfig | None:
    """The translation of ``path`` (a file of ``task_dir``, or one given with ``-c``)."""
    read = read_peer_file(path)
    if read is None:
        return None
    kind, data, unreadable = read
    also: tuple[str, ...] = ()
    if kind == SHINKA and path.suffix != ".py":
        script_path = find_run_script(path.parent)
        script = read_run_script(script_path) if script_path is not None else None
        if script is not None:  # the script's settings first, the YAML file's over them
            data, unreadable, also = deep_merge(script.data, data), script.unreadable, (
                script.path.name,)
    rules = OPENEVOLVE_RULES if kind == OPENEVOLVE else SHINKA_RULES
    done = translate(data, Path(task_dir), rules)
    layer, used = done.layer, done.used
    ignored = ignored_keys(data, done.taken) + done.dropped + [
        f"{key} (not readable without running it)" for key in unreadable]
    others = tuple(other.name for other in peer_run_files(path.parent)
                   if other.name != path.name) \
        if path.parent.resolve() == Path(task_dir).resolve() else ()
    return PeerConfig(kind, path, layer, tuple(used), tuple(ignored), others, also)


def peer_layer(path: Path, task_dir: Path) -> tuple[dict[str, Any], PeerConfig | None]:
    """A config file given with ``-c`` as a layer: translated when it is a peer's."""
    peer = read_peer_config(Path(path), Path(task_dir))
    return (peer.layer, peer) if peer is not None else (read_config_file(Path(path)), None)


# --------------------------------------------------------------------------- translation


def _set(layer: dict[str, Any], dotted: str, value: Any) -> None:
    *sections, key = dotted.split(".")
    for section in sections:
        layer = layer.setdefault(section, {})
    layer[key] = value


def _fits(puts: list[Put]) -> bool:
    """Whether the values are in Cambrian's ranges (a peer may allow what Cambrian does not)."""
    trial: dict[str, Any] = {}
    for put in puts:
        if put.target is not None:
            _set(trial, put.target, put.value)
    try:
        RunConfig.model_validate(trial)
    except ValidationError:
        return False
    return True


@dataclass
class Translation:
    layer: dict[str, Any]  # the Cambrian config layer
    used: list[str]  # report lines: "key -> cambrian.key (value)"
    taken: set[str]  # the peer keys translated
    dropped: list[str]  # parts of translated values left out (a model of unknown provider)


def translate(data: Mapping[str, Any], task_dir: Path, rules: tuple[Rule, ...]) -> Translation:
    """``data`` under ``rules``: the layer, the report, the keys taken."""
    source = Source(data, task_dir)
    layer: dict[str, Any] = {}
    used: list[str] = []
    taken: set[str] = set()
    dropped: list[str] = []
    for rule in rules:
        puts = rule.apply(source)
        if not puts or not _fits(puts):
            continue
        present = [key for key in rule.sources if source.get(key) is not None]
        taken.update(present)
        for put in puts:
            if put.target is not None:
                _set(layer, put.target, put.value)
            dropped.extend(put.dropped)
        first = puts[0]
        shown = f" ({first.shown})" if first.shown else ""
        targets = ", ".join(p.target for p in puts if p.target is not None) or "honoured"
        used.append(f"{', '.join(present)} -> {targets}{shown}")
    return Translation(layer, used, taken, dropped)


def ignored_keys(data: Mapping[str, Any], taken: set[str]) -> list[str]:
    """Every source key not taken: a section none of whose keys was taken is "section.*", a
    partly used one names each key left out."""
    out: list[str] = []
    for key, value in data.items():
        if key in taken:
            continue
        if isinstance(value, Mapping) and value:
            inner = [f"{key}.{k}" for k in value if f"{key}.{k}" not in taken]
            if not inner:
                continue
            out.append(f"{key}.*" if len(inner) == len(value) else ", ".join(inner))
        else:
            out.append(key)
    return out


__all__ = ["OPENEVOLVE", "SHINKA", "PeerConfig", "Translation", "find_config_file", "peer_kind",
           "peer_layer", "peer_run_files", "read_peer_config", "read_peer_file", "translate"]
