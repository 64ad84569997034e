"""What ``cambrian doctor`` runs rather than looks up: a program compiled and run per language
through the sandbox the judge compiles in, and whether an evaluation in that sandbox reaches a
GPU. Each probe returns a :class:`Check`; none raises for what the machine lacks."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cambrian.evaluate.containment import reclaim_ownership
from cambrian.evaluate.devices import device_env, visible_gpus
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.lang.toolchain import Toolchain, cpp_toolchain, python_toolchain, rust_toolchain

PROBE_TIMEOUT_S = 120.0
GREETING = "cambrian-doctor-ok"


@dataclass(frozen=True)
class Check:
    area: str  # python, package, language, sandbox, model, extra, gpu
    name: str
    ok: bool
    detail: str
    fix: str = ""  # the command (or step) that provides what is missing
    essential: bool = False  # a missing essential makes `cambrian doctor` exit 1


@dataclass(frozen=True)
class LanguageProbe:
    toolchain: Toolchain
    source: str
    fix: str


def _c_toolchain() -> Toolchain:
    # No judged C toolchain exists (a C task's evaluator compiles): gcc as such tasks call it.
    return Toolchain(language="c", source_name="main.c",
                     compile_argv=("gcc", "-O2", "-o", "program", "main.c"),
                     artifact_name="program", version_argv=("gcc", "--version"))


def _javascript_toolchain() -> Toolchain:
    return Toolchain(language="javascript", source_name="main.js",
                     compile_argv=("node", "--check", "main.js"), artifact_name="main.js",
                     version_argv=("node", "--version"), interpreter=("node",))


def language_probes() -> dict[str, LanguageProbe]:
    """Per language: how its programs are compiled and run, a program printing GREETING, and
    the command that installs the toolchain (Debian's packages)."""
    return {
        "python": LanguageProbe(python_toolchain(sys.executable),
                                f'print("{GREETING}")\n', "install Python >= 3.11"),
        "cpp": LanguageProbe(cpp_toolchain(),
                             f'#include <cstdio>\nint main() {{ std::puts("{GREETING}"); }}\n',
                             "apt-get install g++"),
        "c": LanguageProbe(_c_toolchain(),
                           f'#include <stdio.h>\nint main(void) {{ puts("{GREETING}"); }}\n',
                           "apt-get install gcc"),
        "rust": LanguageProbe(rust_toolchain(), f'fn main() {{ println!("{GREETING}"); }}\n',
                              "apt-get install rustc (or rustup from rustup.rs)"),
        "javascript": LanguageProbe(_javascript_toolchain(),
                                    f'console.log("{GREETING}");\n', "apt-get install nodejs"),
    }


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


async def probe_language(name: str, probe: LanguageProbe, essential: bool) -> Check:
    """Compile and run a greeting program as the judge does: the compiler contained in a
    scratch folder (allow-listed environment, the sandbox user), then the program."""
    chain = probe.toolchain
    compiler = chain.compile_argv[0]
    if shutil.which(compiler) is None:
        return Check("language", name, False, f"{compiler} not found on PATH", probe.fix,
                     essential)
    base = Path(tempfile.mkdtemp(prefix="cambrian-doctor-"))
    try:
        build = base / "build"
        build.mkdir()
        (build / chain.source_name).write_text(probe.source)
        compiled = await run_sandboxed(
            list(chain.compile_argv), cwd=build, env=dict(chain.compile_env),
            timeout_s=PROBE_TIMEOUT_S, memory_limit_mb=None, scratch_dir=build,
            read_only_paths=chain.compile_read_paths)
        if compiled.returncode != 0 or not (build / chain.artifact_name).exists():
            why = _first_line(compiled.stderr + compiled.stdout) or \
                f"exit code {compiled.returncode}"
            return Check("language", name, False,
                         f"`{chain.command}` failed in the sandbox: {why}", probe.fix, essential)
        ran = await run_sandboxed(
            chain.run_argv(build / chain.artifact_name), cwd=build, env={},
            timeout_s=PROBE_TIMEOUT_S, memory_limit_mb=None, scratch_dir=build)
        if GREETING not in ran.stdout:
            why = _first_line(ran.stderr) or f"exit code {ran.returncode}"
            return Check("language", name, False, f"the compiled program failed: {why}",
                         probe.fix, essential)
        version = _first_line((await asyncio.to_thread(_version, chain.version_argv)))
        return Check("language", name, True, f"{version or compiler}: compiled and ran in "
                     "the sandbox", essential=essential)
    finally:
        reclaim_ownership(base)
        shutil.rmtree(base, ignore_errors=True)


def _version(argv: tuple[str, ...]) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout or done.stderr


# Run in the sandbox with one GPU leased: what CUDA (through PyTorch, when installed) or the
# driver's tool sees from there.
GPU_PROBE = """
import json, os, shutil, subprocess
seen = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
try:
    import torch
    seen["torch"] = torch.cuda.is_available() and torch.cuda.device_count()
    if seen["torch"]:
        seen["name"] = torch.cuda.get_device_name(0)
        seen["sum"] = float(torch.ones(1024, device="cuda").sum().item())
except ImportError:
    seen["torch"] = None
smi = shutil.which("nvidia-smi")
if smi:
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    seen["smi"] = [line for line in listed.stdout.splitlines() if line.startswith("GPU ")]
print(json.dumps(seen))
"""


async def probe_gpu() -> Check:
    gpus = visible_gpus()
    if not gpus:
        return Check("gpu", "gpu", False,
                     "no GPU (no NVIDIA driver lists one, or CUDA_VISIBLE_DEVICES hides it): "
                     "tasks with evaluation.devices.gpu > 0 cannot run here",
                     "a machine with an NVIDIA GPU and its driver (or evaluation.devices."
                     "fallback: cpu)")
    base = Path(tempfile.mkdtemp(prefix="cambrian-doctor-gpu-"))
    try:
        scratch = base / "scratch"
        scratch.mkdir()
        ran = await run_sandboxed(
            [sys.executable, "-c", GPU_PROBE], cwd=scratch, env=device_env(gpus[:1]),
            timeout_s=PROBE_TIMEOUT_S, memory_limit_mb=None, scratch_dir=scratch)
    finally:
        reclaim_ownership(base)
        shutil.rmtree(base, ignore_errors=True)
    try:
        seen = json.loads(ran.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Check("gpu", "gpu", False, f"{len(gpus)} GPU(s) listed, but the probe in the "
                     f"sandbox failed: {_first_line(ran.stderr) or ran.returncode}",
                     "check the NVIDIA driver (nvidia-smi) and /dev/nvidia* permissions")
    count = f"{len(gpus)} GPU(s) ({', '.join(gpus)})"
    if seen.get("torch"):
        return Check("gpu", "gpu", True, f"{count}; an evaluation in the sandbox ran a CUDA "
                     f"kernel on {seen.get('name')} through PyTorch")
    if seen.get("smi"):
        detail = f"{count}; an evaluation in the sandbox sees {seen['smi'][0]}"
        if seen.get("torch") is None:
            return Check("gpu", "gpu", True, detail + " (PyTorch is not installed, so no "
                         "kernel was run)")
        return Check("gpu", "gpu", False, detail + ", but PyTorch's CUDA is not available "
                     "there", "pip install torch (a CUDA build) in Cambrian's environment")
    return Check("gpu", "gpu", False, f"{count} listed, but an evaluation in the sandbox "
                 f"reaches none ({_first_line(ran.stderr) or 'no device seen'})",
                 "check /dev/nvidia* permissions and the driver (nvidia-smi)")


__all__ = ["Check", "GREETING", "LanguageProbe", "language_probes", "probe_gpu",
           "probe_language"]
