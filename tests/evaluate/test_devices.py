"""GPUs for evaluations: discovery, leases (one evaluation per GPU unless shared), slots, the
relaxed sandbox of an evaluation holding one, and the error on a machine without any.

No GPU is needed: leases and the sandbox's side of them are checked with GPU names the tests
choose, through real sandboxed evaluations (`CUDA_VISIBLE_DEVICES` is only a name to them).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from cambrian.config import ConfigError, DevicesConfig
from cambrian.evaluate.devices import (
    DevicePool,
    NoDeviceError,
    evaluation_slots,
    relaxed_for_devices,
    visible_gpus,
)
from cambrian.evaluate.factory import device_request
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

# Reports what the evaluation sees, holding its GPU for a moment so overlaps would show.
SEEING_EVALUATOR = """
import json, os, resource, time

def evaluate(program_path):
    started = time.time()
    time.sleep(0.4)
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return {"combined_score": 1.0, "public": {
        "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"), "started": started,
        "ended": time.time(), "as_unlimited": limit == resource.RLIM_INFINITY}}
"""


def test_visible_gpus_follow_cuda_visible_devices_then_the_driver(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = tmp_path / "gpus"
    driver.mkdir()
    for address in ("0000:01:00.0", "0000:02:00.0"):
        (driver / address).mkdir()
    assert visible_gpus({}, driver) == ["0", "1"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "3, 5"}, driver) == ["3", "5"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, driver) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, driver) == []
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi either
    assert visible_gpus({}, tmp_path / "no-driver") == []


async def test_a_pool_never_leases_one_gpu_twice_unless_shared() -> None:
    pool = DevicePool(["0", "1"], 1)
    held: list[tuple[str, ...]] = []
    most_at_once = 0

    async def evaluation() -> None:
        nonlocal most_at_once
        async with pool.lease() as gpus:
            held.append(gpus)
            most_at_once = max(most_at_once, sum(pool.in_use().values()))
            assert all(count <= 1 for count in pool.in_use().values())
            await asyncio.sleep(0.05)

    await asyncio.gather(*(evaluation() for _ in range(6)))
    assert most_at_once == 2 and sorted({gpu for gpus in held for gpu in gpus}) == ["0", "1"]
    assert pool.in_use() == {"0": 0, "1": 0}

    shared = DevicePool(["0"], 1, share=True)
    async with shared.lease() as first, shared.lease() as second:
        assert first == second == ("0",) and shared.in_use() == {"0": 2}


async def test_a_lease_is_given_back_when_the_evaluation_is_cancelled() -> None:
    pool = DevicePool(["7"], 1)

    async def holds_forever() -> None:
        async with pool.lease():
            await asyncio.sleep(60)

    task = asyncio.create_task(holds_forever())
    await asyncio.sleep(0.05)
    assert pool.in_use() == {"7": 1}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pool.in_use() == {"7": 0}


def test_slots_follow_the_gpu_count() -> None:
    assert evaluation_slots(4, 1, 2, share=False) == 2
    assert evaluation_slots(4, 2, 2, share=False) == 1
    assert evaluation_slots(4, 1, 2, share=True) == 4
    assert evaluation_slots(1, 1, 8, share=False) == 1
    assert evaluation_slots(3, 0, 0, share=False) == 3


def test_asking_for_more_gpus_than_the_machine_offers_is_one_clear_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ConfigError) as raised:
        device_request(DevicesConfig(gpu=1))
    message = str(raised.value)
    assert "evaluation.devices.gpu asks for 1 GPU(s)" in message and "offers none" in message
    assert "\n" not in message
    assert device_request(DevicesConfig(gpu=1, fallback="cpu")) == (0, None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert device_request(DevicesConfig(gpu=2)) == (2, ("0", "1"))
    with pytest.raises(NoDeviceError, match="offers only 1"):
        DevicePool(["0"], 2)


def test_the_relaxation_is_stated() -> None:
    relaxed = relaxed_for_devices(4096, share=True)
    assert "no address-space limit" in relaxed[0] and "4096 MB" in relaxed[0]
    assert "share a GPU" in relaxed[1]


def _evaluator(task_dir: Path, **settings: object) -> ProgramEvaluator:
    evaluator_path = task_dir / "evaluator.py"
    evaluator_path.write_text(textwrap.dedent(SEEING_EVALUATOR))
    return ProgramEvaluator(EvaluatorSettings(evaluator_path=evaluator_path, **settings))


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
async def test_concurrent_evaluations_each_get_their_own_gpu(tmp_path: Path, warm: bool) -> None:
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    evaluator = _evaluator(task_dir, gpus=1, gpu_ids=("0",), warm_worker=warm,
                           memory_limit_mb=512)
    try:
        results = await asyncio.gather(*(evaluator.evaluate("X = 1\n", tmp_path / f"w{index}")
                                         for index in range(3)))
    finally:
        await evaluator.close()
    seen = [result.public for result in results]
    assert all(result.status == "ok" for result in results), [r.error for r in results]
    assert [entry["gpus"] for entry in seen] == ["0", "0", "0"]
    spans = sorted((entry["started"], entry["ended"]) for entry in seen)
    # One GPU, not shared: the three evaluations ran one after another.
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))
    # Holding a GPU: no address-space limit (CUDA maps device memory), resident size watched.
    assert all(entry["as_unlimited"] for entry in seen)
    assert all(result.extra["gpus"] == ["0"] for result in results)


async def test_two_gpus_run_two_evaluations_at_once_and_none_leaks_to_a_cpu_task(
        tmp_path: Path) -> None:
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    evaluator = _evaluator(task_dir, gpus=1, gpu_ids=("0", "1"))
    results = await asyncio.gather(*(evaluator.evaluate("X = 1\n", tmp_path / f"w{index}")
                                     for index in range(2)))
    assert sorted(result.public["gpus"] for result in results) == ["0", "1"]
    plain = _evaluator(task_dir, memory_limit_mb=512)
    result = await plain.evaluate("X = 1\n", tmp_path / "plain")
    # A task that asked for no GPU sees none, and keeps its address-space limit.
    assert result.public["gpus"] == "" and result.public["as_unlimited"] is False


async def test_a_gpu_evaluation_over_its_resident_limit_is_out_of_memory(
        tmp_path: Path) -> None:
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "evaluator.py").write_text(textwrap.dedent("""
        import time

        def evaluate(program_path):
            hog = bytearray(400 * 1024 * 1024)   # resident: every page written
            for index in range(0, len(hog), 4096):
                hog[index] = 1
            time.sleep(5)
            return {"combined_score": 1.0}
    """))
    evaluator = ProgramEvaluator(EvaluatorSettings(
        evaluator_path=task_dir / "evaluator.py", gpus=1, gpu_ids=("0",), memory_limit_mb=200,
        timeout_s=60))
    result = await evaluator.evaluate("X = 1\n", tmp_path / "work")
    assert result.status == "memory", (result.status, result.error)
    assert "resident-memory limit of 200 MB" in (result.error or "")
    assert json.dumps(result.extra)  # stored as it is


def test_a_run_asking_for_a_missing_gpu_stops_before_anything_is_made(tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys

    task = tmp_path / "softmax_kernel"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "softmax_kernel", task)
    run_dir = tmp_path / "runs" / "run"
    completed = subprocess.run(
        [sys.executable, "-m", "cambrian.cli", "run", str(task), "-g", "1", "-o", str(run_dir),
         "--set", "evaluation.devices.fallback=error"],
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True,
        timeout=120, check=False)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "evaluation.devices.gpu asks for 1 GPU(s) per evaluation" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert not run_dir.exists()
