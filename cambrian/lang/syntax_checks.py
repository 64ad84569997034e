"""Cheap syntax checks on a patched program, before it is spent on an evaluation.

Each language names its check (``Language.syntax_check``): Python is compiled in-process, C and
C++ go through ``gcc``/``g++ -fsyntax-only`` and Rust through ``rustc --emit=metadata``; when a
compiler is missing or times out the check is skipped (None), since the evaluation will report
the problem anyway. YAML and JSON text artifacts (configs) are parsed in-process. Languages
without a check (plain text, markdown) are not checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

COMPILER_TIMEOUT_S = 30.0
MAX_REPORTED_ERRORS = 3

_GCC_ERROR = re.compile(r"^<stdin>:(\d+):(?:(\d+):)? (?:fatal )?error: (.*)$", re.MULTILINE)
_RUST_ERROR = re.compile(r"^error(?:\[(E\d+)\])?: (.*)$")
_RUST_LOCATION = re.compile(r"^\s*--> .*?:(\d+):(\d+)$")


def _python_error(source: str) -> str | None:
    try:
        compile(source, "<program>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        shown = f": `{line}`" if line else ""
        return f"line {exc.lineno}: {exc.msg}{shown}"
    except ValueError as exc:  # e.g. null bytes in the source
        return str(exc)
    return None


def _run(command: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMPILER_TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C"},  # plain ASCII quotes in compiler messages
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _gcc_error(source: str, compiler: str, language_flags: list[str],
               include_dir: str | None = None) -> str | None:
    if shutil.which(compiler) is None:
        return None
    includes = ["-iquote", include_dir] if include_dir else []
    result = _run([compiler, *language_flags, *includes, "-fsyntax-only", "-fmax-errors=5", "-"],
                  stdin=source)
    if result is None or result.returncode == 0:
        return None
    errors = [f"line {m.group(1)}: {m.group(3)}" for m in _GCC_ERROR.finditer(result.stderr)]
    if not errors:
        return result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "compilation failed"
    return "; ".join(errors[:MAX_REPORTED_ERRORS])


def _rust_error(source: str) -> str | None:
    if shutil.which("rustc") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="cambrian-rustc-") as directory:
        path = Path(directory) / "program.rs"
        path.write_text(source)
        command = ["rustc", "--edition", "2021", "--crate-type", "lib", "--emit=metadata", "-A", "warnings"]
        result = _run([*command, "--out-dir", directory, str(path)])
    if result is None or result.returncode == 0:
        return None
    errors: list[str] = []
    message: str | None = None
    for line in result.stderr.splitlines():
        error = _RUST_ERROR.match(line)
        if error and not error.group(2).startswith("aborting due to"):
            message = error.group(2)
            continue
        location = _RUST_LOCATION.match(line)
        if location and message is not None:
            errors.append(f"line {location.group(1)}: {message}")
            message = None
    if not errors:
        return "compilation failed: " + (result.stderr.strip().splitlines() or ["no output"])[0]
    return "; ".join(errors[:MAX_REPORTED_ERRORS])


def python_syntax(source: str) -> str | None:
    return _python_error(source)


def cpp_syntax(source: str) -> str | None:
    return _gcc_error(source, "g++", ["-std=c++17", "-x", "c++"])


def c_syntax(source: str) -> str | None:
    return _gcc_error(source, "gcc", ["-x", "c"])


def rust_syntax(source: str) -> str | None:
    return _rust_error(source)


# The checks that can see a file's own folder (its quoted #includes), by check.
READS_INCLUDES: dict[Callable[[str], str | None], Callable[[str, str], str | None]] = {
    cpp_syntax: lambda source, folder: _gcc_error(source, "g++", ["-std=c++17", "-x", "c++"],
                                                  folder),
    c_syntax: lambda source, folder: _gcc_error(source, "gcc", ["-x", "c"], folder),
}


def yaml_syntax(source: str) -> str | None:
    """Whether every document of ``source`` parses as YAML (comments, markers included, are
    YAML comments)."""
    try:
        for _ in yaml.safe_load_all(source):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"{where}{exc.problem or exc.context or 'not valid YAML'}"
    except yaml.YAMLError as exc:
        return str(exc).splitlines()[0] if str(exc) else "not valid YAML"
    return None


def json_syntax(source: str) -> str | None:
    try:
        json.loads(source)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    return None
