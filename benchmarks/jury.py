"""Juries simulated with known truth (issue 14, item 2). Prints figures; run with

    .venv/bin/python benchmarks/jury.py [--runs 100] [--items 1000] [--target 0.9]

The world is tests/jury_sim.py: items with a true label (30% fail) and a latent difficulty;
k jurors (3, 5), right 75% of the time on average, either independently or with errors
correlated through the item's difficulty (icc 0.2), reporting overconfident two-decimal raw
confidences. Each run (seeded by its index) draws `--items` items and judges them with the
real `combine` three ways on the same juror verdicts: vote share at min_share 1.0 and 0.6,
and mean confidence. Half the items calibrate the vote share (judge's `build_record`: fit,
cross-validated threshold for `--target`), the other half is measured and routed with
judge's `route_verdict` (no audit share). "known" columns are exact (Binomial or
Beta-Binomial law of the number of right jurors; the raw confidence's AUROC by quadrature).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from jury_sim import (
    PROMPT,
    JurorVerdicts,
    Panel,
    draw,
    judge_items,
    majority_accuracy,
    raw_auroc,
    spec_for,
    split_probability,
    vote_share_auroc,
    vote_share_ece,
)
from sklearn.metrics import roc_auc_score

from judge.calibration import build_record
from judge.calibration.metrics import expected_calibration_error
from judge.routing import RoutingPolicy, route_verdict

PANELS = [Panel(3), Panel(5), Panel(3, icc=0.2), Panel(5, icc=0.2)]
MIN_SHARES = (1.0, 0.6)


def one_run(panel: Panel, items: int, seed: int, target: float) -> dict[str, float]:
    rng = np.random.default_rng([seed, panel.k, int(panel.icc * 100)])
    drawn = draw(panel, items, rng)
    cache = JurorVerdicts()
    runs = {m: judge_items(drawn, spec_for(panel, m), cache) for m in MIN_SHARES}
    mean = judge_items(drawn, spec_for(panel, 1.0, "mean"), cache)
    run = runs[1.0]
    fit = np.zeros(items, dtype=bool)
    fit[rng.permutation(items)[: items // 2]] = True
    held = ~fit
    record = build_record(run.confidence[fit], run.jury_right[fit], run.truth_fail[fit],
                          rubric=PROMPT.rubric, prompt_version=PROMPT.version,
                          prompt_hash=PROMPT.hash, model=run.verdicts[0].model or "",
                          label_set_hash="sim", target=target, seed=seed)
    right = run.jury_right[held]
    calibrated = np.asarray(record.calibrate(run.confidence[held], run.jury_fail[held]))
    out = {
        "acc_single": float(run.juror_right[:, 0].mean()),
        "acc_jury": float(run.jury_right.mean()),
        "auroc_share": float(roc_auc_score(run.jury_right, run.confidence)),
        "auroc_mean": float(roc_auc_score(mean.jury_right, mean.confidence)),
        "auroc_raw": float(roc_auc_score(run.juror_right[:, 0], run.juror_conf[:, 0])),
        "ece_raw_juror": _ece(run.juror_conf[held, 0], run.juror_right[held, 0]),
        "ece_share": _ece(run.confidence[held], right),
        "ece_calibrated": _ece(calibrated, right),
        "threshold": float("nan") if record.threshold is None else record.threshold,
    }
    policy = RoutingPolicy(audit_share=0.0)
    for m, r in runs.items():
        routes = [route_verdict(v, vetoed=False, calibration=record, policy=policy)
                  for v, h in zip(r.verdicts, held, strict=True) if h]
        accepted = np.array([x.route == "auto_accept" for x in routes])
        out[f"split_{m}"] = float(r.split.mean())
        out[f"review_{m}"] = float(1.0 - accepted.mean())
        out[f"jury_split_{m}"] = float(np.mean([x.reason == "jury split" for x in routes]))
        out[f"precision_{m}"] = (float(r.jury_right[held][accepted].mean()) if accepted.any()
                                 else float("nan"))
    return out


def _ece(prob: np.ndarray, right: np.ndarray) -> float:
    value = expected_calibration_error(prob, right)
    assert value is not None
    return value


def _summary(values: np.ndarray) -> str:
    """Mean and the 5th-95th percentile over the runs (those with a value)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return "n/a"
    return f"{v.mean():.3f} [{np.percentile(v, 5):.3f}, {np.percentile(v, 95):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="seeded runs per jury")
    parser.add_argument("--items", type=int, default=1000, help="items per run")
    parser.add_argument("--target", type=float, default=0.9,
                        help="routing threshold's target precision")
    args = parser.parse_args()
    if args.runs < 1 or args.items < 200:
        parser.error("--runs must be at least 1 and --items at least 200")
    t0 = time.perf_counter()
    print(f"{args.runs} runs of {args.items} items per jury (half fit, half held out); "
          f"juror accuracy 0.75, 30% fail; mean [5th, 95th percentile] over runs\n")
    for panel in PANELS:
        t = time.perf_counter()
        rows = [one_run(panel, args.items, seed, args.target) for seed in range(args.runs)]
        col = {key: np.array([r[key] for r in rows]) for key in rows[0]}
        print(f"{panel.describe()} ({time.perf_counter() - t:.1f} s)")
        print(f"  accuracy      single juror {_summary(col['acc_single'])} "
              f"(known {panel.accuracy:.3f}); jury {_summary(col['acc_jury'])} "
              f"(known {majority_accuracy(panel):.3f})")
        print(f"  AUROC         vote share {_summary(col['auroc_share'])} "
              f"(known {vote_share_auroc(panel):.3f}); jury mean confidence "
              f"{_summary(col['auroc_mean'])}; one juror's raw confidence "
              f"{_summary(col['auroc_raw'])} (known {raw_auroc(panel):.3f})")
        print(f"  ECE held out  one juror's raw confidence {_summary(col['ece_raw_juror'])}; "
              f"vote share before {_summary(col['ece_share'])} (population "
              f"{vote_share_ece(panel):.3f}), after calibration "
              f"{_summary(col['ece_calibrated'])}")
        found = ~np.isnan(col["threshold"])
        print(f"  threshold     for precision {args.target}: found in {found.mean():.0%} of "
              f"runs")
        for m in MIN_SHARES:
            prec = col[f"precision_{m}"]
            has = ~np.isnan(prec)
            met = float(np.mean(prec[has] >= args.target)) if has.any() else float("nan")
            print(f"  min_share {m}: split {_summary(col[f'split_{m}'])} (known "
                  f"{split_probability(panel, m):.3f}); review {_summary(col[f'review_{m}'])}"
                  f" of which 'jury split' {_summary(col[f'jury_split_{m}'])}; "
                  f"auto-accepted precision {_summary(prec)}, >= {args.target} in "
                  f"{met:.0%} of runs with any")
        print()
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
