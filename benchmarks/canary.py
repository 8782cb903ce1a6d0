"""`judge canary` checked by simulation with known truth (issue 26), then timed as a user runs
it. Prints figures; run with

    .venv/bin/python benchmarks/canary.py [--runs 1000] [--seed 26]

Each run is one staged rollout of a candidate whose tasks pass at a known rate, decided by
the library's own decision (judge.compare.canary.decide, the code `judge canary` runs, with
its looks kept in memory instead of the database). The baseline passes 85% of its tasks (the
airline agent's trial pass rate). Stages 5% → 25% → 100% of traffic: stage k brings
share_k × W new tasks (W: the tasks full traffic brings in one stage's window); each stage
is looked at once, or `--holds` times as its traffic arrives (what a pipeline that waits on
a hold does). A rollout stops at its first roll back. Two thresholds: the baseline minus 5
points (a candidate as good as the baseline is 5 above it; one 10 points worse, 5 below) and
the baseline itself (a candidate as good as the baseline sits on it: the strictest case for
false roll-backs). Beside each, a fixed-sample one-sided 95% bound checked at every look
(what the looks would do to a test that ignores them).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from statistics import NormalDist

import numpy as np

from judge.compare.canary import CanaryConfig, StageTasks, decide
from judge.stats.sequential import PRIOR_STRENGTH
from judge.store.rollouts import Look

SHARES = (0.05, 0.25, 1.0)
BASELINE = 0.85


def rollout(rng: np.random.Generator, p: float, theta: float, window: int, holds: int,
            alpha: float = 0.05, prior: float = PRIOR_STRENGTH) -> tuple[str, int, bool]:
    """(decision, stage index it was reached at, whether the fixed-sample test rolled back
    at some look) for one simulated rollout. The canary stops at its first roll back; the
    fixed-sample test is looked at on every stage's data all the same."""
    looks: list[Look] = []
    naive_rollback = False
    z = NormalDist().inv_cdf(1 - alpha)
    done = 0
    seen = 0
    stopped: tuple[str, int] | None = None
    n_all = s_all = 0
    for k, share in enumerate(SHARES):
        new = round(share * window)
        for h in range(holds):
            part = new * (h + 1) // holds - new * h // holds
            outcomes = rng.random(part) < p
            n_all, s_all = n_all + part, s_all + int(outcomes.sum())
            if n_all and s_all / n_all + z * math.sqrt(theta * (1 - theta) / n_all) < theta:
                naive_rollback = True
            if stopped is not None:
                continue
            now = StageTasks(tasks={("s", str(seen + i)): {f"t{seen + i}": bool(x)}
                                    for i, x in enumerate(outcomes)}, traces=part)
            seen += part
            config = CanaryConfig("sim", f"{share:.0%}", share, "pass-rate", theta, alpha,
                                  min_sample=20, prior_strength=prior)
            record = decide(config, looks, now)
            looks.append(Look("sim", len(looks) + 1, config.stage, share, "pass-rate", theta,
                              record["decision"], record["sample"]["tasks"],
                              record["sample"]["successes"],
                              {**record, "stage_tasks": now.to_json()}, datetime.now(UTC)))
            if record["decision"] == "rollback":
                stopped = ("rollback", k)
            done = k
    if stopped is not None:
        return stopped[0], stopped[1], naive_rollback
    return looks[-1].decision if looks else "hold", done, naive_rollback


def table(runs: int, seed: int, windows: tuple[int, ...], holds: int,
          prior: float = PRIOR_STRENGTH) -> None:
    rng = np.random.default_rng(seed)
    print(f"{runs} rollouts per row; baseline pass rate {BASELINE:.0%}; stages "
          f"{', '.join(f'{s:.0%}' for s in SHARES)}; {holds} look(s) per stage; alpha 0.05; "
          f"prior strength {prior:g}")
    print("| threshold | candidate | W (tasks at 100%) | rolled back by 5% | by 25% | by 100% "
          "| promoted at 100% | fixed-sample bound: rolled back at some look |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for theta, tname in ((BASELINE - 0.05, "baseline − 5 points"), (BASELINE, "the baseline")):
        for p, pname in ((BASELINE, "as good as the baseline"),
                         (BASELINE - 0.10, "10 points worse")):
            for w in windows:
                by = [0, 0, 0]
                promoted = naive = 0
                for _ in range(runs):
                    decision, stage, naive_rb = rollout(rng, p, theta, w, holds, prior=prior)
                    if decision == "rollback":
                        for i in range(stage, 3):
                            by[i] += 1
                    promoted += decision == "promote"
                    naive += naive_rb
                print(f"| {theta:.0%} ({tname}) | {p:.0%} ({pname}) | {w} | "
                      + " | ".join(f"{b / runs:.1%}" for b in by)
                      + f" | {promoted / runs:.1%} | {naive / runs:.1%} |")


def time_cli() -> None:
    """The whole command as a pipeline runs it: process start, import, checks, database."""
    root = Path(__file__).resolve().parent.parent
    judge = [sys.executable, "-m", "judge.cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = {**os.environ, "JUDGE_DATABASE_URL": f"sqlite:///{t / 'judge.db'}"}
        subprocess.run([*judge, "import", "tau-bench", str(
            root / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"),
            "-o", str(t / "tau.jsonl")], check=True, capture_output=True, env=env)
        scenario = str(root / "examples/scenarios/tau-airline")
        for name, args in (
                ("canary, 200 traces", ["canary", str(t / "tau.jsonl"), "--rollout", "r",
                                        "--stage", "100%", "--scenario", scenario,
                                        "--threshold", "0.8"]),
                ("compare, 200 against the same 200 traces", ["compare", str(t / "tau.jsonl"),
                                                     str(t / "tau.jsonl"), "--scenario",
                                                     scenario])):
            best = math.inf
            for _ in range(3):
                start = time.perf_counter()
                subprocess.run([*judge, *args], capture_output=True, env=env)
                best = min(best, time.perf_counter() - start)
            print(f"{name}: {best:.2f} s (best of 3, whole command)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--holds", type=int, default=1)
    ap.add_argument("--prior-strength", type=float, default=PRIOR_STRENGTH)
    ap.add_argument("--windows", default="400,1000,2000", help="W values, comma-separated")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    start = time.perf_counter()
    table(args.runs, args.seed, tuple(int(w) for w in args.windows.split(",")), args.holds,
          args.prior_strength)
    print(f"(simulation {time.perf_counter() - start:.0f} s)")
    if not args.no_timing:
        time_cli()


if __name__ == "__main__":
    main()
