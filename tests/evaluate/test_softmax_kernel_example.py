"""examples/softmax_kernel on a machine without a GPU: its config asks for one and falls back
to the CPU (said once), so the whole loop runs in CI: a wrong kernel scores nothing, a correct
one is timed against torch.softmax with the timing helper, and no GPU is held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the example's evaluator needs PyTorch")

from support.scripted_llm import ScriptedLLM  # noqa: E402

from cambrian.api import evolve  # noqa: E402
from cambrian.evaluate import factory  # noqa: E402
from cambrian.store.store import Store  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax_kernel"
NO_MAXIMUM = '''def softmax(x: torch.Tensor) -> torch.Tensor:
    exps = torch.exp(x)
    return exps / exps.sum(dim=1, keepdim=True)'''
LIBRARY = '''def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softmax(x, dim=1)'''


def reply(messages: list[dict[str, str]], index: int) -> str:
    body = (NO_MAXIMUM, LIBRARY)[index % 2]
    return f"A kernel.\n```python\n# EVOLVE-BLOCK-START\n{body}\n# EVOLVE-BLOCK-END\n```\n"


def test_the_kernel_example_evolves_on_the_cpu_fallback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # as on a machine without a GPU
    monkeypatch.setattr(factory, "_fallbacks_said", set())  # said once per process
    with ScriptedLLM(reply) as llm:
        model = llm.model_config(patch_format="full")
        summary = evolve(str(EXAMPLE), run_dir=str(tmp_path / "run"), overrides=[
            "evolution.generations=2", "llm.models=[" + json.dumps(model) + "]",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"])
    assert "offers none" in caplog.text and "evaluating without a GPU" in caplog.text
    store = Store.open(tmp_path / "run" / "run.sqlite", read_only=True)
    evaluated = {row.id: (row, result) for row, result
                 in store.candidates.evaluated_in_commit_order()}
    initial, initial_result = evaluated[1]
    assert initial.status == "correct" and initial_result.public["device"] == "cpu"
    assert {"speedup", "noise", "credited_speedup"} <= set(initial_result.public)
    wrong = [result for row, result in evaluated.values() if "exps = torch.exp(x)\n"
             in (row.source or "")]
    assert wrong and "wrong results" in (wrong[0].error or "")
    library = [row for row, _ in evaluated.values() if "functional.softmax" in (row.source or "")]
    assert library and library[0].status == "correct" and library[0].score is not None
    assert "gpus" not in initial_result.extra  # the fallback holds no GPU
    assert summary.best_score is not None and summary.best_score >= initial.score
