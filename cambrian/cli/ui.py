"""``cambrian ui``: watch, inspect and steer runs in the browser."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import typer

from cambrian.cli.app import app, console, fail
from cambrian.core.extras import MissingExtra, require_extra


def require_ui(feature: str) -> None:
    """Stop with one line naming the missing module when the ``ui`` extra is not installed
    (before anything is made: ``run --ui`` checks it before its run folder)."""
    try:
        require_extra("ui", feature)
    except MissingExtra as exc:
        fail(str(exc))


@app.command()
def ui(
    run_dirs: list[Path] | None = typer.Argument(
        None, help="Run folders, or folders holding runs (default: ./runs); ShinkaEvolve and "
                   "OpenEvolve outputs open too, read-only"),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to serve on; anything but "
                             "loopback needs --token"),
    port: int = typer.Option(8765, "--port", "-p"),
    token: str | None = typer.Option(None, "--token", help="Required from every browser "
                                     "(given once as ?token=...); default: a random one, "
                                     "in the address printed"),
    read_only: bool = typer.Option(False, "--read-only", help="No steering endpoints at all"),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in a browser"),
) -> None:
    """Serve the web UI: runs, overview, lineage tree, candidates, comparison, steering."""
    require_ui("the web UI (cambrian ui)")
    from cambrian.ui.server import build_server, url_of

    roots = list(run_dirs or [Path("runs")])
    missing = [str(p) for p in roots if not p.exists()]
    if missing:
        fail(f"no such folder: {', '.join(missing)}")
    try:
        server = build_server(roots, host=host, port=port, token=token, read_only=read_only)
    except ValueError as exc:
        fail(str(exc))
    address = url_of(server)
    mode = "  (read-only)" if read_only else ""
    console.print(f"Cambrian UI on {address}{mode}  — Ctrl-C to stop")
    if open_browser:
        webbrowser.open(address)
    server.run()


def reserve_ui_port(port: int) -> object:
    """``cambrian run --ui``: the UI's port, bound before the run folder is made; a port in
    use stops the command here (exit 2), before anything is written."""
    require_ui("the web UI (--ui)")
    from cambrian.ui.server import DEFAULT_HOST, reserve

    try:
        return reserve(DEFAULT_HOST, port)
    except OSError as exc:
        fail(f"the web UI cannot listen on port {port} ({exc.strerror or exc}); choose "
             "another with --ui-port")
    raise AssertionError("unreachable")


def start_beside_run(run_dir: Path, port: int, sock: object | None = None) -> object:
    """``cambrian run --ui``: the UI of this run on a background thread of the run's process
    (on ``sock``, the port ``reserve_ui_port`` bound)."""
    require_ui("the web UI (--ui)")
    from cambrian.ui.server import BackgroundServer, build_server

    try:
        server = BackgroundServer(build_server([run_dir], port=port),
                                  sock).start()  # type: ignore[arg-type]
    except (RuntimeError, OSError) as exc:
        raise UIStartFailed(f"the web UI could not start on port {port}: {exc}") from None
    console.print(f"Watch and steer this run at {server.url}")
    return server


class UIStartFailed(RuntimeError):
    """The web UI beside a run did not start."""


def keep_serving(server: object) -> None:
    """After the run: the UI stays up for a person at a terminal until Ctrl-C."""
    import sys
    import time

    if not sys.stdin.isatty():
        return
    console.print("The run has ended; the UI stays up until Ctrl-C.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()  # type: ignore[attr-defined]
