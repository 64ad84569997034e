"""The configuration layers of a new run: the task folder's config (a peer's translated), the
``config`` given (a file given with ``-c`` may be a peer's too: it then replaces the folder's peer
file), and the overrides; of a resumed run: its stored configuration, a file given with ``-c``
(a peer's translated, its iterations counted on from what the run did), the overrides.

A peer's island settings become ``database.*`` keys, which only some search algorithms read;
when the run's algorithm is another (``--search hill-climb`` on an OpenEvolve folder), the
peer's ``database.*`` keys are dropped rather than refused: the person did not write them, and
the algorithm chosen has its own ``search.options``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.config import ConfigError, RunConfig, build_config
from cambrian.config.extras import fit_defaults_to_installed
from cambrian.search.registry import get_algorithm
from cambrian.task.folder import peer_config, task_config_layer
from cambrian.task.peer_configs import PeerConfig, peer_layer


@dataclass(frozen=True)
class Layers:
    layers: list[dict[str, Any]]
    peer_layers: tuple[int, ...]  # positions of the layers translated from a peer's file
    given_peer: PeerConfig | None  # the peer file given as ``config`` (``-c``), if one


def config_layers(task_dir: Path, config: RunConfig | dict[str, Any] | str | Path | None
                  ) -> Layers:
    """Defaults < the task's config < ``config``; a ``config`` file that is a peer's is
    translated and stands in for the folder's own peer file (``-c config_phase_2.yaml``
    instead of the folder's ``config_phase_1.yaml``)."""
    folder_peer = peer_config(Path(task_dir))
    own = task_config_layer(Path(task_dir))
    if isinstance(config, (str, Path)):
        layer, peer = peer_layer(Path(config), Path(task_dir))
        if peer is not None:
            kept = [] if folder_peer is not None else [own]
            return Layers([*kept, layer], (len(kept),), peer)
        return Layers([own, layer], (0,) if folder_peer is not None else (), None)
    layers = [own]
    if isinstance(config, RunConfig):
        layers.append(config.model_dump(exclude_unset=True))
    elif isinstance(config, dict):
        layers.append(config)
    return Layers(layers, (0,) if folder_peer is not None else (), None)


def resume_layers(stored: dict[str, Any], config: str | Path, task_dir: Path,
                  evaluated: int) -> Layers:
    """A resumed run's stored configuration with a file on top (``cambrian resume RUN -c
    FILE``): OpenEvolve's second phase continuing the first one's population. A peer's
    iterations or generations are more of them, as when the peer resumes from its checkpoint:
    the budget becomes the children evaluated so far plus the file's number."""
    layer, peer = peer_layer(Path(config), Path(task_dir))
    evolution = layer.get("evolution") if peer is not None else None
    if isinstance(evolution, dict) and isinstance(evolution.get("generations"), int):
        layer = {**layer, "evolution": {**evolution,
                                        "generations": evolution["generations"] + evaluated}}
    return Layers([stored, layer], (1,) if peer is not None else (), peer)


def build_layers(layers: Layers, overrides: list[str] | None) -> RunConfig:
    """The run's configuration, a peer's ``database.*`` keys left out where the chosen search
    algorithm does not read them."""
    config = build_config(layers.layers, overrides)
    try:
        spec = get_algorithm(config.search.algorithm)
    except (ConfigError, KeyError, LookupError):
        return fit_defaults_to_installed(config)  # the unknown name is reported by check_names
    read_keys = set(spec.database_keys) | {"num_islands"}
    trimmed = []
    changed = False
    for index, layer in enumerate(layers.layers):
        database = layer.get("database") if index in layers.peer_layers else None
        if isinstance(database, dict) and set(database) - read_keys:
            layer = {**layer, "database": {k: v for k, v in database.items() if k in read_keys}}
            changed = True
        trimmed.append(layer)
    if changed:
        config = build_config(trimmed, overrides)
    return fit_defaults_to_installed(config)


__all__ = ["Layers", "build_layers", "config_layers", "resume_layers"]
