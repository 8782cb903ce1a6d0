"""Speed of agreement statistics (issue 5): target <= 5 s for 1,000 bootstrap resamples over
100,000 labelled items. Prints figures; run with

    .venv/bin/python benchmarks/agreement.py [--n 100000] [--n-boot 1000] [--report]

`--report` also times the whole file-mode path (read 100,000 labels and verdicts, reference
labels, agreement with every breakdown) the way `judge agreement` runs it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from judge.formats import HumanLabel, Verdict
from judge.labels import agreement_report, read_labels, read_verdicts, write_labels, write_verdicts
from judge.stats import compute_agreement


def synth_arrays(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth_fail = rng.random(n) < 0.3
    judge_fail = np.where(rng.random(n) < 0.9, truth_fail, ~truth_fail)
    return np.where(truth_fail, "fail", "pass"), np.where(judge_fail, "fail", "pass")


def bench_arrays(n: int, n_boot: int) -> None:
    human, judge = synth_arrays(n)
    compute_agreement(human[:1000], judge[:1000], judge_all=judge[:1000], n_boot=10)  # warm up
    for label, judge_all in (("labelled only", None), ("labelled + judged set", judge)):
        t0 = time.perf_counter()
        out = compute_agreement(human, judge, judge_all=judge_all, n_boot=n_boot, seed=0)
        dt = time.perf_counter() - t0
        print(f"compute_agreement  n={n:,} n_boot={n_boot:,} ({label}): {dt:.2f} s"
              f"  [kappa {out['cohen_kappa']:.3f} ci {out['ci']['cohen_kappa']}]")


def bench_report(n: int, n_boot: int) -> None:
    human, judge = synth_arrays(n, seed=1)
    rubrics = ("scope_fidelity", "summary_fidelity")
    classes = ("constraint", "permission", "mutable_fact")
    labels = [HumanLabel(item_id=f"t{i}#3:{rubrics[i % 2]}", label=h,  # type: ignore[arg-type]
                         annotator=("asha", "ben", "cy")[i % 3],
                         violated_key=f"key{i % 7}" if h == "fail" else None)
              for i, h in enumerate(human)]
    verdicts = [Verdict(item_id=f"t{i}#3:{rubrics[i % 2]}", label=j,  # type: ignore[arg-type]
                        violated_key=f"key{i % 7}" if j == "fail" else None,
                        metadata={"key_class": classes[i % 3]})
                for i, j in enumerate(judge)]
    with tempfile.TemporaryDirectory() as tmp:
        lp, vp = Path(tmp) / "labels.jsonl", Path(tmp) / "verdicts.jsonl"
        write_labels(lp, labels)
        write_verdicts(vp, verdicts)
        t0 = time.perf_counter()
        labels2, verdicts2 = read_labels(lp), read_verdicts(vp)
        t1 = time.perf_counter()
        agreement_report(labels2, verdicts2, n_boot=n_boot, seed=0)
        t2 = time.perf_counter()
    print(f"read {n:,} labels + {n:,} verdicts (JSONL): {t1 - t0:.2f} s")
    print(f"agreement_report with all breakdowns (n_boot={n_boot:,}, breakdowns 200): "
          f"{t2 - t1:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    bench_arrays(args.n, args.n_boot)
    if args.report:
        bench_report(args.n, args.n_boot)


if __name__ == "__main__":
    main()
