"""Serving the UI with uvicorn: in the foreground (``cambrian ui``) or on a background thread
beside a run (``cambrian run --ui``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import uvicorn

from cambrian.ui.app import create_app
from cambrian.ui.runs import RunCatalog
from cambrian.ui.security import check_bind, new_token

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def build_server(roots: Iterable[Path], *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 token: str | None = None, read_only: bool = False,
                 cache_dir: Path | None = None) -> uvicorn.Server:
    """The UI's server; every request must carry ``token`` (a random one when None; only on
    loopback: any other address needs a token chosen by the person serving it)."""
    check_bind(host, token)
    app = create_app(RunCatalog(roots, cache_dir), read_only=read_only,
                     token=token or new_token())
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=2)
    return uvicorn.Server(config)


def token_of(server: uvicorn.Server) -> str:
    return str(server.config.app.state.token)


def url_of(server: uvicorn.Server, path: str = "/", with_token: bool = True) -> str:
    """The address to open: with the token (one click sets the browser's cookie)."""
    config = server.config
    port = config.port
    if server.started and server.servers:  # port 0: the one the system chose
        port = server.servers[0].sockets[0].getsockname()[1]
    host = config.host if ":" not in config.host else f"[{config.host}]"
    return f"http://{host}:{port}{path}" + (f"?token={token_of(server)}" if with_token else "")


def reserve(host: str, port: int) -> socket.socket:
    """Bind the UI's address now (``cambrian run --ui`` does it before it makes a run folder,
    so a port in use costs nothing); raises OSError naming why it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class BackgroundServer:
    """The UI on a daemon thread (uvicorn installs no signal handlers off the main thread)."""

    def __init__(self, server: uvicorn.Server, sock: socket.socket | None = None) -> None:
        """``sock``: a socket already bound to the server's address (``reserve``)."""
        self.server = server
        self.thread = threading.Thread(target=server.run, name="cambrian-ui", daemon=True,
                                       kwargs={"sockets": [sock]} if sock is not None else {})

    def start(self, timeout_s: float = 15.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web UI did not start (is the port taken?)")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        """The address to open, with the token."""
        return url_of(self.server)

    @property
    def base(self) -> str:
        """The address without the token (what a browser holding the cookie opens)."""
        return url_of(self.server, with_token=False).rstrip("/")

    @property
    def token(self) -> str:
        return token_of(self.server)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
