"""`judge serve` benchmark: the item page's server time with 100,000 items in the store.

    .venv/bin/python benchmarks/serve.py [--items 100000] [--pages 300] [--pg-url URL]
                                         [--backends sqlite,postgres]

Target (issue 13): the item page renders in ≤ 50 ms of server time with 100,000 items in
the store (and 100,000 in the review queue), on SQLite and PostgreSQL.

What runs: the store is filled (items with a ledger snapshot and an 8-event slice, one
verdict each, every item queued); then the whole command `judge serve --db URL --port P`
starts as a user starts it (a separate process), and one HTTP client signs in and
- asks for the same item page `--pages` times (server time from each response's
  `Server-Timing: app;dur=…`, which the app measures from request to response start, and
  the client's round trip),
- labels its way through 100 items (label → claim next → redirect → item page), timing the
  item page of each freshly claimed item and the label POST (label + claim of the next),
- and loads the queue page (counts by state, reason and rubric; agreement) 20 times.
Also the command's start-up: process start to the first answered request.
Without --pg-url a throwaway PostgreSQL server is started (tests/pg.py).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from judge.formats import Verdict  # noqa: E402
from judge.store import ReviewRequest, open_store  # noqa: E402

R = "scope_fidelity"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def item(n: int) -> dict[str, Any]:
    tid = f"bench/run-{n // 4}"
    seq = 8 * (n % 4) + 8
    events = [{"seq": seq - 7 + i, "turn": 2, "kind": k, "text": f"message {i} of {tid}",
               "tool": "refund_order", "args": {"orderId": f"order-{n}", "amountCents": 4200},
               "result": {"ok": True, "paidCents": 4200}}
              for i, k in enumerate(["user", "assistant", "tool_call", "tool_result",
                                     "assistant", "tool_call", "tool_result", "tool_call"])]
    return {
        "item_id": f"{tid}#{seq}:{R}", "trace_id": tid, "seq": seq, "turn": 2, "rubric": R,
        "kind": "tool_call", "goal": f"Refund order-{n} once and tell the customer",
        "safety_critical": n % 50 == 0,
        "ledger": {"turn": 2,
                   "active": [{"key": f"k{j}", "value": f"value {j} of order-{n}",
                               "class": "mutable_fact", "sensitivity": "normal",
                               "since_turn": 1 + j % 2} for j in range(10)],
                   "completed": [], "revoked": [], "failed": [], "expired": [],
                   "superseded": [{"key": "k1", "value": "old", "class": "mutable_fact",
                                   "sensitivity": "normal", "set_turn": 1,
                                   "superseded_turn": 2}]},
        "events": events, "target": {"seq": seq, "kind": "tool_call", "tool": "refund_order"},
        "ledger_keys": [f"k{j}" for j in range(10)],
        "slice_seqs": [e["seq"] for e in events],
    }


def fill(url: str, n: int) -> float:
    start = time.perf_counter()
    with open_store(url) as store:
        run = store.save_run("bench-run")
        chunk = 5000
        for lo in range(0, n, chunk):
            items = [item(i) for i in range(lo, min(n, lo + chunk))]
            store.save_items(items)
            verdicts = [Verdict(item_id=it["item_id"], label="pass", confidence=0.5 + (i % 40)
                                / 100, rationale="bench", rubric=R, prompt_hash="sha256:b",
                                model="heuristic") for i, it in enumerate(items)]
            store.save_verdicts(verdicts, run, queue=[
                ReviewRequest(item_id=it["item_id"], reason="low confidence", rubric=R,
                              safety_critical=it["safety_critical"],
                              confidence=v.confidence) for it, v in zip(items, verdicts,
                                                                        strict=True)])
        token = store.annotators.add_token("bench")
        assert store.queue.stats()["total"] == n
    os.environ["_BENCH_TOKEN"] = token
    return time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def summary(name: str, server: list[float], client: list[float]) -> str:
    return (f"  {name:<34} n={len(server):>4}  server p50 {statistics.median(server):6.2f} ms"
            f"  p95 {pct(server, 0.95):6.2f}  max {max(server):6.2f}   round trip p50 "
            f"{statistics.median(client):6.2f} ms  p95 {pct(client, 0.95):6.2f}")


def server_ms(r: httpx.Response) -> float:
    return float(r.headers["server-timing"].split("dur=")[1])


def bench(url: str, pages: int) -> None:
    token = os.environ["_BENCH_TOKEN"]
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "judge.cli.main", "serve", "--db", url,
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            while True:
                try:
                    c.get("/login")
                    break
                except httpx.TransportError:
                    if proc.poll() is not None or time.perf_counter() - t0 > 60:
                        raise RuntimeError(proc.stderr.read() if proc.stderr else "") from None
                    time.sleep(0.05)
            startup = time.perf_counter() - t0
            page = c.get("/login").text
            c.post("/login", data={"csrf_token": CSRF.findall(page)[0], "token": token})
            home = c.get("/")
            queue_s, queue_c = [], []
            for _ in range(20):
                t = time.perf_counter()
                q = c.get("/")
                queue_c.append((time.perf_counter() - t) * 1000)
                queue_s.append(server_ms(q))
            r = c.post("/next", data={"csrf_token": CSRF.findall(home.text)[0]})
            loc = r.headers["location"]
            for _ in range(5):  # warm up
                c.get(loc)
            same_s, same_c = [], []
            for _ in range(pages):
                t = time.perf_counter()
                r = c.get(loc)
                same_c.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, r.status_code
                same_s.append(server_ms(r))
            fresh_s, fresh_c, label_s, label_c = [], [], [], []
            html = r.text
            for _ in range(100):
                iid = httpx.URL(loc).params["id"]
                t = time.perf_counter()
                r = c.post("/label", data={"csrf_token": CSRF.findall(html)[0], "id": iid,
                                           "label": "pass"})
                label_c.append((time.perf_counter() - t) * 1000)
                label_s.append(server_ms(r))
                loc = r.headers["location"]
                t = time.perf_counter()
                r = c.get(loc)
                fresh_c.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200 and "item-id" in r.text
                fresh_s.append(server_ms(r))
                html = r.text
        print(f"  whole command start-up (process start → first answer): {startup:.2f} s")
        print(summary("item page, same item", same_s, same_c))
        print(summary("item page, each new claim", fresh_s, fresh_c))
        print(summary("label POST (save + claim next)", label_s, label_c))
        print(summary("queue page (counts, agreement)", queue_s, queue_c))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--pg-url")
    ap.add_argument("--backends", default="sqlite,postgres")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"judge serve item page, {args.items:,} items queued; load average {load:.1f} at "
          f"start, {os.cpu_count()} cores")
    backends = args.backends.split(",")
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as d:
            url = f"sqlite:///{d}/bench.db"
            print(f"sqlite: filled in {fill(url, args.items):.1f} s")
            bench(url, args.pages)
    if "postgres" in backends:
        server = None
        url = args.pg_url
        if url is None:
            try:
                from pg import start_server
                server = start_server()
            except (FileNotFoundError, RuntimeError) as exc:
                print(f"postgres: skipped ({exc})")
                return
            url = server.create_database("bench")
        try:
            print(f"postgres: filled in {fill(url, args.items):.1f} s")
            bench(url, args.pages)
        finally:
            if server is not None:
                server.stop()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
