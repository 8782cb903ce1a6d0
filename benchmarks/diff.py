"""`judge diff`: what it finds on the 200 tau-bench airline runs, and what it costs.

1. Usefulness: for each tau-bench task with a reward-1 trial, that trial is the baseline and
   the task's other trials are diffed against it (write calls only count: tau-bench airline's
   mutating tools are its non-lookup tools). Reported: how often write drift (presence or
   argument drift of a write, or terminal `last_write` drift) coincides with reward 0, and
   its absence with reward 1.
2. Cost: `judge diff BASELINE tau.jsonl --format jsonl > file` as a user runs it (a fresh
   process, best of --repeat) beside `judge check` of the same file; and the alignment alone
   on two generated traces of N calls each (O(N²)).

    .venv/bin/python benchmarks/diff.py [--repeat 3] [--calls 1000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
JUDGE = str(Path(sys.executable).parent / "judge")
READ = ("get_*", "list_*", "search_*", "calculate", "think", "transfer_to_human_agents")


def timed(cmd: list[str], out: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        with out.open("wb") as fh:
            subprocess.run(cmd, stdout=fh, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--verbose", action="store_true", help="print each disagreement")
    a = ap.parse_args()
    from judge.diff import DiffOptions, ReadOnlyPolicy, diff_traces
    from judge.diff.align import align
    from judge.diff.calls import Call
    from judge.trace import Trace, iter_traces

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tau = tmp / "tau.jsonl"
        subprocess.run([JUDGE, "import", "tau-bench", str(TAU), "-o", str(tau)], check=True,
                       capture_output=True)
        traces = list(iter_traces(tau))
        by_task: dict[Any, list[Trace]] = defaultdict(list)
        for t in traces:
            by_task[t.metadata["task_id"]].append(t)
        opts = DiffOptions(ReadOnlyPolicy(read_tools=READ, mutating_tools=("*",)))
        table = {(r, w): 0 for r in (0, 1) for w in (True, False)}
        anydrift = {(r, w): 0 for r in (0, 1) for w in (True, False)}
        done = {(r, w): 0 for r in (0, 1) for w in (True, False)}
        tasks = 0
        baseline_file = tmp / "base.json"
        for ts in by_task.values():
            good = [t for t in ts if t.metadata.get("reward") == 1.0]
            if not good:
                continue
            tasks += 1
            base = good[0]
            if not baseline_file.exists():
                baseline_file.write_text(base.model_dump_json(exclude_none=True))
            for t in ts:
                if t is base:
                    continue
                dd = diff_traces(base, t, opts)
                write_drift = any((x.counted and not x.read_only and x.kind != "terminal")
                                  or x.what == "last_write" for x in dd.drifts)
                if a.verbose and (t.metadata.get("reward") == 1.0) == write_drift:
                    print(f"  {t.trace_id} reward {t.metadata.get('reward')} vs "
                          f"{base.trace_id}: " + "; ".join(
                              x.message for x in dd.drifts if x.counted)[:600])
                reward = int(t.metadata.get("reward") or 0)
                table[(reward, write_drift)] += 1
                anydrift[(reward, dd.drift)] += 1
                done[(reward, any((x.counted and not x.read_only and not x.failed
                                   and x.kind != "terminal") or x.what == "last_write"
                                  for x in dd.drifts))] += 1
        print(f"tasks with a reward-1 baseline: {tasks}; other trials diffed: "
              f"{sum(table.values())}")
        for r in (0, 1):
            print(f"  reward {r}: write drift {table[(r, True)]}, none {table[(r, False)]}; "
                  f"any drift (final reply included) {anydrift[(r, True)]}, none "
                  f"{anydrift[(r, False)]}; write drift without failed attempts "
                  f"{done[(r, True)]}, none {done[(r, False)]}")

        out = tmp / "out"
        diff_s = timed([JUDGE, "diff", str(baseline_file), str(tau), "--format", "jsonl",
                        "--mutating", "book_*", "--mutating", "cancel_*", "--mutating",
                        "update_*", "--mutating", "send_*"], out, a.repeat)
        size = out.stat().st_size
        check_s = timed([JUDGE, "check", str(ROOT / "examples/scenarios/tau-airline"),
                         str(tau), "--format", "jsonl"], out, a.repeat)
        help_s = timed([JUDGE, "--help"], out, a.repeat)
        print(f"judge diff BASE tau.jsonl (200 traces) --format jsonl: {diff_s:.2f} s wall "
              f"({size / 1024:.0f} KiB out); judge check same file: {check_s:.2f} s; "
              f"judge --help: {help_s:.2f} s")

        n = a.calls
        calls = [Call(i, i + 1, 0, f"tool{i % 7}", {"i": i}, False, key=str(i))
                 for i in range(n)]
        other = [c for i, c in enumerate(calls) if i % 10]  # every tenth call missing
        t0 = time.perf_counter()
        al = align(calls, other)
        dt = time.perf_counter() - t0
        print(f"align {n} × {len(other)} calls: {dt:.2f} s; {len(al.pairs)} paired, "
              f"{len(al.missing)} missing")


if __name__ == "__main__":
    main()
