"""The environment of a sandboxed command: an allow-list, never the inherited environment.

Kept from Cambrian's environment: PATH, LANG, LANGUAGE, LC_*, TZ, TERM, the Python variables
that change how a program runs (PYTHONPATH, PYTHONHOME, PYTHONHASHSEED, PYTHONIOENCODING,
PYTHONUTF8, PYTHONWARNINGS), VIRTUAL_ENV, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, the variables
that say where a toolchain lives (RUSTUP_HOME, RUSTUP_TOOLCHAIN, PYENV_ROOT, PYENV_VERSION,
JAVA_HOME, GOROOT) and, without a scratch folder, HOME and TMPDIR. With a scratch folder, HOME
is the scratch folder and TMPDIR a folder inside it; a toolchain found under the real HOME by
default (rustup's ~/.rustup, pyenv's ~/.pyenv) gets its variable set to that folder, so it is
still found; so is the folder of Cambrian's embedded models (CAMBRIAN_MODELS_DIR), which an
evaluator scoring a prompt with the embedded model reads. Then the numeric thread caps and PYTHONFAULTHANDLER, then what the caller passes
explicitly (a task's `evaluation.env`), which wins.

`toolchain_paths` names the folders of PATH (and those toolchain homes) the sandbox user could
not reach on its own (a toolchain installed in /root, which only root may enter): the sandbox
exposes them read-only, so `cargo` under ~/.cargo/bin runs inside the sandbox as it does
outside. The home folder itself is never exposed whole.

Secret values (the values of every configured `api_key_env`, registered once per process with
`register_secret_values`, plus any passed per call) never reach the child: a variable whose
value contains one is dropped, with a warning naming the variable, whoever set it.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

# Re-exported: names decide nothing here (the allow-list does); the store redacts by them.
from cambrian.core.secrets import CREDENTIAL_NAME_PATTERN  # noqa: F401

log = logging.getLogger(__name__)

# Numeric libraries otherwise start one thread per core in every evaluation.
THREAD_CAP_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}
# Python tracebacks on fatal signals make "crashed" results explain themselves.
DEFAULT_CHILD_ENV: dict[str, str] = {**THREAD_CAP_ENV, "PYTHONFAULTHANDLER": "1"}

ALLOWED_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONWARNINGS", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
    "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "PYENV_ROOT", "PYENV_VERSION", "JAVA_HOME", "GOROOT",
    "CAMBRIAN_MODELS_DIR",
})
# A toolchain's variable -> its folder under HOME when the variable is unset: kept pointing at
# the real home's folder once HOME is the scratch folder.
TOOLCHAIN_HOMES: dict[str, str] = {"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv",
                                   # the embedded models' weights (llm/model_files.py), read-only:
                                   # an evaluator may run one (examples/prompt_classifier)
                                   "CAMBRIAN_MODELS_DIR": ".cache/cambrian/models"}
ALLOWED_WITHOUT_SCRATCH = frozenset({"HOME", "TMPDIR"})
ALLOWED_PREFIXES = ("LC_",)
SCRATCH_TMP_DIRNAME = ".tmp"
# Shorter values would match by accident (and are no credential).
MIN_SECRET_LENGTH = 6

_registered_secrets: set[str] = set()


def register_secret_values(values: Iterable[str | None]) -> None:
    """Values that must never appear in any sandboxed command's environment (API keys)."""
    _registered_secrets.update(v for v in values if v and len(v) >= MIN_SECRET_LENGTH)


def registered_secret_values() -> frozenset[str]:
    return frozenset(_registered_secrets)


def _allowed(name: str, has_scratch: bool) -> bool:
    if name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES):
        return True
    return not has_scratch and name in ALLOWED_WITHOUT_SCRATCH


def scratch_tmp_dir(scratch_dir: Path) -> Path:
    return scratch_dir / SCRATCH_TMP_DIRNAME


def build_child_env(
    overrides: Mapping[str, str] | None,
    *,
    scratch_dir: Path | None = None,
    secret_values: Iterable[str] = (),
    inherited: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Allow-listed inherited variables, HOME/TMPDIR, thread caps, then the caller's variables."""
    source = os.environ if inherited is None else inherited
    has_scratch = scratch_dir is not None
    env = {name: value for name, value in source.items() if _allowed(name, has_scratch)}
    if scratch_dir is not None:
        real_home = source.get("HOME")
        for name, folder in TOOLCHAIN_HOMES.items():
            if name not in env and real_home and os.path.isdir(os.path.join(real_home, folder)):
                env[name] = os.path.join(real_home, folder)
        env["HOME"] = str(scratch_dir)
        env["TMPDIR"] = str(scratch_tmp_dir(scratch_dir))
    env.update(DEFAULT_CHILD_ENV)
    env.update(overrides or {})
    secrets = _registered_secrets | {
        value for value in secret_values if value and len(value) >= MIN_SECRET_LENGTH
    }
    if secrets:
        leaked = sorted(
            name for name, value in env.items() if any(s in value or s in name for s in secrets)
        )
        for name in leaked:
            log.warning("not passing %s to the sandboxed command: its value holds a secret", name)
            del env[name]
    return env


def _others_may_enter(path: str) -> bool:
    """Whether a user who is neither owner nor group may list ``path`` and reach it (every
    folder above it lets others through)."""
    try:
        if os.stat(path).st_mode & (stat.S_IROTH | stat.S_IXOTH) != (stat.S_IROTH | stat.S_IXOTH):
            return False
        return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).parents)
    except OSError:
        return False


# An existing folder's real path and whether others may enter it, found once per process (the
# same PATH comes with every evaluation). Going stale can only expose less than is needed (a
# folder made private later stays unexposed: the tool fails) or a folder others may enter
# anyway (read-only); a folder missing at first is looked up again each time.
_FOLDER_REACH: dict[str, tuple[str, bool]] = {}


def _folder_reach(entry: str) -> tuple[str, bool] | None:
    known = _FOLDER_REACH.get(entry)
    if known is not None:
        return known
    if not os.path.isdir(entry):
        return None
    real = os.path.realpath(entry)
    known = _FOLDER_REACH[entry] = (real, _others_may_enter(real))
    return known


def toolchain_paths(env: Mapping[str, str], home: str | None = None) -> list[str]:
    """Folders of ``env``'s PATH, and the toolchain homes it names (TOOLCHAIN_HOMES), that the
    sandbox user cannot reach by itself: what the sandbox exposes read-only so that a tool
    installed in a home folder runs contained. Relative entries, ``/``, and the home folder
    (``home``, default Cambrian's HOME) or a folder above it are never named: exposing them
    would expose every file of the home (keys, credentials)."""
    home = os.path.realpath(home or os.environ.get("HOME") or "/root")
    entries = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry]
    entries += [env[name] for name in TOOLCHAIN_HOMES if env.get(name)]
    found: list[str] = []
    for entry in entries:
        reach = _folder_reach(entry) if os.path.isabs(entry) else None
        if reach is None:
            continue
        real, others_may_enter = reach
        if real == "/" or home == real or home.startswith(real.rstrip("/") + "/"):
            continue
        if real not in found and not others_may_enter:
            found.append(real)
    return found
