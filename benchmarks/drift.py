"""Agreement drift checked by simulation with known truth (issue 14, item 4), and
`judge report drift` timed as a user runs it. Prints figures; run with

    .venv/bin/python benchmarks/drift.py [--sequences 4000] [--runs 30] [--verdicts 1000]

Each sequence is 8 nights whose audit shares hold n labelled items at a true agreement of 90%;
the last night's true agreement is 90% (noise: any flag is a false flag) or lower (a real
drop: the flag rate is the power). Then the whole command on a database of `--runs` runs of
`--verdicts` verdicts each (5% audited and labelled), in every format.
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

from judge.stats.drift import drift_points


def flag_rate(rng: np.random.Generator, n: int, p_last: float, sequences: int,
              nights: int = 8, p: float = 0.9) -> float:
    flags = 0
    for _ in range(sequences):
        k = [*rng.binomial(n, p, size=nights - 1).tolist(), int(rng.binomial(n, p_last))]
        flags += drift_points(k, [n] * nights)[-1].flagged
    return flags / sequences


def simulate(sequences: int) -> None:
    rng = np.random.default_rng(14)
    print(f"flag rate on the last of 8 nights (true agreement 90% before; {sequences} "
          "sequences per cell)")
    lasts = (0.9, 0.85, 0.8, 0.7)
    print("| audit items per night | " + " | ".join(f"last night {p:.0%}" for p in lasts)
          + " |")
    print("|---:|" + "---:|" * len(lasts))
    for n in (20, 60, 150):
        cells = [flag_rate(rng, n, p, sequences) for p in lasts]
        print(f"| {n} | " + " | ".join(f"{c:.1%}" for c in cells) + " |")


def time_cli(runs: int, verdicts: int) -> None:
    from judge.formats import HumanLabel, Verdict
    from judge.routing import AUDIT
    from judge.store import open_store

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'judge.db'}"
        with open_store(url) as store:
            for r in range(runs):
                rid = f"run-{r:03d}"
                store.save_run(rid, suite="nightly")
                vs, labels = [], []
                for i in range(verdicts):
                    item = f"t{i}#1:scope_fidelity"
                    audit = i % 20 == 0
                    vs.append(Verdict(item_id=item, label="pass", confidence=0.95,
                                      route="review" if audit else "auto_accept",
                                      route_reason=AUDIT if audit else "accepted"))
                    if audit and r == 0:
                        labels.append(HumanLabel(item_id=item, label="pass"
                                                 if rng.random() < 0.9 else "fail",
                                                 violated_key="k", annotator="a"))
                store.save_verdicts(vs, rid)
                store.add_labels([lb.model_copy(update={"violated_key": None})
                                  if lb.label == "pass" else lb for lb in labels])
                store.finish_run(rid)
        judge = str(Path(sys.executable).with_name("judge"))
        env = dict(os.environ)
        for fmt in ("json", "md", "html"):
            t0 = time.perf_counter()
            out = subprocess.run([judge, "report", "drift", "--suite", "nightly", "--format",
                                  fmt, "--db", url], capture_output=True, env=env, check=True)
            dt = time.perf_counter() - t0
            print(f"judge report drift --format {fmt} ({runs} runs x {verdicts:,} verdicts): "
                  f"{dt:.2f} s, {len(out.stdout) / 1024:.0f} KiB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequences", type=int, default=4000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--verdicts", type=int, default=1000)
    a = ap.parse_args()
    simulate(a.sequences)
    if a.runs:
        time_cli(a.runs, a.verdicts)


if __name__ == "__main__":
    main()
