"""On a machine with an NVIDIA GPU: CUDA inside the default sandbox, one GPU per evaluation,
and the timing helper on the device. Skipped, with the reason, everywhere else (CI has none);
benchmarks/gpu_kernel.py runs the kernel example there (output: benchmarks/results/)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU here (torch.cuda.is_available() is False)"),
]

from cambrian.evaluate.devices import visible_gpus  # noqa: E402
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator  # noqa: E402
from cambrian.evaluate.timing import compare_speed  # noqa: E402

CUDA_EVALUATOR = """
import os, time

def evaluate(program_path):
    import torch
    started = time.time()
    x = torch.randn(2048, 2048, device="cuda")
    while time.time() < started + 2.0:  # hold the GPU for two seconds of work
        x = torch.softmax(x, dim=-1)
        torch.cuda.synchronize()
    return {"combined_score": float(x.sum().item() > 0), "public": {
        "gpu": os.environ["CUDA_VISIBLE_DEVICES"], "started": started, "ended": time.time()}}
"""


def _evaluator(tmp_path: Path, share: bool) -> ProgramEvaluator:
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    (task / "evaluator.py").write_text(textwrap.dedent(CUDA_EVALUATOR))
    return ProgramEvaluator(EvaluatorSettings(evaluator_path=task / "evaluator.py", gpus=1,
                                              gpu_ids=tuple(visible_gpus()[:1]),
                                              share_gpus=share, timeout_s=120))


@pytest.mark.parametrize("share", [False, True], ids=["exclusive", "shared"])
async def test_cuda_starts_in_the_default_sandbox_one_evaluation_per_gpu(
        tmp_path: Path, share: bool) -> None:
    evaluator = _evaluator(tmp_path, share)
    results = await asyncio.gather(*(evaluator.evaluate("X = 1\n", tmp_path / f"w{index}")
                                     for index in range(2)))
    assert all(result.status == "ok" for result in results), [r.error for r in results]
    spans = sorted((result.public["started"], result.public["ended"]) for result in results)
    overlap = spans[0][1] - spans[1][0]
    if share:
        assert overlap > 0  # both held the GPU at once, as allowed
    else:
        assert overlap <= 0  # the second waited for the GPU


def test_a_real_slowdown_counts_and_the_same_kernel_does_not() -> None:
    x = torch.randn(4096, 4096, device="cuda")
    torch.softmax(x, dim=-1)
    same = compare_speed(lambda: torch.softmax(x, dim=-1), lambda: torch.softmax(x, dim=-1))
    assert same.credited == 1.0, same
    slower = compare_speed(lambda: torch.softmax(torch.softmax(x, dim=-1), dim=-1),
                           lambda: torch.softmax(x, dim=-1))
    assert slower.significant and slower.credited < 0.7, slower
