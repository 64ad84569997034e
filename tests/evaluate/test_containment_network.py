"""The network an evaluation reaches: by default none, not even this machine's loopback services
(the LLM server, the run's live feed and web UI); with `evaluation.network_allow`, exactly the
destinations it names, through the sandbox shim's forwarder (`net_relay.py`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.scripted_llm import ScriptedLLM, incrementing

from cambrian.config.loading import build_config
from cambrian.core.errors import ConfigError
from cambrian.evaluate.containment import ContainmentPolicy
from cambrian.evaluate.factory import build_evaluator
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.search.live_feed import LivePublisher, read_address
from cambrian.store.store import Store
from cambrian.task.folder import load_task

# The evaluator runs the candidate, which tries every address it is given and prints a JSON
# line of what it got; the score is the number of addresses it reached.
EVALUATOR = """
import importlib.util, json

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"combined_score": float(sum(1 for got in module.GOT.values() if got["reached"])),
            "got": module.GOT}
"""

CANDIDATE = """
import json, socket, urllib.request
TARGETS = {targets!r}
GOT = {{}}
for name, (host, port, path) in TARGETS.items():
    try:
        if path is None:
            with socket.create_connection((host, port), timeout=5) as sock:
                GOT[name] = {{"reached": True, "body": ""}}
        else:
            request = urllib.request.Request(f"http://{{host}}:{{port}}{{path}}",
                data=json.dumps({{"model": "m", "messages": [{{"role": "user", "content": "hi"}}]}}).encode(),
                headers={{"content-type": "application/json"}})
            GOT[name] = {{"reached": True, "body": urllib.request.urlopen(request, timeout=5).read().decode()}}
    except OSError as error:
        GOT[name] = {{"reached": False, "errno": getattr(error, "errno", None) or getattr(getattr(error, "reason", None), "errno", None), "error": str(error)}}
print("GOT " + json.dumps(GOT))
"""


class _Text(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.text.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def text_server(text: str, host: str = "127.0.0.1") -> Iterator[int]:
    """An HTTP server answering `text` to everything, on a free port of `host`."""
    server = ThreadingHTTPServer((host, 0), _Text)
    server.daemon_threads = True
    server.text = text  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def scorer() -> Iterator[int]:
    with text_server("the scorer's answer") as port:
        yield port


@pytest.fixture
def other_service() -> Iterator[int]:
    with text_server("another service") as port:
        yield port


async def evaluate_with_config(tmp_path: Path, overrides: list[str],
                               targets: dict[str, tuple[str, int, str | None]]) -> Any:
    """Evaluates CANDIDATE (trying `targets`) through the evaluator the run's config builds."""
    task_dir = tmp_path / "task"
    task_dir.mkdir(exist_ok=True)
    (task_dir / "initial.py").write_text("# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n")
    (task_dir / "evaluate.py").write_text(EVALUATOR)
    config = build_config([], overrides)
    store = Store.open(tmp_path / "run", create=True)
    try:
        evaluator = build_evaluator(load_task(task_dir, config), config, tmp_path / "run", store)
        try:
            return await evaluator.evaluate(CANDIDATE.format(targets=targets), tmp_path / "work")
        finally:
            await evaluator.close()
    finally:
        store.close()


def got(result: Any) -> dict[str, dict[str, Any]]:
    line = next(line for line in result.stdout.splitlines() if line.startswith("GOT "))
    return json.loads(line.removeprefix("GOT "))


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
async def test_by_default_an_evaluation_reaches_no_loopback_service(
        tmp_path: Path, require_containment: Any, warm: bool) -> None:
    """The holes of issue 27: with default settings a candidate got a completion from the
    run's LLM server and reached the run's live feed on loopback."""
    require_containment("network_namespace")
    run_dir = tmp_path / "feed-run"
    run_dir.mkdir()
    with ScriptedLLM(incrementing) as llm, LivePublisher(run_dir):
        feed = read_address(run_dir)
        assert feed is not None
        llm_port = int(llm.base_url.split(":")[2].split("/")[0])
        targets = {"llm": ("127.0.0.1", llm_port, "/v1/chat/completions"),
                   "llm by name": ("localhost", llm_port, "/v1/chat/completions"),
                   "live feed": ("127.0.0.1", feed.port, None),
                   "outside": ("192.0.2.1", 80, None)}
        result = await evaluate_with_config(
            tmp_path, [f"evaluation.warm_worker={str(warm).lower()}"], targets)
        assert llm.requests == []  # the model was never asked
    assert result.status == "ok", result.error
    seen = got(result)
    assert result.combined_score == 0.0, seen
    assert seen["outside"]["errno"] == 101  # ENETUNREACH: no route at all


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
async def test_an_allowed_destination_and_only_it_is_reachable(
        tmp_path: Path, require_containment: Any, scorer: int, other_service: int,
        warm: bool) -> None:
    require_containment("network_namespace")
    targets = {"scorer": ("127.0.0.1", scorer, "/score"),
               "scorer by name": ("localhost", scorer, "/score"),
               "other port": ("127.0.0.1", other_service, "/"),
               "outside": ("192.0.2.1", 80, None)}
    result = await evaluate_with_config(
        tmp_path, [f"evaluation.warm_worker={str(warm).lower()}",
                   f'evaluation.network_allow=["127.0.0.1:{scorer}", "localhost:{scorer}"]'],
        targets)
    assert result.status == "ok", result.error
    seen = got(result)
    assert seen["scorer"] == {"reached": True, "body": "the scorer's answer"}, seen
    assert seen["scorer by name"] == {"reached": True, "body": "the scorer's answer"}, seen
    assert seen["other port"]["reached"] is False and seen["other port"]["errno"] == 111, seen
    assert seen["outside"]["errno"] == 101, seen
    assert result.combined_score == 2.0


def own_address() -> str | None:
    """This machine's address on its default route (None: it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        except OSError:
            return None
        address = str(sock.getsockname()[0])
    return None if address.startswith("127.") else address


async def test_an_allowed_host_name_resolves_inside_to_an_address_beyond_loopback(
        tmp_path: Path, require_containment: Any) -> None:
    """A remote scorer named by host name: the name resolves inside (no DNS there) to the
    address Cambrian resolved, which is reachable at that port only."""
    from cambrian.evaluate.network import Destination

    require_containment("network_namespace", "mount_namespace")
    address = own_address()
    if address is None:
        pytest.skip("this machine has no address beyond loopback")
    with text_server("remote scorer", host="0.0.0.0") as port:
        name = "scorer.cambrian.test"
        code = f"""
import socket, urllib.request
print(urllib.request.urlopen("http://{name}:{port}/", timeout=5).read().decode())
for target in (("{address}", {port} + 1), ("127.0.0.1", {port})):
    try:
        socket.create_connection(target, timeout=5)
        print("reached", target)
    except OSError as error:
        print("refused", target, error.errno)
"""
        scratch = tmp_path / "scratch"
        result = await run_sandboxed(
            [sys.executable, "-c", code], cwd=scratch, env=None, timeout_s=30,
            memory_limit_mb=None, scratch_dir=scratch,
            containment=ContainmentPolicy(network_allow=(Destination(name, address, port),)))
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == "remote scorer"
        assert lines[1].startswith("refused") and lines[1].endswith(" 111"), lines
        assert lines[2].startswith("refused") and lines[2].endswith(" 111"), lines
    hosts = Path("/etc/hosts").read_text()
    assert "scorer.cambrian.test" not in hosts  # the cover was the evaluation's own
    assert not any(p.name.startswith(".cambrian-hosts") for p in scratch.iterdir())


def test_network_allow_entries_are_checked_when_the_config_is_read() -> None:
    from cambrian.evaluate.network import Destination, resolve_destinations

    for entry, says in (("scorer.example.org", "is not HOST:PORT"),
                        ("scorer.example.org:0", "port must be a number from 1 to 65535"),
                        ("::1:8000", "IPv6 address in brackets"),
                        ("0.0.0.0:80", "no single destination"),
                        ("bad host!:80", "neither a host name nor an IP address")):
        with pytest.raises(ConfigError, match=says):
            build_config([], [f'evaluation.network_allow=["{entry}"]'])
    with pytest.raises(ConfigError, match="with isolate_network: false every destination"):
        build_config([], ["evaluation.isolate_network=false",
                          'evaluation.network_allow=["127.0.0.1:80"]'])
    config = build_config([], ['evaluation.network_allow=["[::1]:8000", "127.0.0.1:9"]'])
    assert config.evaluation.isolate_network is True
    assert resolve_destinations(config.evaluation.network_allow) == (
        Destination("::1", "::1", 8000), Destination("127.0.0.1", "127.0.0.1", 9))


async def test_the_live_feed_token_file_is_unreadable_to_the_sandbox_user(
        require_containment: Any) -> None:
    """Even with the network left open, a candidate cannot use the run's live feed: its token
    is in a file only Cambrian's user reads, beside the evaluation's scratch folder."""
    require_containment("unprivileged", "read_only_outside_scratch")
    if os.geteuid() != 0:
        pytest.skip("candidates run as another user only when Cambrian runs as root")
    folder = Path(tempfile.mkdtemp(prefix="cambrian-feed-"))  # traversable, as a run folder is
    try:
        folder.chmod(0o755)
        run_dir = folder / "run"
        run_dir.mkdir(mode=0o755)
        scratch = run_dir / "evals" / "1"
        with LivePublisher(run_dir) as publisher:
            code = f"""
import os, socket
try:
    open({str(run_dir / "live.json")!r}).read()
    print("read the token file")
except OSError as error:
    print("token file", error.errno)
with socket.create_connection(("127.0.0.1", {publisher.address.port}), timeout=5) as sock:
    sock.sendall(b"guess\\n")
    print("feed says", sock.recv(100))
"""
            result = await run_sandboxed(
                [sys.executable, "-c", code], cwd=scratch, env=None, timeout_s=30,
                memory_limit_mb=None, scratch_dir=scratch,
                containment=ContainmentPolicy(isolate_network=False))
        assert result.returncode == 0, result.stderr
        assert "token file 13" in result.stdout  # EACCES: mode 0600, Cambrian's user
        assert "feed says b''" in result.stdout  # no token, not a word
    finally:
        shutil.rmtree(folder)
