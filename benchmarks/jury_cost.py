"""What a jury costs, measured as a user runs it (issue 14 item 2): the whole `judge grade`
command (process start, import, grading, output) over tau-bench airline traces against the
fake server in a forked process, one judge vs a jury of three models vs five samples of one
model, then the same jury again from the call cache. All in one run, as ratios to the single
judge.

A jury of n seats asks n calls per item, and JUDGE_CONCURRENCY bounds requests in flight, not
items, so its grading takes about n times as long as one judge's; what does not grow is the
rest of the command (process start, import, checks, output), and a rerun asks nothing.

Run: .venv/bin/python benchmarks/jury_cost.py [--traces 40] [--latency 0.2] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.testing.fakeserver import FakeProviderServer

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"
SCENARIO = ROOT / "examples" / "scenarios" / "tau-airline"


def grade(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "judge.cli.main", "grade", str(SCENARIO),
                           *args, "--format", "json", "--no-progress"],
                          env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"judge grade failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)["summary"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=40)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        raw = tmp / "tau.json"
        raw.write_text(json.dumps(json.loads(TAU.read_text())[:opts.traces]))
        traces = tmp / "tau.jsonl"
        subprocess.run([sys.executable, "-m", "judge.cli.main", "import", "tau-bench",
                        str(raw), "-o", str(traces)], check=True, capture_output=True)
        with FakeProviderServer(latency=opts.latency, process=True) as srv:
            env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url,
                   "JUDGE_CONCURRENCY": str(opts.concurrency), "JUDGE_TEMPERATURE": "0.7"}
            runs = [
                ("one judge", ["--model", "openai:judge-a"]),
                ("jury of 3 models", ["--jury", "openai:judge-a,openai:judge-b,openai:judge-c"]),
                ("5 samples of one", ["--model", "openai:judge-a", "--samples", "5"]),
                ("jury of 3, rerun (cached)", ["--jury",
                                               "openai:judge-a,openai:judge-b,openai:judge-c"]),
            ]
            rows = []
            for name, extra in runs:
                # each run its own database, but the rerun the jury's: its calls are cached
                db = tmp / ("1.db" if "rerun" in name else f"{len(rows)}.db")
                seconds, summary = grade([str(traces), *extra, "--db", f"sqlite:///{db}"],
                                         env, tmp)
                rows.append((name, seconds, summary))
    base_s, base = rows[0][1], rows[0][2]
    print(f"judge grade over {base['traces']} tau-bench traces ({base['items']} items), fake "
          f"server latency {opts.latency:.2f} s, concurrency {opts.concurrency}; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'run':28} {'wall s':>7} {'× one':>6} {'calls':>6} {'× one':>6} {'splits':>6}")
    for name, seconds, s in rows:
        calls = s["provider_calls"]
        print(f"{name:28} {seconds:7.2f} {seconds / base_s:6.2f} {calls:6d} "
              f"{calls / max(1, base['provider_calls']):6.2f} {s.get('jury_splits', 0):6d}")


if __name__ == "__main__":
    main()
