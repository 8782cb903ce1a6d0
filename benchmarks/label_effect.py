"""When does calibration take one calibrator per judge label? Simulation with known truth.

    .venv/bin/python benchmarks/label_effect.py [--runs 100] [--n 1100]

`fit_calibrator` takes the per-label methods only when held-out items show a clear gain
(judge.calibration.fit.clear_gain): the paired per-item log-loss test, or, when every raw
confidence is the same (a judge that reports none), also a held-out log-likelihood gain
above 5.41 nats. This counts, over seeded runs, how often each rule takes a per-label fit:

- no label effect, constant confidence: agreement 0.9 on both labels — any per-label fit is
  a false one;
- no label effect, confidence uniform on [0.5, 1] and P(agree) = confidence (the gain rule
  does not apply: both columns must agree);
- the DevAI judge's effect (examples/devai: agreement 0.927 on its fails, 0.846 on its
  passes, every confidence 1.0), 62% fail verdicts.

Prints one line per case: runs taking the per-label fit with the paired test alone, and with
both rules (the shipped behaviour).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import judge.calibration.fit as fit  # noqa: E402

CASES = {
    "no effect, constant confidence": (True, 0.9, 0.9),
    "no effect, uniform confidence": (False, None, None),
    "DevAI effect, constant confidence": (True, 0.927, 0.846),
}


def per_label_runs(runs: int, n: int, constant: bool, p_fail: float | None,
                   p_pass: float | None, seed0: int) -> int:
    taken = 0
    for s in range(runs):
        rng = np.random.default_rng(seed0 + s)
        judge_fail = rng.random(n) < 0.62
        conf = np.ones(n) if constant else rng.uniform(0.5, 1.0, n)
        p = np.where(judge_fail, p_fail, p_pass) if constant else conf
        agreed = (rng.random(n) < p).astype(float)
        taken += fit.fit_calibrator(conf, agreed, judge_fail=judge_fail).method.endswith(
            "_by_label")
    return taken


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--n", type=int, default=1100)
    args = parser.parse_args()
    shipped = fit.HELD_OUT_GAIN_NATS
    for i, (name, (constant, pf, pp)) in enumerate(CASES.items()):
        seed0 = 1000 * (i + 1)
        fit.HELD_OUT_GAIN_NATS = float("inf")  # the paired test alone
        paired = per_label_runs(args.runs, args.n, constant, pf, pp, seed0)
        fit.HELD_OUT_GAIN_NATS = shipped
        both = per_label_runs(args.runs, args.n, constant, pf, pp, seed0)
        print(f"{name}: per-label fit in {paired}/{args.runs} runs with the paired test "
              f"alone, {both}/{args.runs} with both rules ({args.n} items)")


if __name__ == "__main__":
    main()
