"""`judge probe` on the tau-bench airline labels: the heuristic baseline's flip and catch
rates, and the whole command's time, first run (every item and variant graded) and second
(every call from the cache). Prints figures; run with

    .venv/bin/python benchmarks/probes.py [--db URL] [--model heuristic] [--limit N]

The 298 tau-bench airline items of `examples/data` under the tau-airline scenario are
stored and labelled by the known rule of tests/db_calibration_data.py (cancel_reservation
and book_reservation are fails, citing confirmBeforeWrite; every other call passes): the
labels the calibration tests and benchmarks/calibrate_db.py use. Each `judge probe` is a
fresh process, as a user runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from db_calibration_data import seed_database  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    ap.add_argument("--model", default="heuristic")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="judge-probe-bench-")
    url = args.db or f"sqlite:///{tmp}/judge.db"
    seed_database(url)
    judge = str(Path(sys.executable).parent / "judge")
    cmd = [judge, "probe", "--rubric", "scope_fidelity", "--model", args.model, "--db", url,
           "--format", "json"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    print("$", " ".join(cmd))
    reports = []
    for label in ("first run", "second run (cached)"):
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                              env={**os.environ, "JUDGE_PROGRESS": "0"})
        wall = time.perf_counter() - started
        report = json.loads(done.stdout)
        reports.append(report)
        s = report["stats"]
        print(f"{label}: {wall:.2f} s wall; {report['n_items']} items + "
              f"{report['n_variants']} variants; {s['provider_calls']} provider calls, "
              f"{s['cache_hits']} cached")
    report = reports[-1]
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print("| kind | family | rate | 95% Wilson CI | hits / n | skipped | excluded |")
    print("|---|---|---|---|---|---|---|")
    rows = [("all invariant", "invariant", report["invariant"], "flipped", "", ""),
            ("all sensitive", "sensitive", report["sensitive"], "caught", "", "")]
    for kind, k in report["kinds"].items():
        hit = "flipped" if k["family"] == "invariant" else "caught"
        extra = f" (original wrong {k['n_original_wrong']})" if "n_original_wrong" in k else ""
        rows.append((kind, k["family"], k, hit, str(k["n_skipped"]),
                     f"{k['n_excluded']}{extra}"))
    for name, family, k, hit, skipped, excluded in rows:
        rate = "n/a" if k["rate"] is None else f"{k['rate']:.3f}"
        ci = "—" if k["ci"] is None else f"[{k['ci'][0]:.3f}, {k['ci'][1]:.3f}]"
        print(f"| {name} | {family} | {rate} | {ci} | {k[hit]} / {k['n']} | {skipped} | "
              f"{excluded} |")


if __name__ == "__main__":
    main()
