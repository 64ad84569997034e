"""`cambrian doctor`, run for real: on this machine as it is, and with parts of it taken away
(compilers off PATH, an extra unimportable, models missing or damaged)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cambrian.llm.model_files import LOCAL_MODELS

WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None  # as if the module's extra were not installed
from cambrian.cli import main
sys.argv = ["cambrian", *sys.argv[2:]]
main()
"""


def doctor(*args: str, env: dict[str, str] | None = None,
           without: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT, without, "doctor", *args],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **(env or {})})


def checks_of(result: subprocess.CompletedProcess[str]) -> dict[tuple[str, str], dict]:
    report = json.loads(result.stdout)
    return {(check["area"], check["name"]): check for check in report["checks"]}


def test_this_machine_as_it_is():
    result = doctor("--json")
    checks = checks_of(result)
    assert checks[("python", "python")]["ok"]
    assert checks[("package", "core packages")]["ok"]
    assert checks[("sandbox", "sandbox runs a command")]["ok"]
    assert checks[("language", "python")]["ok"]
    for (area, name), check in checks.items():
        if not check["ok"]:
            assert check["fix"], f"{area} {name} is missing and names no fix"
    # a compiler on PATH compiled and ran its program in the sandbox
    compilers = {"cpp": "g++", "c": "gcc", "rust": "rustc", "javascript": "node"}
    for language, compiler in compilers.items():
        check = checks[("language", language)]
        assert check["ok"] == (shutil.which(compiler) is not None), check
        if check["ok"]:
            assert "compiled and ran in the sandbox" in check["detail"]
    essentials = [c for c in checks.values() if c["essential"]]
    assert result.returncode == (0 if all(c["ok"] for c in essentials) else 1)
    assert json.loads(result.stdout)["essentials_ok"] == (result.returncode == 0)


def test_without_compilers_on_path(tmp_path: Path):
    """PATH holding no compiler: each language is missing with the command that installs it;
    only a language asked for with --lang makes the exit code 1."""
    empty = tmp_path / "bin"
    empty.mkdir()
    plain = doctor("--no-gpu", env={"PATH": str(empty)})
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "missing cpp: g++ not found on PATH" in plain.stdout
    assert "fix: apt-get install g++" in plain.stdout
    assert "the essentials are here" in plain.stdout
    needed = doctor("--no-gpu", "--lang", "cpp", env={"PATH": str(empty)})
    assert needed.returncode == 1
    assert "MISSING cpp: g++ not found on PATH" in needed.stdout
    assert "essentials missing: cpp" in needed.stdout
    unknown = doctor("--lang", "cobol")
    assert unknown.returncode == 2 and "cannot check language 'cobol'" in unknown.stderr


def test_a_missing_extra_and_missing_or_damaged_models(tmp_path: Path):
    models = tmp_path / "models"
    models.mkdir()
    spec = next(iter(LOCAL_MODELS.values()))
    (models / spec.file_name).write_bytes(b"not the weights")
    result = doctor("--json", "--no-gpu", "--rehash", without="fastapi",
                    env={"CAMBRIAN_MODELS_DIR": str(models)})
    checks = checks_of(result)
    ui = checks[("extra", "ui")]
    assert not ui["ok"] and "fastapi missing" in ui["detail"] and "[ui]" in ui["fix"]
    damaged = checks[("model", spec.name)]
    assert not damaged["ok"] and "pinned SHA-256" in damaged["detail"]
    assert "setup.sh" in damaged["fix"] or "assemble" in damaged["fix"]
    for name in LOCAL_MODELS:
        if name != spec.name:
            absent = checks[("model", name)]
            assert not absent["ok"] and "not assembled" in absent["detail"]
    assert result.returncode == 0  # models and extras are not essentials
