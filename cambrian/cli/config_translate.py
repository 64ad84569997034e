"""`cambrian config translate FILE [-o OUT]`: an OpenEvolve or ShinkaEvolve config file
(``config.yaml``, ``shinka*.yaml``, ``run_evo.py``) written as the Cambrian config it becomes,
with what was used and what was ignored as comments at its top."""

from __future__ import annotations

import textwrap
from pathlib import Path

import typer
import yaml

from cambrian.cli.app import console, fail
from cambrian.cli.config_group import config_app
from cambrian.config import ConfigError, build_config
from cambrian.task.peer_configs import PeerConfig, read_peer_config


def translated_text(peer: PeerConfig) -> str:
    """The Cambrian YAML of ``peer``, its report as comments."""
    lines = [f"# Cambrian config translated from {peer.peer}'s {peer.source_name}"]
    lines.append("# used:")
    lines.extend(f"#   {line}" for line in peer.used)
    if peer.ignored:
        lines.append("# ignored (see docs/from-openevolve.md, docs/from-shinkaevolve.md):")
        for line in textwrap.wrap(", ".join(peer.ignored), 92):
            lines.append(f"#   {line}")
    body = yaml.safe_dump(peer.layer, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(lines) + "\n" + body


@config_app.command("translate")
def translate_command(
    file: Path = typer.Argument(..., help="OpenEvolve config.yaml, ShinkaEvolve shinka*.yaml "
                                          "or run_evo.py"),
    out: Path | None = typer.Option(None, "--out", "-o", metavar="OUT",
                                    help="Write the Cambrian config here (default: print it)"),
) -> None:
    """Write the Cambrian equivalent of a peer's config file (used/ignored keys as comments)."""
    if not file.is_file():
        fail(f"no such file: {file}")
    try:
        peer = read_peer_config(file, file.parent)
        if peer is None:
            fail(f"{file} is not an OpenEvolve or ShinkaEvolve config (no keys of theirs); "
                 "a Cambrian config needs no translation")
        build_config([peer.layer])  # what is written must load as it is
    except ConfigError as exc:
        fail(str(exc))
    text = translated_text(peer)
    if out is None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)
        return
    if out.exists() and out.resolve() == file.resolve():
        fail(f"{out} is the file being translated; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    console.print(f"Wrote {out} ({len(peer.used)} settings used, {len(peer.ignored)} ignored); "
                  f"run it with: cambrian run {file.parent} -c {out}", markup=False)
