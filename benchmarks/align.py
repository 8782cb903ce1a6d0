"""`judge align`: how often its gate accepts, by simulation with known truth, and what the
whole command costs on the tau-bench airline items.

    .venv/bin/python benchmarks/align.py [--reps 1000] [--no-command]

1. The gate (judge.stats.paired, the interval `--accept` reads): for held-out sets of n
   items, a parent right on 75% of them and a candidate whose true gain is g, the share of
   simulated runs whose interval lies above 0 — the false acceptance at g = 0, the power
   above it. Items are independent, or grouped (traces of 6 items whose verdicts a prompt
   change moves together, as the clustered test does).
2. The command as a user runs it (a fresh process: start-up, imports, output), with the
   heuristic judge on the 298 scope_fidelity items of the airline trajectories and their
   gold-action labels: the first `judge align` (grading and probing both versions) and its
   rerun (everything from the call cache), best of 3 after one warm-up, in a scratch
   directory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.stats.paired import paired_difference  # noqa: E402


def simulate(n: int, gain: float, reps: int, *, group: int = 1, seed: int = 0) -> float:
    """Share of runs whose gain interval lies above 0."""
    rng = np.random.default_rng(seed)
    p_old, churn = 0.75, 0.1  # a tenth of the parent's wrong items fixed at no gain
    fix = churn + gain / (1 - p_old)
    brk = churn * (1 - p_old) / p_old
    above = 0
    for _ in range(reps):
        groups = n // group
        names = [str(i // group) for i in range(groups * group)]
        if group == 1:
            old = rng.random(n) < p_old
            new = np.where(old, rng.random(n) >= brk, rng.random(n) < fix)
        else:  # a group's items move together: fixed, broken or left as they were
            old = rng.random(groups * group) < p_old
            move = np.repeat(rng.random(groups), group)
            new = np.where(old, move >= brk, move < fix)
        d = paired_difference(new, old, names)
        above += d.ci[0] > 0
    return above / reps


def gate_table(reps: int) -> None:
    print("gate: share of simulated runs accepted (interval above 0), parent right on 75%")
    print(f"{'held-out items':>15} {'grouped':>8} " + " ".join(f"{'g=' + str(g):>8}"
                                                              for g in (0, 0.02, 0.05, 0.1)))
    for n, group in ((60, 1), (150, 1), (300, 1), (600, 1), (150, 6), (300, 6), (600, 6)):
        cells = [simulate(n, g, reps, group=group, seed=17) for g in (0.0, 0.02, 0.05, 0.1)]
        print(f"{n:>15} {('by ' + str(group)) if group > 1 else 'no':>8} "
              + " ".join(f"{c:>8.3f}" for c in cells))


def command_times(repeat: int = 3) -> None:
    judge = str(Path(sys.executable).parent / "judge")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "examples").symlink_to(ROOT / "examples")
        (work / "out").mkdir()
        env = {**os.environ, "JUDGE_DATABASE_URL": f"sqlite:///{work / 'judge.db'}",
               "JUDGE_PROMPTS_DIR": str(work / "out" / "prompts")}
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL"):
            env.pop(var, None)

        def sh(*args: str) -> float:
            started = time.perf_counter()
            subprocess.run(args, cwd=work, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            return time.perf_counter() - started

        sh(judge, "import", "tau-bench", "examples/data/tau-bench-airline/"
           "historical_trajectories/gpt-4o-airline.json", "-o", "out/tau.jsonl")
        sh(judge, "grade", "examples/scenarios/tau-airline", "out/tau.jsonl", "--rubric",
           "scope_fidelity", "-o", "out/v.jsonl")
        sh(judge, "labels", "import", str(ROOT / "labels" / "tau-airline-gold.jsonl"))
        base = work / "judge.db"
        shutil.copy(base, work / "seed.db")
        first, again = [], []
        sh(judge, "--help")  # warm the file cache
        for _ in range(repeat):
            shutil.copy(work / "seed.db", base)
            shutil.rmtree(work / "out" / "prompts", ignore_errors=True)
            first.append(sh(judge, "align", "--rubric", "scope_fidelity"))
            again.append(sh(judge, "align", "--rubric", "scope_fidelity"))
        help_s = min(sh(judge, "--help") for _ in range(repeat))
    print(f"judge align, heuristic, 298 items (147 train, 151 held out, probes of both): "
          f"first {min(first):.2f} s, rerun from the cache {min(again):.2f} s "
          f"(best of {repeat}); judge --help {help_s:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--no-command", action="store_true")
    args = parser.parse_args()
    gate_table(args.reps)
    if not args.no_command:
        command_times()


if __name__ == "__main__":
    main()
