"""Speed of `judge calibrate fit --rubric R` on the database (issue 5 §2). Prints figures;
run with

    .venv/bin/python benchmarks/calibrate_db.py [--copies 10] [--db URL]

The 298 tau-bench airline items are copied under new trace ids (`--copies` times) and all
labelled by a known rule; a local scripted judge (no network, no retries) answers. Timed:
reading the labelled items back, the first calibration (every item graded and its call stored
in the cache, the verdicts stored, the record fitted, written and stored), and a second one
(every call from the cache, zero provider calls).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from db_calibration_data import RUBRIC, airline_items, label_for, scripted_judge

from judge.calibration.regrade import calibrate_rubric, labelled_items
from judge.items import Item
from judge.providers.scripted import ScriptedProvider
from judge.settings import Settings
from judge.store import open_store


def copies(n: int) -> list[Item]:
    out: list[Item] = []
    for k in range(n):
        for it in airline_items():
            trace = f"copy{k}/{it.trace_id}"
            out.append(dataclasses.replace(it, trace_id=trace,
                                           item_id=f"{trace}#{it.seq}:{it.rubric}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--db", default=None, help="database URL (default: a temporary SQLite)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    url = args.db or f"sqlite:///{tmp / 'judge.db'}"
    items = copies(args.copies)
    settings = Settings.load()
    with open_store(url) as store:
        t = time.perf_counter()
        store.save_items(items)
        store.add_labels([label_for(it) for it in items])
        print(f"seeded {len(items):,} items and labels in {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        found = labelled_items(store, RUBRIC)
        print(f"read {len(found.items):,} labelled items back: {time.perf_counter() - t:.2f} s")
        for name, provider in (
            ("first (graded)", ScriptedProvider(default=scripted_judge(), spec="scripted",
                                                remote=False)),
            ("second (cached)", ScriptedProvider(default=None, spec="scripted", remote=False)),
        ):
            t = time.perf_counter()
            run = calibrate_rubric(store, RUBRIC, provider, settings, root=tmp / "calibration")
            s = run.stats
            print(f"calibrate {name}: {time.perf_counter() - t:.2f} s for {s.items:,} items; "
                  f"{s.provider_calls:,} provider calls, {s.cache_hits:,} cached; threshold "
                  f"{run.record.threshold}, review share {run.record.expected_review_share:.3f}")


if __name__ == "__main__":
    main()
