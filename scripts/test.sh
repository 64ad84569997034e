#!/usr/bin/env bash
# Sets up the environment (scripts/setup.sh) and runs the test suite; arguments go to pytest.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
./scripts/setup.sh

status=0
.venv/bin/python -m pytest "$@" || status=$?
if [[ "$status" -eq 5 ]]; then
    echo "[test] error: pytest collected no tests (exit code 5); a run that tests nothing fails." >&2
    exit 1
fi
exit "$status"
