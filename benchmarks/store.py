"""Store benchmark: bulk verdict writes on SQLite, review-queue claims on PostgreSQL.

    .venv/bin/python benchmarks/store.py [--verdicts 100000] [--queued 100000] [--claims 500]
                                         [--pg-url URL]

Targets (issue 4): storing 100,000 verdicts in SQLite ≥ 20,000/s; claiming the next review
item with 100,000 queued on PostgreSQL: p95 ≤ 20 ms. Without --pg-url a throwaway server is
started (tests/pg.py); the PostgreSQL part is skipped with a note when no binaries exist.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from judge.calibration import build_record  # noqa: E402
from judge.formats import Verdict  # noqa: E402
from judge.pipeline.route import route_and_save  # noqa: E402
from judge.routing import RoutingPolicy  # noqa: E402
from judge.store import ReviewRequest, open_store  # noqa: E402
from judge.store.review_queue import enqueue  # noqa: E402

R = "scope_fidelity"


def make_verdicts(n: int, seed: int = 0) -> list[Verdict]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.4, 1.0, n)
    fail = rng.uniform(size=n) < 0.2
    return [Verdict(item_id=f"trace-{i // 8}#{i % 8 + 1}:{R}",
                    label="fail" if fail[i] else "pass",
                    violated_key="refundOnce" if fail[i] else None,
                    evidence_event=i % 8 + 1 if fail[i] else None,
                    confidence=float(conf[i]), rationale="bench", rubric=R,
                    prompt_version="v1", prompt_hash="sha256:bench", model="heuristic",
                    metadata={"display_name": "heuristic baseline (no LLM)"})
            for i in range(n)]


def calibration():
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.3, 1.0, 2000)
    return build_record(conf, rng.uniform(size=2000) < conf, rng.uniform(size=2000) < 0.3,
                        rubric=R, prompt_version="v1", prompt_hash="sha256:bench",
                        model="heuristic", label_set_hash="sha256:bench")


def bench_sqlite(n: int) -> None:
    verdicts = make_verdicts(n)
    for calibrated in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"sqlite:///{tmp}/judge.db")
            if calibrated:
                store.save_calibration(calibration())
            run = store.save_run()
            t0, c0 = time.perf_counter(), time.process_time()
            routed = route_and_save(store, verdicts, run, policy=RoutingPolicy())
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            assert store.count_verdicts(run) == n
            queued = store.queue.stats()["total"]
            reviewed = sum(v.route == "review" for v in routed)
            store.close()
        what = "calibrated (routing with the calibrator)" if calibrated else "uncalibrated"
        print(f"sqlite: stored {n:,} verdicts, {what}: {dt:.2f} s wall = {n / dt:,.0f} "
              f"verdicts/s (target ≥ 20,000/s); CPU {cpu:.2f} s = {n / cpu:,.0f}/s of CPU; "
              f"{reviewed:,} routed to review, {queued:,} queued")


def bench_call_cache(n: int = 10_000) -> None:
    from judge.providers.base import CallRecord

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/judge.db")
        records = [CallRecord(cache_key=f"sha256:{i:064x}", item_id=f"trace-{i}#3:{R}",
                              prompt_hash="sha256:bench", model="heuristic",
                              params={"temperature": 0.0, "seed": 0, "max_tokens": 1024},
                              request={"system": "s" * 2000, "messages": [
                                  {"role": "user", "content": "u" * 3000}]},
                              response_text='{"label": "pass", "confidence": 0.7}',
                              usage={"prompt_tokens": 1250}, latency_s=0.8)
                   for i in range(n)]
        t0 = time.perf_counter()
        for r in records:
            store.calls.put(r)
        put = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in records:
            assert store.calls.get(r.cache_key) is not None
        get = time.perf_counter() - t0
        store.close()
    print(f"sqlite call cache ({n:,} calls of ~5 kB): put {n / put:,.0f}/s (one transaction "
          f"each, stored before the verdict), get {n / get:,.0f}/s (a cached rerun's lookups)")


def bench_pg_claims(url: str | None, queued: int, claims: int) -> None:
    server = None
    if url is None:
        from pg import start_server

        try:
            server = start_server()
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"postgres: skipped ({exc})")
            return
        url = server.create_database("bench")
    try:
        store = open_store(url)
        rng = np.random.default_rng(2)
        conf = rng.uniform(0, 1, queued)
        rows = [ReviewRequest(f"trace-{i}#3:{R}", reason="low confidence", rubric=R,
                              safety_critical=bool(i % 50 == 0), confidence=float(conf[i]))
                for i in range(queued)]
        t0 = time.perf_counter()
        with store.engine.begin() as conn:
            for i in range(0, queued, 10_000):
                enqueue(conn, rows[i:i + 10_000])
        fill = time.perf_counter() - t0
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE review_queue")
        store.queue.claim("warmup")
        times = []
        for k in range(claims):
            t = time.perf_counter()
            entry = store.queue.claim(f"ann{k % 8}")
            times.append((time.perf_counter() - t) * 1000)
            assert entry is not None
        times.sort()
        p50 = statistics.median(times)
        p95 = times[int(0.95 * len(times)) - 1]
        print(f"postgres: {queued:,} queued (filled in {fill:.1f} s); {claims} claims: "
              f"p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {times[-1]:.2f} ms (target p95 ≤ 20 ms)")
        store.close()
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verdicts", type=int, default=100_000)
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--claims", type=int, default=500)
    ap.add_argument("--pg-url", default=None)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    bench_sqlite(args.verdicts)
    bench_call_cache()
    bench_pg_claims(args.pg_url, args.queued, args.claims)


if __name__ == "__main__":
    main()
