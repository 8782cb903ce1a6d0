#!/usr/bin/env bash
# Set up (if needed) and run the main job on the embedded defaults: the nightly suite over the
# example scenarios and the 200 tau-bench airline trajectories, with SQLite (./judge.db) and,
# with no API key configured, the offline heuristic judge. Writes the run report to
# out/nightly.md (for CI step summaries) and out/nightly.html (the page to open), and ends by
# printing the HTML report's path. Exit status is the release gate: 0 passed, 1 failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/judge ] || ./scripts/setup.sh
mkdir -p out
set +e
.venv/bin/judge run examples/nightly.yaml --suite nightly --format json "$@" \
  > out/nightly.json
status=$?
set -e
if [ "$status" -ge 2 ]; then
  exit "$status"
fi
run_id=$(.venv/bin/python -c "import json; print(json.load(open('out/nightly.json'))['run_id'])")
.venv/bin/judge report run "$run_id" --format text
.venv/bin/judge report run "$run_id" --format md -o out/nightly.md >/dev/null
.venv/bin/judge report run "$run_id" --format html -o out/nightly.html >/dev/null
echo "run $run_id in ./judge.db; Markdown report: out/nightly.md"
echo "$PWD/out/nightly.html"
exit "$status"
