"""Speed of calibration (issue 5): target <= 10 s to fit on 100,000 labelled items.

    .venv/bin/python benchmarks/calibration.py [--n 100000] [--repeat 3] [--files]

Times `build_record` end to end on arrays (5-fold cross-validated isotonic and Platt fits,
method choice, refit on all items, held-out threshold search, metrics), and its parts.
`--files` also times the path of `judge calibrate files` (judge.calibration.calibrate_files:
read labels and verdicts, reference labels, pairing, record) on files of the same size, in
process and as the whole command a user runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.calibration import build_record, choose_threshold, fit_calibrator  # noqa: E402


def synth(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = np.round(rng.beta(4, 0.35, n), 4)
    agreed = (rng.random(n) < conf**3).astype(float)
    human_fail = rng.random(n) < 0.4
    return conf, agreed, human_fail


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def files(n: int) -> tuple[float, float]:
    """The file path in process (`calibrate_files`), then `judge calibrate files` as a user
    runs it (process start, imports, output), on the same two files."""
    from judge.calibration.from_files import calibrate_files

    conf, agreed, human_fail = synth(n, 1)
    with tempfile.TemporaryDirectory() as tmp:
        lp, vp = Path(tmp) / "labels.jsonl", Path(tmp) / "verdicts.jsonl"
        with lp.open("w") as lf, vp.open("w") as vf:
            for i in range(n):
                item = f"t{i}/run-1#3:scope_fidelity"
                hf = bool(human_fail[i])
                jf = hf if agreed[i] else not hf
                lf.write(json.dumps({"item_id": item, "label": "fail" if hf else "pass",
                                     "violated_key": "k" if hf else None,
                                     "annotator": "a"}) + "\n")
                vf.write(json.dumps({"item_id": item, "label": "fail" if jf else "pass",
                                     "violated_key": "k" if jf else None,
                                     "confidence": float(conf[i]), "prompt_version": "v1",
                                     "prompt_hash": "h", "model": "m"}) + "\n")
        t0 = time.perf_counter()
        calibrate_files(lp, vp)
        in_process = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "judge.cli.main", "calibrate", "files",
                        "--labels", str(lp), "--verdicts", str(vp)],
                       check=True, stdout=subprocess.DEVNULL)
        return in_process, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", action="store_true")
    args = ap.parse_args()
    conf, agreed, human_fail = synth(args.n)
    fit = fit_calibrator(conf, agreed)
    t_fit = best_of(args.repeat, lambda: fit_calibrator(conf, agreed))
    t_thr = best_of(args.repeat, lambda: choose_threshold(fit.oof_prob, agreed))
    rec = build_record(conf, agreed, human_fail, rubric="r", prompt_version="v1",
                       prompt_hash="h", model="m", label_set_hash="x")
    t_all = best_of(args.repeat, lambda: build_record(
        conf, agreed, human_fail, rubric="r", prompt_version="v1", prompt_hash="h",
        model="m", label_set_hash="x"))
    print(f"items: {args.n:,}  method: {rec.method}  threshold: {rec.threshold}  "
          f"expected review share: {rec.expected_review_share:.3f}")
    print(f"fit_calibrator (5-fold CV of isotonic + Platt, refit): {t_fit:.3f} s")
    print(f"choose_threshold (held-out, Clopper-Pearson):          {t_thr:.3f} s")
    print(f"build_record end to end:                               {t_all:.3f} s "
          f"(target <= 10 s) {'OK' if t_all <= 10 else 'TOO SLOW'}")
    if args.files:
        in_process, command = files(args.n)
        print(f"file path (read, reference labels, pair, record):      {in_process:.3f} s")
        print(f"`judge calibrate files` whole command, same files:     {command:.3f} s")


if __name__ == "__main__":
    main()
