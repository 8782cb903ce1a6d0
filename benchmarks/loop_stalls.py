"""The grading process's event loop under asyncio debug mode: every callback or task step that
held the loop longer than a threshold (asyncio's slow-callback log), issue 25.

    .venv/bin/python benchmarks/loop_stalls.py [--threshold 0.01 0.02 0.05] [--latency 0.1]

One `judge grade` of the 1,164 tau-bench airline tool calls (scope fidelity, concurrency 50)
per threshold, against the wire-format server in a process of its own (benchmarks/replay.py),
with the loop in debug mode (`set_debug(True)`, `slow_callback_duration` = the threshold).
Prints, per threshold, how many steps held the loop longer, the longest, their sum, and the
most frequent (by callback). Debug mode slows the loop itself: the counts are an upper bound.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay

#: run in the measured process: judge's CLI with every new event loop in debug mode
LAUNCH = """
import asyncio.events, logging, sys
_new = asyncio.events.new_event_loop
def new_event_loop():
    loop = _new()
    loop.set_debug(True)
    loop.slow_callback_duration = {threshold}
    return loop
asyncio.events.new_event_loop = new_event_loop
logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="SLOW %(message)s")
from judge.cli.main import main
sys.exit(main())
"""
_TOOK = re.compile(r"took ([0-9.]+) seconds")
_NOISE = re.compile(r" at 0x[0-9a-f]+| took .*|created at .*|wait_for=.*")


def measure(threshold: float, latency: float, tmp: Path, scen: Path, traces: Path) -> None:
    with replay.server(latency) as url:
        cmd = replay.judge_grade_cmd(scen, traces, 50, tmp / f"s{threshold}.db",
                                     tmp / f"s{threshold}.jsonl")
        cmd[1:3] = ["-c", LAUNCH.format(threshold=threshold)]
        done = subprocess.run(cmd, env=replay.env_for(url, tmp), cwd=tmp,
                              capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"judge grade failed ({done.returncode}): {done.stderr[-2000:]}")
    slow = [line for line in done.stderr.splitlines() if line.startswith("SLOW Executing")]
    took = [float(m.group(1)) for line in slow if (m := _TOOK.search(line))]
    print(f"> {threshold * 1000:.0f} ms: {len(slow)} steps, longest "
          f"{max(took, default=0) * 1000:.0f} ms, together {sum(took):.3f} s "
          f"({replay.load_now()})")
    kinds = collections.Counter(_NOISE.sub("", line.removeprefix("SLOW Executing "))
                                .replace(str(replay.ROOT) + "/", "")[:140] for line in slow)
    for kind, n in kinds.most_common(4):
        print(f"    {n:5d}  {kind}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threshold", type=float, nargs="+", default=[0.01, 0.02, 0.05])
    ap.add_argument("--latency", type=float, default=0.1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="judge-stalls-") as d:
        tmp = Path(d)
        scen, traces, _ = replay.prepare_grading(tmp)
        for threshold in args.threshold:
            measure(threshold, args.latency, tmp, scen, traces)


if __name__ == "__main__":
    main()
