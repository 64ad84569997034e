"""The GPU kernel example evolving under containment (needs an NVIDIA GPU and PyTorch's CUDA
build; Triton for the scripted kernel).

  python benchmarks/gpu_kernel.py [--generations 6] [--keep DIR]

1. What the sandbox provides here (`python -m cambrian.evaluate.containment`) and CUDA inside
   it: an evaluation under the default containment that starts CUDA and runs a kernel.
2. One GPU, two concurrent evaluations: refused (run one after the other) unless
   `evaluation.devices.share` allows it, seen from inside the evaluations.
3. `examples/softmax_kernel` evolving for a few generations under the default containment
   (sandbox user, namespaces, warm worker), its model a scripted stand-in on loopback whose
   replies are a fused Triton kernel, a kernel that forgets the row maximum (wrong on large
   values), PyTorch's own softmax under another name, and a second Triton configuration. Prints
   every candidate's score, speed-up, noise and GPU, and `cambrian status` (what the sandbox
   kept and relaxed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instant_llm import InstantServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "softmax_kernel"

TRITON_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    values = tl.load(in_ptr + row * in_stride + offsets, mask=mask, other=-float("inf"))
    exps = tl.exp(values - tl.max(values, axis=0))
    tl.store(out_ptr + row * out_stride + offsets, exps / tl.sum(exps, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """One fused pass per row: read once, write once."""
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = WARPS
    _softmax_rows[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block,
                           num_warps=warps)
    return out
'''
NO_MAXIMUM = '''
def softmax(x: torch.Tensor) -> torch.Tensor:
    """Two operations fewer: no row maximum (overflows on large values)."""
    exps = torch.exp(x)
    return exps / exps.sum(dim=1, keepdim=True)
'''
LIBRARY = '''
def softmax(x: torch.Tensor) -> torch.Tensor:
    """The library's fused kernel."""
    return torch.nn.functional.softmax(x, dim=1)
'''
REPLIES = [
    ("fused Triton kernel", TRITON_KERNEL.replace("WARPS", "4 if block <= 2048 else 8 if block "
                                                           "<= 8192 else 16")),
    ("no row maximum", NO_MAXIMUM),
    ("torch.nn.functional.softmax", LIBRARY),
    ("Triton kernel, 32 warps", TRITON_KERNEL.replace("WARPS", "32 if block >= 4096 else 4")),
]

PROBE_EVALUATOR = """
import os, time

def evaluate(program_path):
    import torch
    started = time.time()
    x = torch.randn(4096, 4096, device="cuda")
    while time.time() < started + 2.0:  # hold the GPU for two seconds of work
        x = torch.softmax(x, dim=-1)
        torch.cuda.synchronize()
    return {"combined_score": 1.0, "public": {
        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "name": torch.cuda.get_device_name(),
        "started": started, "ended": time.time()}}
"""


def reply(messages: list[dict[str, str]], index: int) -> str:
    name, body = REPLIES[index % len(REPLIES)]
    block = f"# EVOLVE-BLOCK-START\n{body.strip()}\n# EVOLVE-BLOCK-END\n"
    return f"{name}.\n```python\n{block}```\n"


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


async def concurrent_on_one_gpu(folder: Path, share: bool) -> list[dict[str, object]]:
    from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

    task = folder / ("shared" if share else "exclusive")
    task.mkdir(parents=True)
    (task / "evaluator.py").write_text(textwrap.dedent(PROBE_EVALUATOR))
    evaluator = ProgramEvaluator(EvaluatorSettings(
        evaluator_path=task / "evaluator.py", gpus=1, gpu_ids=("0",), share_gpus=share,
        timeout_s=120, warm_worker=True))
    try:
        results = await asyncio.gather(*(evaluator.evaluate("X = 1\n", task / f"w{index}")
                                         for index in range(2)))
    finally:
        await evaluator.close()
    for result in results:
        if result.status != "ok":
            print("  evaluation failed:", result.status, (result.error or "")[-800:])
    return [dict(result.public) for result in results if result.status == "ok"]


def overlap_s(spans: list[dict[str, object]]) -> float:
    if len(spans) < 2:
        return float("nan")
    (a_start, a_end), (b_start, b_end) = sorted(
        (float(s["started"]), float(s["ended"])) for s in spans)  # type: ignore[arg-type]
    return max(0.0, min(a_end, b_end) - b_start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generations", type=int, default=6)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folder here")
    args = parser.parse_args()
    import torch

    section("machine")
    print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
    print(f"torch {torch.__version__}, CUDA available to Cambrian: {torch.cuda.is_available()}")
    section("containment (python -m cambrian.evaluate.containment)")
    print(subprocess.run([sys.executable, "-m", "cambrian.evaluate.containment"],
                         capture_output=True, text=True, cwd=ROOT).stdout.rstrip())

    work = Path(tempfile.mkdtemp(prefix="cambrian-gpu-"))
    try:
        for share in (False, True):
            section(f"two concurrent evaluations, one GPU, share={share}")
            began = time.perf_counter()
            spans = asyncio.run(concurrent_on_one_gpu(work / "concurrency", share))
            for span in spans:
                print(f"  CUDA_VISIBLE_DEVICES={span['gpu']} on {span['name']}: "
                      f"{float(span['ended']) - float(span['started']):.2f} s of GPU work")
            print(f"  overlap of the two evaluations' GPU work: {overlap_s(spans):.2f} s "
                  f"(wall {time.perf_counter() - began:.1f} s)")

        section(f"examples/softmax_kernel, {args.generations} generations, scripted stand-in")
        run_dir = (args.keep or work) / "softmax-run"
        with InstantServer(reply) as server:
            model = {"provider": "openai", "model": "stand-in", "base_url": server.base_url,
                     "context_window": 32768, "patch_format": "full"}
            overrides = [f"evolution.generations={args.generations}",
                         "llm.models=[" + json.dumps(model) + "]", "novelty.enabled=false",
                         "meta.enabled=false", "comprehension.enabled=false"]
            from cambrian.api import evolve

            began = time.perf_counter()
            summary = evolve(str(EXAMPLE), run_dir=str(run_dir), overrides=overrides)
            print(f"  run ended: {summary}  ({time.perf_counter() - began:.0f} s, "
                  f"{len(server.arrivals)} model calls)")
        report_candidates(run_dir)
        section("cambrian status")
        print(subprocess.run([sys.executable, "-m", "cambrian.cli", "status", str(run_dir)],
                             capture_output=True, text=True, cwd=ROOT).stdout.rstrip())
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def report_candidates(run_dir: Path) -> None:
    from cambrian.store.store import Store

    store = Store.open(run_dir / "run.sqlite", read_only=True)
    print(f"  {'id':>3} {'parent':>6} {'status':<10} {'score':>7} {'speed-up':>9} "
          f"{'interval':>15} {'noise':>6} {'GPU':>4}  summary")
    for row, result in store.candidates.evaluated_in_commit_order():
        public = result.public or {}
        interval = (f"{public['speedup_low']:.3f}-{public['speedup_high']:.3f}"
                    if "speedup_low" in public else "")
        speed = f"{public['speedup']:.3f}" if "speedup" in public else ""
        noise = f"{100 * public['noise']:.1f}%" if "noise" in public else ""
        score = "" if row.score is None else f"{row.score:.3f}"
        error = (result.error or "").strip().splitlines()
        summary = (error[0][:70] if error else row.description[:70])
        print(f"  {row.id:>3} {row.parent_id or '':>6} {row.status:<10} {score:>7} {speed:>9} "
              f"{interval:>15} {noise:>6} {','.join(result.extra.get('gpus', [])):>4}  {summary}")


if __name__ == "__main__":
    sys.exit(main())
