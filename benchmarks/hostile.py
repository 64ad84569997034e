"""Hostile candidates and hostile model servers, each run through a real `cambrian run` process;
prints whether each was handled, and handled/total.

  .venv/bin/python benchmarks/hostile.py [--only NAME,NAME] [--keep DIR]

Candidate cases: the scripted model answers the first proposal with a hostile program (a full
rewrite of the counter task's block); the run must finish normally (exit 0), the hostile program
must be stored with its failure, and what it tried must not have happened (the evaluator is
intact, nothing written outside its scratch folder, no process survives, no key is seen).
Server cases: a local HTTP server speaking the OpenAI protocol misbehaves; the run must stop or
go on as documented, with one line and the right exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hostile_judged import JUDGED_CASES  # noqa: E402
from hostile_runner import (  # noqa: E402
    CLI,
    ROOT,
    SECRET,
    Case,
    Outcome,
    cambrian,
    clean,
    processes_with,
    settings,
)
from hostile_servers import (  # noqa: E402
    always_401,
    always_500,
    garbage_json,
    one_refusal,
    retried_then_answered,
    server_case,
    server_down,
    too_slow,
)
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task  # noqa: E402

from cambrian.core.events import ControlChanged  # noqa: E402
from cambrian.store.store import Store  # noqa: E402

# --------------------------------------------------------------------------- candidates


def hostile_reply(program: str) -> Callable[[list[dict[str, str]], int], str]:
    """The first proposal gets ``program`` as the block's new code; later ones count up."""
    body = textwrap.dedent(program).strip("\n")

    def reply(messages: list[dict[str, str]], index: int) -> str:
        if index == 0:
            value = "" if "VALUE =" in body else "\nVALUE = 2"
            return f"Try this\n```python\n# EVOLVE-BLOCK-START\n{body}{value}\n# EVOLVE-BLOCK-END\n```\n"
        return incrementing(messages, index)

    return reply


def run_candidate(work: Path, program: str, *more: str, env: dict[str, str] | None = None,
                  model_extra: dict[str, Any] | None = None, evaluator: str | None = None
                  ) -> tuple[subprocess.CompletedProcess[str], Store, ScriptedLLM]:
    task = write_counter_task(work / "task")
    if evaluator is not None:
        (task / "evaluate.py").write_text(evaluator)
    with ScriptedLLM(hostile_reply(program)) as llm:
        result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3",
                          *settings({**llm.model_config(), **(model_extra or {})}, *more),
                          env=env)
    return result, Store.open(work / "run"), llm


def hostile_child(store: Store, program: str) -> Any:
    """Candidate 2, which must be the hostile program the scripted model sent (else the case
    measured something else: a refused reply, say)."""
    child = store.candidates.get(2)
    if textwrap.dedent(program).strip("\n") not in (child.source or ""):
        raise AssertionError(f"candidate 2 is not the hostile program (status {child.status})")
    return child


def candidate_case(program: str, check: Callable[[Path, Any, Store], str | None],
                   *more: str, env: dict[str, str] | None = None,
                   model_extra: dict[str, Any] | None = None,
                   evaluator: str | None = None) -> Callable[[Path], tuple[bool, str]]:
    """``evaluator``: the task's evaluator instead of the counter task's."""
    def run(work: Path) -> tuple[bool, str]:
        result, store, _ = run_candidate(work, program.replace("WORK", str(work)), *more,
                                         env=env, model_extra=model_extra, evaluator=evaluator)
        try:
            if result.returncode != 0 or not clean(result):
                return False, f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
            child = hostile_child(store, program.replace("WORK", str(work)))
            problem = check(work, child, store)
            evaluation = store.evaluations.latest(child.id)
            status = evaluation.status if evaluation else child.status
            return problem is None, problem or f"run exit 0; the hostile child is {status}"
        finally:
            store.close()

    return run


def evaluator_intact(work: Path, child: Any, store: Store) -> str | None:
    text = (work / "task" / "evaluate.py").read_text()
    if "1e9" in text:
        return "the evaluator was rewritten"
    if any((r.score or 0) >= 1e9 for r in store.candidates.list()):
        return "a score of 1e9 was recorded"
    return None


def nothing_written(work: Path, child: Any, store: Store) -> str | None:
    for target in (work / "escaped.txt", Path("/tmp/cambrian-hostile-escaped.txt")):
        if target.exists():
            target.unlink()
            return f"{target} was written"
    return None


def no_secret(work: Path, child: Any, store: Store) -> str | None:
    """Neither the key's value anywhere in the run (the store redacts a value it knows, so
    this alone would pass a leak) nor its variable in the environment the candidate printed."""
    for path in (work / "run").rglob("*"):
        if path.is_file() and SECRET.encode() in path.read_bytes():
            return f"the key is in {path}"
    evaluation = store.evaluations.latest(child.id)
    if evaluation is None or "PATH" not in evaluation.stdout:
        return "the candidate's environment was not printed"
    if "LLM_KEY" in evaluation.stdout:
        return "the key's variable reached the candidate's environment"
    return None


def none_left(marker: str) -> Callable[[Path, Any, Store], str | None]:
    def check(work: Path, child: Any, store: Store) -> str | None:
        time.sleep(0.5)
        left = processes_with(marker)
        for line in left:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        return f"still running: {left}" if left else None

    return check


def spawned(work: Path, child: Any, store: Store) -> str | None:
    evaluation = store.evaluations.latest(child.id)
    return None if evaluation and "spawned" in evaluation.stdout else "the process never started"


def failed_with(*statuses: str) -> Callable[[Path, Any, Store], str | None]:
    def check(work: Path, child: Any, store: Store) -> str | None:
        evaluation = store.evaluations.latest(child.id)
        if evaluation is None or evaluation.status not in statuses:
            return f"stored as {evaluation.status if evaluation else child.status}, not {statuses}"
        return None

    return check


def output_capped(work: Path, child: Any, store: Store) -> str | None:
    evaluation = store.evaluations.latest(child.id)
    if evaluation is None:
        return "no evaluation"
    dropped = evaluation.extra.get("stdout_truncated_bytes", 0)
    if len(evaluation.stdout) > 100_000 or dropped < 10_000_000:
        return f"stdout kept {len(evaluation.stdout)} bytes, dropped {dropped}"
    return None


def not_correct(work: Path, child: Any, store: Store) -> str | None:
    """Evaluated (the hostile code ran) and not stored as a correct program."""
    if store.evaluations.latest(child.id) is None:
        return f"never evaluated (stored as {child.status})"
    return None if child.status != "correct" else f"stored as correct with score {child.score}"


def none_in_run(work: Path, child: Any, store: Store) -> str | None:
    """No process left whose working directory is in the run's folder (its scratch folders)."""
    time.sleep(0.5)
    run = str((work / "run").resolve())
    left = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if cwd == run or cwd.startswith(run + "/"):
                left.append(proc.name)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
    return f"{len(left)} processes still running in the run's folder" if left else None


# The program's run() is its score, as in a task whose program computes its own objective.
SCORE_IS_RUN = """import runpy


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    return {"combined_score": value, "public": {"value": {"nested": value}}}
"""


def error_says(*words: str) -> Callable[[Path, Any, Store], str | None]:
    def check(work: Path, child: Any, store: Store) -> str | None:
        evaluation = store.evaluations.latest(child.id)
        error = evaluation.error if evaluation else child.error
        if not any(word in (error or "") for word in words):
            return f"the error does not say {' or '.join(words)}: {(error or '')[:200]!r}"
        return None

    return check


def all_of(*checks: Callable[[Path, Any, Store], str | None]) -> Callable[..., str | None]:
    def check(work: Path, child: Any, store: Store) -> str | None:
        for one in checks:
            problem = one(work, child, store)
            if problem:
                return problem
        return None

    return check


def killed_cambrian(work: Path) -> tuple[bool, str]:
    """kill -9 of `cambrian run` during an evaluation: the candidate dies with it, and
    `cambrian resume` finishes the run."""
    marker = f"cambrian-orphan-{os.getpid()}"
    program = (f"import subprocess\nsubprocess.run(['{marker}', '600'], executable='sleep')")
    task = write_counter_task(work / "task")
    with ScriptedLLM(hostile_reply(program)) as llm:
        run = subprocess.Popen([*CLI, "run", str(task), "-o", str(work / "run"), "-g", "3",
                                *settings(llm.model_config(), "evaluation.timeout_s=600")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, cwd=ROOT)
        deadline = time.monotonic() + 120
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not processes_with(marker):
            run.kill()
            return False, "the sleeping candidate never started"
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        time.sleep(3)
        left = processes_with(marker)
        for line in left:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        if left:
            return False, f"the candidate outlived Cambrian: {left}"
        resumed = cambrian("resume", str(work / "run"), "--set", "evaluation.timeout_s=3")
    if resumed.returncode != 0 or not clean(resumed):
        return False, f"resume exit {resumed.returncode}: {resumed.stderr[-300:]}"
    return True, "candidate gone 3 s after kill -9; resume finished the run (exit 0)"


def reply_case(reply: Callable[[list[dict[str, str]], int], str],
               check: Callable[[subprocess.CompletedProcess[str], Store], str | None],
               *more: str, with_key: bool = False) -> Callable[[Path], tuple[bool, str]]:
    def run(work: Path) -> tuple[bool, str]:
        task = write_counter_task(work / "task")
        key = {"api_key_env": "LLM_KEY"} if with_key else {}
        with ScriptedLLM(reply) as llm:
            result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3",
                              *settings(llm.model_config(**key), *more),
                              env={"LLM_KEY": SECRET} if with_key else None)
        if not clean(result):
            return False, result.stderr[-300:]
        store = Store.open(work / "run")
        try:
            problem = check(result, store)
        finally:
            store.close()
        return problem is None, problem or f"exit {result.returncode}; stored as documented"

    return run


def huge_reply_stored_capped(result: subprocess.CompletedProcess[str], store: Store) -> str | None:
    contexts = store.contexts.list("mutation")
    if not contexts or any(len(c.response_text or "") > 200_000 for c in contexts):
        return "a reply was stored uncapped"
    if not any(c.response_dropped_chars > 0 for c in contexts):
        return "the cut was not recorded"
    return None


def refused_not_fatal(result: subprocess.CompletedProcess[str], store: Store) -> str | None:
    refused = [r for r in store.candidates.list("patch_failed") if r.notes.get("reply_refused")]
    if not refused:
        return "no refusal recorded"
    return None if result.returncode in (4, 6) else f"exit {result.returncode}"


def secret_redacted(result: subprocess.CompletedProcess[str], store: Store) -> str | None:
    for path in store.path.parent.rglob("*"):
        if path.is_file() and SECRET.encode() in path.read_bytes():
            return f"the key is in {path}"
    return None


def echo_secret(messages: list[dict[str, str]], index: int) -> str:
    return f"{SECRET}\n" + incrementing(messages, index)


# The candidate scans this machine's loopback ports, asks every one it finds for a completion
# (an OpenAI-compatible LLM server) and for the web UI's runs, which it then tries to steer.
LOOPBACK_PROBE = """
import json, socket, urllib.request
open_ports = []
for port in range(1, 65536):
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=0.05) as sock:
            if sock.getsockname()[1] != port:  # not a TCP self-connect in the ephemeral range
                open_ports.append(port)
    except OSError:
        pass
found = []
for port in open_ports:
    def call(path, body=None):
        request = urllib.request.Request(
            f'http://127.0.0.1:{port}{path}', headers={'content-type': 'application/json'},
            data=None if body is None else json.dumps(body).encode())
        return json.loads(urllib.request.urlopen(request, timeout=2).read())
    try:
        call('/v1/chat/completions', {'model': 'm', 'messages': [
            {'role': 'user', 'content': 'HOSTILE-PROBE'}]})
        found.append(f'a completion on {port}')
    except Exception:
        pass
    try:
        for run in call('/api/runs'):
            call(f"/api/runs/{run['key']}/guidance", {'action': 'append', 'text': 'HOSTILE-GUIDANCE'})
            call(f"/api/runs/{run['key']}/control", {'action': 'stop'})
            found.append(f"steered {run['key']} on {port}")
    except Exception:
        pass
print('PROBE open loopback ports', open_ports, 'found', found)
"""


def loopback_services(work: Path) -> tuple[bool, str]:
    """A candidate that goes for the run's LLM server and its web UI (`cambrian run --ui`) on
    loopback: no completion, no guidance, no control request may come of it."""
    task = write_counter_task(work / "task")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        ui_port = sock.getsockname()[1]
    with ScriptedLLM(hostile_reply(LOOPBACK_PROBE)) as llm:
        result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3", "--ui",
                          "--ui-port", str(ui_port),
                          *settings(llm.model_config(), "evaluation.timeout_s=60"))
        asked = [m for messages in llm.requests for m in messages
                 if "HOSTILE-PROBE" in m.get("content", "")]
    if result.returncode != 0 or not clean(result):
        return False, f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
    store = Store.open(work / "run")
    try:
        child = hostile_child(store, LOOPBACK_PROBE)
        evaluation = store.evaluations.latest(child.id)
        probe = next((line for line in (evaluation.stdout if evaluation else "").splitlines()
                      if line.startswith("PROBE")), None)
        if probe is None:
            return False, f"the probe printed nothing (stored as {child.status})"
        steered = [e for e in store.events.of_type(ControlChanged)]
        guided = [g for g in store.guidance.history() if "HOSTILE" in g.text]
    finally:
        store.close()
    if asked or steered or guided:
        return False, (f"{len(asked)} completions asked, {len(steered)} control requests, "
                       f"{len(guided)} guidance changes; {probe}")
    return True, f"run exit 0, nothing asked or steered; {probe.removeprefix('PROBE ')}"


# 48 files of 128 MB (6 GiB), each under the per-file cap: the disk quota must stop it.
MANY_LARGE_FILES = """
import os
chunk = os.urandom(1 << 20)
for index in range(48):
    with open(f'part{index}.bin', 'wb') as handle:
        for _ in range(128):
            handle.write(chunk)
print('wrote 6 GiB')
"""


def many_large_files(work: Path) -> tuple[bool, str]:
    """Stored as a disk-limit failure (the default quota, 2048 MB), nothing of what it wrote
    left in the run folder, and the run goes on."""
    result, store, _ = run_candidate(work, MANY_LARGE_FILES, "evaluation.timeout_s=60")
    try:
        if result.returncode != 0 or not clean(result):
            return False, f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
        child = hostile_child(store, MANY_LARGE_FILES)
        evaluation = store.evaluations.latest(child.id)
        later = [c for c in store.candidates.list() if c.id > child.id and c.status == "correct"]
    finally:
        store.close()
    if evaluation is None or evaluation.status != "disk":
        return False, f"stored as {evaluation.status if evaluation else child.status}, not disk"
    left = sum(path.stat().st_size for path in (work / "run").rglob("*") if path.is_file())
    if left > 64 * 2**20:
        return False, f"the run folder still holds {left / 2**20:.0f} MB"
    if not later:
        return False, "no later child was evaluated"
    said = evaluation.error.splitlines()[0]
    return True, (f"run exit 0; stored as disk: {said!r}; the run folder holds "
                  f"{left / 2**20:.1f} MB afterwards")


CASES = [
    Case("candidate rewrites the evaluator", candidate_case(
        "for path in ('evaluate.py', 'WORK/task/evaluate.py'):\n"
        "    try:\n"
        "        open(path, 'w').write('def evaluate(p):\\n    return {\"combined_score\": 1e9}\\n')\n"
        "    except OSError:\n"
        "        pass", evaluator_intact)),
    Case("candidate writes outside its scratch folder", candidate_case(
        "for path in ('WORK/escaped.txt', '/tmp/cambrian-hostile-escaped.txt'):\n"
        "    try:\n"
        "        open(path, 'w').write('out')\n"
        "    except OSError:\n"
        "        pass", nothing_written)),
    Case("candidate reads the run's API key (custom variable name)", candidate_case(
        "import os\nprint(sorted(os.environ.items()))", no_secret,
        env={"LLM_KEY": SECRET}, model_extra={"api_key_env": "LLM_KEY"})),
    Case("candidate leaves a setsid grandchild behind", candidate_case(
        "import subprocess\n"
        "child = subprocess.Popen(['cambrian-setsid-marker', '300'], executable='sleep', "
        "start_new_session=True)\nprint('spawned', child.pid)",
        all_of(spawned, none_left("cambrian-setsid-marker")))),
    Case("candidate double-forks a daemon", candidate_case(
        "import os\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execvp('sleep', ['cambrian-daemon-marker', '300'])\n"
        "    os._exit(0)\n"
        "import time\ntime.sleep(0.5)\nprint('spawned')",
        all_of(spawned, none_left("cambrian-daemon-marker")))),
    Case("candidate kills its parent", candidate_case(
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", not_correct)),
    Case("candidate kills its process group", candidate_case(
        "import os, signal\nos.killpg(0, signal.SIGKILL)", not_correct)),
    Case("candidate kills every process it can", candidate_case(
        "import os, signal\nos.kill(-1, signal.SIGKILL)", not_correct)),
    Case("candidate fork bomb", candidate_case(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
        "        os._exit(1)", all_of(not_correct, none_in_run))),
    Case("candidate floods stdout (200 MB)", candidate_case(
        "import sys\nfor _ in range(200):\n    sys.stdout.write('x' * 1_000_000)",
        output_capped)),
    Case("candidate writes a huge file", candidate_case(
        "with open('big.bin', 'wb') as f:\n    for _ in range(4096):\n"
        "        f.write(b'x' * 1_048_576)",
        all_of(not_correct, error_says("SIGXFSZ", "File too large")))),
    Case("candidate hogs memory", candidate_case(
        "hog = bytearray(8 * 1024 ** 3)", failed_with("memory", "crashed"))),
    Case("candidate never ends", candidate_case(
        "while True:\n    pass", failed_with("timeout"))),
    Case("candidate uses the loopback LLM server and the run's web UI", loopback_services),
    Case("candidate writes many large files (48 x 128 MB)", many_large_files),
    Case("candidate scores NaN", candidate_case(
        "VALUE = float('nan')",
        not_correct)),
    Case("Cambrian killed (kill -9) during an evaluation", killed_cambrian),
    Case("server sends malformed JSON", server_case(garbage_json, 5, "LLMMalformedReply")),
    Case("server answers 500 on every call", server_case(always_500, 5, "HTTP 500")),
    Case("server rejects the key (401)", server_case(always_401, 5, "LLMAuthError")),
    Case("server too slow (timeout)", server_case(too_slow, 5, "timed out")),
    Case("server down", server_down),
    Case("reply of 20 MB", reply_case(lambda m, i: "x" * 20_000_000, huge_reply_stored_capped,
                                      "evolution.max_patch_resamples=1")),
    Case("reply that is not code", reply_case(lambda m, i: "I would rather not.",
                                              refused_not_fatal)),
    Case("reply echoing the API key", reply_case(echo_secret, secret_redacted, with_key=True)),
    Case("candidate scores 10**400", candidate_case(
        "VALUE = 10**400", all_of(failed_with("incorrect"), error_says("too large for a float")),
        evaluator=SCORE_IS_RUN)),
    Case("server refuses one request (HTTP 400)", one_refusal),
    Case("server answers 500 twice, then works", retried_then_answered),
    *JUDGED_CASES,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated case names (substrings)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = parser.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    cases = [c for c in CASES if not wanted or any(w in c.name for w in wanted)]
    root = args.keep or Path(tempfile.mkdtemp(prefix="cambrian-hostile-"))
    if args.keep is None:
        # Readable by every user, as a project folder is: what a candidate could read, it can.
        root.chmod(0o755)
    outcomes = []
    for index, case in enumerate(cases):
        work = root / f"case{index:02d}"
        work.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        try:
            handled, detail = case.run(work)
        except Exception as exc:  # noqa: BLE001 - a case that breaks is a case not handled
            handled, detail = False, f"{type(exc).__name__}: {exc}"
        outcomes.append(Outcome(case.name, handled, detail))
        print(f"{'handled' if handled else 'NOT HANDLED':>11}  {case.name}  "
              f"({time.monotonic() - began:.0f} s): {detail}", flush=True)
    handled = sum(o.handled for o in outcomes)
    print(f"\nhandled {handled}/{len(outcomes)}")
    sys.exit(0 if handled == len(outcomes) else 1)


if __name__ == "__main__":
    main()
