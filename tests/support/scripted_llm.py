"""An OpenAI-compatible chat server whose replies are computed from the request.

Loop tests use it as the LLM: the real OpenAI provider talks real HTTP to it, so everything from
prompt building to the ledger is exercised; only the model's "intelligence" is scripted.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cambrian.search.novelty_judge import JUDGE_QUESTION

Responder = Callable[[list[dict[str, str]], int], str]


class _Server(ThreadingHTTPServer):
    block_on_close = False
    daemon_threads = True


@dataclass
class ScriptedLLM:
    """``responder(messages, call_index) -> reply text``; ``status_for(call_index)`` may force
    an HTTP error status for a call (e.g. 401)."""

    responder: Responder
    delay_s: float = 0.0
    status_for: Callable[[int], int] = lambda index: 200
    requests: list[list[dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def model_config(self, **extra: Any) -> dict[str, Any]:
        return {"provider": "openai", "model": "scripted", "base_url": self.base_url,
                "context_window": 16384, "temperatures": [0.7], **extra}

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(body.get("messages", []))
                if self.path.endswith("/embeddings"):
                    self._send(200, embeddings_payload(body))
                    return
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                status = outer.status_for(index)
                if status != 200:
                    payload = {"error": {"message": f"scripted status {status}",
                                         "type": "invalid_request_error", "code": None}}
                else:
                    text = outer.responder(body.get("messages", []), index)
                    # Like a real server: the reply ends before the first stop sequence.
                    for stop in body.get("stop") or []:
                        text = text.split(stop, 1)[0]
                    payload = {
                        "id": f"chatcmpl-{index}", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                    }
                self._send(status, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


# ---------------------------------------------------------------------------- counter task

COUNTER_INITIAL = """# A toy task: the score is VALUE (maximised), as long as VALUE <= LIMIT.

# EVOLVE-BLOCK-START
VALUE = 1
# EVOLVE-BLOCK-END


def run():
    return VALUE
"""

COUNTER_MODULE_EVALUATOR = """import runpy
import time

LIMIT = {limit}


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    time.sleep({sleep})
    if value > LIMIT:
        return {{"correct": False, "error": f"VALUE {{value}} exceeds the limit {{LIMIT}}"}}
    return {{
        "combined_score": float(value),
        "public": {{"value": value}},
        "private": {{"secret": "PRIVATE-MARKER-{{}}".format(value)}},
        "text_feedback": f"value is {{value}}",
    }}
"""

COUNTER_COMMAND_EVALUATOR = """import argparse
import json
import pathlib
import runpy
import time

LIMIT = {limit}

parser = argparse.ArgumentParser()
parser.add_argument("--program_path")
parser.add_argument("--results_dir")
args = parser.parse_args()
out = pathlib.Path(args.results_dir)
value = runpy.run_path(args.program_path)["run"]()
time.sleep({sleep})
ok = value <= LIMIT
(out / "metrics.json").write_text(json.dumps({{
    "combined_score": float(value) if ok else 0.0,
    "public": {{"value": value}},
    "private": {{"secret": "PRIVATE-MARKER-%d" % value}},
    "text_feedback": "value is %d" % value,
}}))
(out / "correct.json").write_text(json.dumps({{"correct": ok, "error": "" if ok else "too big"}}))
"""


def write_counter_task(root, *, contract: str = "module", limit: int = 1000, sleep: float = 0.0,
                       initial: str = COUNTER_INITIAL, config: str = "") -> Any:
    root.mkdir(parents=True, exist_ok=True)
    (root / "initial.py").write_text(initial)
    template = COUNTER_MODULE_EVALUATOR if contract == "module" else COUNTER_COMMAND_EVALUATOR
    (root / "evaluate.py").write_text(template.format(limit=limit, sleep=sleep))
    if config:
        (root / "config.yaml").write_text(config)
    return root


CODE_BLOCK = re.compile(r"## Current program\n```[a-z]*\n(.*?)```", re.DOTALL)


def current_value(messages: list[dict[str, str]]) -> int:
    user = next(m["content"] for m in messages if m["role"] == "user")
    code = CODE_BLOCK.search(user)
    assert code, "prompt has no current program"
    match = re.search(r"VALUE = (-?\d+)", code.group(1))
    assert match, "current program has no VALUE"
    return int(match.group(1))


def counter_reply(value: int, step: int, wants_diff: bool) -> str:
    if wants_diff:
        return (f"Increase the value\n<<<<<<< SEARCH\nVALUE = {value}\n=======\n"
                f"VALUE = {value + step}\n>>>>>>> REPLACE\n")
    return f"Increase the value\n```python\nVALUE = {value + step}\n```\n"


SCRIPTED_META_REPLY = ("WORKED:\n- raising VALUE\nDID NOT WORK:\n- exceeding the limit\n"
                       "RECOMMENDATIONS:\n1. raise VALUE in bigger steps\n"
                       "2. keep VALUE below the limit\n")


def incrementing(messages: list[dict[str, str]], index: int) -> str:
    """Reply with the parent's VALUE raised by (call index + 1), so that replies differ from
    call to call, in whatever format the prompt asked for. Meta-scratchpad requests get a
    fixed, well-formed set of notes; the novelty judge always hears DIFFERENT."""
    if "Update the notes" in messages[-1]["content"]:
        return SCRIPTED_META_REPLY
    if JUDGE_QUESTION in messages[-1]["content"]:  # the novelty judge: let the proposal through
        return "DIFFERENT"
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
    return counter_reply(current_value(messages), index + 1, wants_diff)


def embeddings_payload(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI /v1/embeddings answer: a bag-of-words vector per input (identical text, identical
    vector; disjoint words, orthogonal vectors)."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    data = []
    for index, text in enumerate(texts):
        vector = [0.0] * 64
        for word in re.findall(r"\w+", text):
            vector[sum(map(ord, word)) % 64] += 1.0
        data.append({"object": "embedding", "index": index, "embedding": vector})
    return {"object": "list", "data": data, "model": body.get("model"),
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}
