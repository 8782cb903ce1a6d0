#!/usr/bin/env bash
# The test command (README and .ci/run both use it).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
