"""How a judged task compiles a program once and runs it per case: the commands of one
language's toolchain (``evaluate/judge/toolchains.py`` runs them, contained, with a cache)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Toolchain:
    language: str
    source_name: str
    # Run in the build folder, which holds `source_name`; must leave `artifact_name` there.
    compile_argv: tuple[str, ...]
    artifact_name: str
    version_argv: tuple[str, ...]
    # Prefix put before the artifact's path to run it (an interpreter), empty for binaries.
    interpreter: tuple[str, ...] = ()
    # The compiler runs contained (allow-listed environment, HOME in its build folder, maybe
    # another user): variables and folders it needs besides its own executable.
    compile_env: tuple[tuple[str, str], ...] = ()
    compile_read_paths: tuple[str, ...] = ()

    def run_argv(self, artifact: Path) -> list[str]:
        return [*self.interpreter, str(artifact)]

    @property
    def command(self) -> str:
        return " ".join(self.compile_argv)


def cpp_toolchain(compiler: str = "g++") -> Toolchain:
    return Toolchain(
        language="cpp",
        source_name="main.cpp",
        compile_argv=(compiler, "-std=c++17", "-O2", "-o", "program", "main.cpp"),
        artifact_name="program",
        version_argv=(compiler, "--version"),
    )


def _rustup_homes() -> tuple[tuple[str, str], ...]:
    """rustup's proxies find their toolchains through these (by default under HOME)."""
    home = Path.home()
    homes = (("RUSTUP_HOME", os.environ.get("RUSTUP_HOME") or str(home / ".rustup")),
             ("CARGO_HOME", os.environ.get("CARGO_HOME") or str(home / ".cargo")))
    found = tuple((name, folder) for name, folder in homes if Path(folder).is_dir())
    toolchain = os.environ.get("RUSTUP_TOOLCHAIN")
    return found + ((("RUSTUP_TOOLCHAIN", toolchain),) if toolchain else ())


def rust_toolchain(compiler: str = "rustc") -> Toolchain:
    homes = _rustup_homes()
    return Toolchain(
        language="rust",
        source_name="main.rs",
        compile_argv=(compiler, "-O", "--edition", "2021", "-o", "program", "main.rs"),
        artifact_name="program",
        version_argv=(compiler, "--version"),
        compile_env=homes,
        compile_read_paths=tuple(folder for name, folder in homes if name.endswith("_HOME")),
    )


def python_toolchain(python: str = sys.executable) -> Toolchain:
    return Toolchain(
        language="python",
        source_name="main.py",
        compile_argv=(python, "-m", "py_compile", "main.py"),
        artifact_name="main.py",
        version_argv=(python, "--version"),
        interpreter=(python,),
    )
