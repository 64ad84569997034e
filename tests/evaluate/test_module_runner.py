"""module_runner run directly, both as `python -m` and by path, as the sandbox does."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from cambrian.evaluate import module_runner

REPO_ROOT = Path(module_runner.__file__).resolve().parents[2]


def run_runner(evaluator: Path, out: Path, *, as_module: bool) -> subprocess.CompletedProcess[str]:
    entry = ["-m", "cambrian.evaluate.module_runner"] if as_module else [module_runner.__file__]
    arguments = ["--evaluator", str(evaluator), "--program", "prog.py", "--out", str(out)]
    return subprocess.run(
        [sys.executable, *entry, *arguments],
        cwd=REPO_ROOT if as_module else evaluator.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_python_dash_m_writes_json_with_non_finite_values_as_null(
    write_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    evaluator = write_file(
        "evaluator.py",
        """
        import math, sys

        def evaluate(program_path):
            print("evaluator noise that is not JSON")
            return {
                "combined_score": 0.5,
                "program": program_path,
                "bad": math.inf,
                "nested": {"values": (1, float("nan"))},
                "numpy_loaded": "numpy" in sys.modules,
            }
        """,
    )
    out = tmp_path / "out.json"
    completed = run_runner(evaluator, out, as_module=True)
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(out.read_text())
    metrics = payload["metrics"]
    assert metrics["combined_score"] == 0.5 and metrics["program"] == "prog.py"
    assert metrics["bad"] is None and metrics["nested"] == {"values": [1, None]}
    assert payload["non_finite"] == {"metrics.bad": "inf", "metrics.nested.values[1]": "nan"}
    assert any("metrics.bad was inf" in note for note in payload["notes"])
    assert metrics["numpy_loaded"] is False


def test_by_path_imports_nothing_from_cambrian_and_puts_the_task_folder_first(
    write_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    write_file("sandbox.py", "SHADOW = 'task-local module wins'\n")
    evaluator = write_file(
        "evaluator.py",
        """
        import sys
        import sandbox  # must be the task's file, not cambrian/evaluate/sandbox.py

        def evaluate(program_path):
            return {
                "combined_score": 1,
                "shadow": sandbox.SHADOW,
                "cambrian_modules": [m for m in sys.modules if m.startswith("cambrian")],
                "numpy_loaded": "numpy" in sys.modules,
            }
        """,
    )
    out = tmp_path / "out.json"
    completed = run_runner(evaluator, out, as_module=False)
    assert completed.returncode == 0, completed.stderr
    metrics = json.loads(out.read_text())["metrics"]
    assert metrics["shadow"] == "task-local module wins"
    assert metrics["cambrian_modules"] == []
    assert metrics["numpy_loaded"] is False


def test_exception_writes_the_traceback_and_exits_non_zero(
    write_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    evaluator = write_file(
        "evaluator.py",
        "def evaluate(program_path):\n    raise KeyError('no such case')\n",
    )
    out = tmp_path / "out.json"
    completed = run_runner(evaluator, out, as_module=False)
    assert completed.returncode != 0
    trace = json.loads(out.read_text())["exception"]
    assert "KeyError: 'no such case'" in trace
    assert "KeyError: 'no such case'" in completed.stderr


def test_numpy_values_and_result_objects_are_converted() -> None:
    import numpy as np

    class Result:
        metrics = {"combined_score": np.float32(0.25), "sizes": np.arange(3)}
        artifacts = {"log": b"bytes are decoded", "where": Path("/tmp/x")}

    payload = module_runner.build_payload(Result())
    assert payload["metrics"] == {"combined_score": 0.25, "sizes": [0, 1, 2]}
    assert payload["artifacts"] == {"log": "bytes are decoded", "where": "/tmp/x"}
    assert json.loads(json.dumps(payload, allow_nan=False)) == payload
    assert "invalid_return" in module_runner.build_payload(["not", "a", "dict"])


def test_options_are_read_in_either_form_and_a_wrong_one_is_a_usage_error() -> None:
    assert module_runner.parse_args(["--evaluator=e.py", "--program", "p.py", "--out", "o.json",
                                     "--cascade-thresholds", "[0.5]"]) == {
        "--evaluator": "e.py", "--program": "p.py", "--out": "o.json",
        "--cascade-thresholds": "[0.5]"}
    for argv in (["--evaluator", "e.py", "--program", "p.py"],  # no --out
                 ["--evaluator", "e.py", "--program", "p.py", "--out", "o.json", "--verbose"],
                 ["--evaluator", "e.py", "--program", "p.py", "--out"]):
        completed = subprocess.run([sys.executable, module_runner.__file__, *argv],
                                   capture_output=True, text=True, timeout=120)
        assert completed.returncode == 2 and completed.stderr.startswith("usage:")


def test_the_runners_own_folder_is_recognised_under_another_name(tmp_path: Path) -> None:
    """A sys.path entry naming the runner's folder through a link is dropped too (it would
    let cambrian/evaluate's modules shadow the task's); other folders, and missing ones, stay."""
    own = module_runner._own_folder()
    link = tmp_path / "alias"
    link.symlink_to(Path(module_runner.__file__).resolve().parent)
    assert module_runner._same_folder(str(link), own)
    assert not module_runner._same_folder(str(tmp_path), own)
    assert not module_runner._same_folder(str(tmp_path / "missing"), own)
