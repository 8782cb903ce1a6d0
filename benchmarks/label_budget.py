"""The label budget checked by simulation with known truth (issue 14, item 3), and the
`judge labels plan` command timed as a user runs it. Prints figures; run with

    .venv/bin/python benchmarks/label_budget.py [--runs 200] [--width 0.1 0.05] [--n 2000]
                                                [--cli-items 20000] [--replan 0.5]
                                                [--bias 0.05 | --uncalibrated]

Each run draws a world of `--n` judged items whose agreement with people follows a known
calibration curve (judge.testing.budget_sim), starts from the 40 labels a review queue would
hold (30 least confident + 10 audits), plans labels for the target width (agreement over every
item, and over the items at or above the routing threshold 0.9), labels the planned items and
measures the widths; then draws random labels from the same start until the same estimator
reaches the width, and a simple random sample from scratch until plain Wilson intervals do.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from judge.testing.budget_sim import trial


def simulate(runs: int, width: float, n: int, *, bias: float = 0.0,
             calibrated: bool = True, replan_at: float | None = None) -> None:
    t0 = time.perf_counter()
    trials = [trial(seed, target_width=width, n=n, bias=bias, calibrated=calibrated,
                    replan_at=replan_at) for seed in range(runs)]
    dt = time.perf_counter() - t0
    planned = np.array([t.start + t.planned for t in trials])
    same = np.array([t.start + t.random_needed for t in trials])
    plain = np.array([t.random_plain for t in trials])
    reached = np.mean([t.reached for t in trials])
    cov = {k: np.mean([t.covered[k] for t in trials]) for k in trials[0].covered}
    world = ("uncalibrated (raw confidence, no threshold)" if not calibrated else
             f"calibration overstating agreement by {bias}" if bias else "calibrated")
    how = "one plan" if replan_at is None else f"re-planned after {replan_at:.0%} of it"
    print(f"width {width}, {runs} runs of {n} items, {world}, {how} ({dt:.1f} s):")
    print(f"  plan reached the width in {reached:.1%} of runs; intervals covered the truth: "
          + ", ".join(f"{k} {v:.1%}" for k, v in cov.items()))
    for name, arr in (("planned (start + plan)", planned),
                      ("random, same start, same estimator", same),
                      ("simple random sample, plain Wilson", plain)):
        print(f"  {name:36} labels: median {np.median(arr):.0f}, p90 "
              f"{np.percentile(arr, 90):.0f}")
    print(f"  planned / random same start (medians): {np.median(planned) / np.median(same):.2f};"
          f" planned / simple random: {np.median(planned) / np.median(plain):.2f}")


def _cli_database(path: Path, n: int) -> str:
    from judge.formats import HumanLabel, Verdict
    from judge.store import open_store

    rng = np.random.default_rng(0)
    conf = rng.beta(5.0, 1.6, size=n)
    fail = rng.random(n) < 0.25
    url = f"sqlite:///{path}"
    verdicts = [Verdict(item_id=f"t{i}#1:bench", label="fail" if f else "pass",
                        violated_key="k" if f else None, confidence=float(round(c, 4)),
                        rubric="bench", prompt_version="v1", prompt_hash="sha256:x",
                        model="scripted") for i, (c, f) in enumerate(zip(conf, fail,
                                                                          strict=True))]
    labels = [HumanLabel(item_id=f"t{i}#1:bench", label="pass", annotator="a")
              for i in range(0, n, 50)]
    with open_store(url) as store:
        store.save_verdicts(verdicts, "bench-run")
        store.add_labels(labels)
    return url


def time_cli(items: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = _cli_database(Path(tmp) / "judge.db", items)
        judge = str(Path(sys.executable).with_name("judge"))
        env = {**os.environ, "JUDGE_CALIBRATION_DIR": str(Path(tmp) / "none")}
        for args in (["--help"], ["labels", "plan", "--rubric", "bench", "--target-width",
                                  "0.05", "--db", url, "--limit", "50"]):
            t0 = time.perf_counter()
            out = subprocess.run([judge, *args], capture_output=True, text=True, env=env,
                                 check=True)
            dt = time.perf_counter() - t0
            head = next((ln.strip() for ln in out.stdout.splitlines() if ln.strip()), "")[:80]
            print(f"judge {' '.join(args[:2])} ({items:,} verdicts): {dt:.2f} s  [{head}]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--width", type=float, nargs="+", default=[0.1, 0.05])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--cli-items", type=int, default=20000)
    ap.add_argument("--bias", type=float, default=0.0,
                    help="the calibration overstates agreement by this much")
    ap.add_argument("--uncalibrated", action="store_true",
                    help="plan on raw confidence, no threshold target")
    ap.add_argument("--replan", type=float, default=None, metavar="SHARE",
                    help="label this share of the plan, plan again, label that plan")
    a = ap.parse_args()
    for w in a.width if a.runs else []:
        simulate(a.runs, w, a.n, bias=a.bias, calibrated=not a.uncalibrated,
                 replan_at=a.replan)
    if a.cli_items:
        time_cli(a.cli_items)


if __name__ == "__main__":
    main()
