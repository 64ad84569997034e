"""Evaluator of a softmax kernel (module contract: evaluate(program_path) -> dict).

On a GPU (the task asks for one: evaluation.devices.gpu), the candidate's `softmax(x)` must
first match `torch.softmax(x, dim=-1)` on several shapes, including odd widths, one row, one
column and rows of large magnitude; only then is it timed against `torch.softmax` in this same
process with Cambrian's timing helper (warm-up, interleaved rounds framed by device
synchronisation, the reference against itself for the noise). The score is the credited
speed-up: candidate over reference, and exactly 1.0 when the difference is within the measured
noise. Without a GPU (evaluation.devices.fallback: cpu) the same checks and timing run on the
CPU with smaller tensors, so the task can be tried anywhere; its scores then say nothing of a
GPU.
"""

from __future__ import annotations

import importlib.util

import torch

from cambrian.evaluate.timing import check_close, compare_speed

GPU_SHAPES = [(1, 1), (3, 7), (1, 4096), (4096, 1), (257, 1000), (1024, 781), (64, 16384)]
GPU_TIMED = (8192, 4096)
CPU_SHAPES = [(1, 1), (3, 7), (1, 513), (513, 1), (65, 1000)]
CPU_TIMED = (512, 1024)


def _load(program_path: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def evaluate(program_path: str) -> dict:
    candidate = _load(program_path).softmax
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shapes, timed = (GPU_SHAPES, GPU_TIMED) if device == "cuda" else (CPU_SHAPES, CPU_TIMED)
    generator = torch.Generator().manual_seed(0)
    inputs = [(torch.randn(shape, generator=generator).to(device),) for shape in shapes]
    inputs.append((40.0 * torch.randn((33, 300), generator=generator).to(device),))
    problems = check_close(candidate, _reference, inputs, rtol=1e-4, atol=1e-6)
    if problems:
        return {"combined_score": 0.0, "correct": False,
                "error": "wrong results: " + "; ".join(problems[:4])}
    x = torch.randn(timed, generator=generator).to(device)
    speed = compare_speed(lambda: candidate(x), lambda: _reference(x))
    public = {key: round(value, 6) for key, value in speed.as_metrics().items()}
    public.update(device=torch.cuda.get_device_name() if device == "cuda" else "cpu",
                  shape=list(timed))
    return {"combined_score": speed.credited, "public": public,
            "text_feedback": (f"{speed.speedup:.3f}x torch.softmax on {timed} "
                              f"(95% interval {speed.low:.3f}-{speed.high:.3f}, noise "
                              f"{100 * speed.noise:.1f}%)")}
