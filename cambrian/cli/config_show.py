"""`cambrian config show TASK [-c FILE] [--set k=v]`: the configuration a run of TASK would get,
one setting a line, each with where its value came from (default, the task folder's config,
the file given with -c, a --set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from cambrian.api.runs import resolve_config
from cambrian.cli.app import SetOption, console, fail
from cambrian.cli.config_group import config_app
from cambrian.config import ConfigError, read_config_file
from cambrian.config.provenance import DEFAULT, Layer, override_layers, provenance
from cambrian.task.folder import peer_config, task_config_layer
from cambrian.task.peer_configs import find_config_file, read_peer_config


def _label(kind: str, path: Path, peer: str | None) -> str:
    return f"{kind} {path}" + (f" ({peer}'s, translated)" if peer else "")


def labeled_layers(task_dir: Path, config: Path | None, overrides: list[str]) -> list[Layer]:
    """The layers `cambrian run TASK -c FILE --set ...` builds its configuration from, in
    order, each with a label. A peer's file given with -c stands in for the folder's own peer
    file, as in a run."""
    layers: list[Layer] = []
    given = read_peer_config(config, task_dir) if config is not None else None
    own_file = find_config_file(task_dir)
    own_peer = peer_config(task_dir)
    if own_file is not None and not (given is not None and own_peer is not None):
        layers.append(Layer(_label("task config", own_file,
                                   own_peer.peer if own_peer else None),
                            task_config_layer(task_dir)))
    if config is not None:
        layers.append(Layer(_label("file", config, given.peer if given else None),
                            given.layer if given is not None else read_config_file(config)))
    return [*layers, *override_layers(overrides)]


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value if value and value.strip() == value and "\n" not in value else repr(value)
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix(
        "\n...").removesuffix("...").strip()


@config_app.command("show")
def show_command(
    task_dir: Path = typer.Argument(..., help="Task folder"),
    config: Path | None = typer.Option(None, "--config", "-c", metavar="FILE",
                                       help="YAML config file, as given to `cambrian run`"),
    overrides: list[str] | None = SetOption,
    changed: bool = typer.Option(False, "--changed",
                                 help="Only the settings that are not the built-in default"),
) -> None:
    """Print the effective configuration of a run of TASK_DIR, with where each value came
    from: default, the task folder's config, the file given with -c, or a --set."""
    if not task_dir.is_dir():
        fail(f"no such task folder: {task_dir}")
    if config is not None and not config.is_file():
        fail(f"no such config file: {config}")
    overrides = list(overrides or [])
    try:
        effective = resolve_config(task_dir, config, overrides)
        settings = provenance(effective, labeled_layers(task_dir, config, overrides))
    except ConfigError as exc:
        fail(str(exc))
    shown = [s for s in settings if not (changed and s.source == DEFAULT)]
    width = min(60, max((len(s.key) + 2 + len(_shown(s.value)) for s in shown), default=0))
    for setting in shown:
        line = f"{setting.key}: {_shown(setting.value)}"
        source = setting.source + (" (a ${VAR} reference)" if setting.from_environment
                                   else "")
        console.print(f"{line.ljust(width)}  # {source}", markup=False, highlight=False)
