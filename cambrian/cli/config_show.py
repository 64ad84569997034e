"""`cambrian config show TASK [-c FILE] [--set k=v]`: the configuration a run of TASK would get,
one setting a line, each with where its value came from (default, the task folder's config,
the file given with -c, a --set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from cambrian.api.config_layers import config_layers
from cambrian.api.runs import resolve_config
from cambrian.cli.app import SetOption, console, fail
from cambrian.cli.config_group import config_app
from cambrian.config import ConfigError
from cambrian.config.provenance import DEFAULT, Layer, override_layers, provenance
from cambrian.task.folder import peer_config
from cambrian.task.peer_configs import find_config_file


def labeled_layers(task_dir: Path, config: Path | None, overrides: list[str]) -> list[Layer]:
    """The layers `cambrian run TASK -c FILE --set ...` builds its configuration from
    (``api/config_layers.py``: a peer's file given with -c stands in for the folder's own peer
    file), in order, each with a label."""
    built = config_layers(task_dir, config)
    own_file = find_config_file(task_dir)
    own_peer = peer_config(task_dir)
    labels = []
    if config is None or len(built.layers) == 2:
        own = f"task config {own_file}" if own_file is not None else "task config (none)"
        labels.append(own + (f" ({own_peer.peer}'s, translated)" if own_peer else ""))
    if config is not None:
        peer = built.given_peer
        labels.append(f"file {config}" + (f" ({peer.peer}'s, translated)" if peer else ""))
    return [*(Layer(label, layer) for label, layer in zip(labels, built.layers, strict=True)),
            *override_layers(overrides)]


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
