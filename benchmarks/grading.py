"""Grading engine benchmark (issue 3, Speed). Prints figures and ratios, all in one run:

1. judge's own CPU per item beyond the SDK call: the scripted provider (remote path: retry
   helper, worker pool), memory cache, N items — target ≤ 1 ms/item; plus render and
   verdict-parse costs alone;
2. cached rerun of 10,000 items from the JSONL call cache — target ≥ 5,000 items/s and zero
   provider calls;
3. fake server at 100 ms, concurrency 50, 2,000 items: judge (openai provider, JSONL cache)
   vs the plain openai client sending the same requests to the same server at the same
   concurrency — target ≥ 90% of the plain client's throughput;
4. fake server at 1 s, concurrency 100, 2,000 items: items/s vs the 100/s limit — target ≥ 90%.

The fake server runs in a forked process so it does not share the client's GIL. Items are
generated (distinct content, a realistic slice and ledger), rendered by the real prompt.

Run: .venv/bin/python benchmarks/grading.py [--items 2000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

from judge.grading.cache import JsonlCache, MemoryCache
from judge.grading.engine import GradingStats, grade_items
from judge.items import Item
from judge.prompts import Prompt, load_prompt, render
from judge.providers.base import CallCache, ModelParams, Provider
from judge.providers.openai_provider import chat_body
from judge.providers.registry import make_provider
from judge.providers.scripted import ScriptedProvider
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.verdicts import default_completion
from judge.verdicts import parse_verdict

PARAMS = ModelParams()
#: client-process CPU seconds per request, per run (plain openai client, judge)
CPU: dict[str, list[float]] = {"plain": [], "judge": []}


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def _entry(key: str, value: Any, cls: str, sens: str = "normal", source: str = "user",
           status: str = "active") -> dict[str, Any]:
    return {"key": key, "value": value, "class": cls, "persistence": "task",
            "sensitivity": sens, "source": source, "since_turn": 1, "status": status,
            "aliases": []}


def make_items(n: int) -> list[Item]:
    """`n` distinct scope_fidelity items shaped like an airline-support tool call."""
    items: list[Item] = []
    for i in range(n):
        rid = f"R{i:06d}"
        ledger = {
            "turn": 2,
            "active": [
                _entry("changeFlight", f"move reservation {rid} to the 10:40 flight", "goal"),
                _entry("cabin", "economy", "constraint", "costly"),
                _entry("paymentMethod", f"credit_card_{i % 97}", "permission", "costly"),
                _entry("noRefundToGiftCard", True, "constraint", "safety_critical"),
                _entry("reservation", rid, "mutable_fact", source="tool"),
            ],
            "completed": [], "revoked": [], "failed": [], "expired": [],
            "superseded": [{"key": "cabin", "value": "business", "set_turn": 1,
                            "superseded_turn": 2, "class": "constraint",
                            "sensitivity": "costly"}],
        }
        events = (
            {"seq": 5, "turn": 2, "kind": "user",
             "text": f"Please move my reservation {rid} to the 10:40 flight, economy, and "
                     f"charge the card ending {i % 9000 + 1000}."},
            {"seq": 6, "turn": 2, "kind": "tool_call", "tool": "get_reservation_details",
             "args": {"reservation_id": rid}, "call_id": f"c{i}a"},
            {"seq": 7, "turn": 2, "kind": "tool_result", "tool": "get_reservation_details",
             "call_id": f"c{i}a",
             "result": {"reservation_id": rid, "user_id": f"user_{i}", "cabin": "economy",
                        "flights": [{"flight_number": "HAT045", "date": "2024-05-20",
                                     "price": 120 + i % 50}],
                        "payment_history": [{"payment_id": f"credit_card_{i % 97}",
                                             "amount": 240}]}},
            {"seq": 8, "turn": 2, "kind": "tool_call", "tool": "update_reservation_flights",
             "args": {"reservation_id": rid, "cabin": "economy",
                      "flights": [{"flight_number": "HAT112", "date": "2024-05-20"}],
                      "payment_id": f"credit_card_{i % 97}"}, "call_id": f"c{i}b"},
        )
        items.append(Item(
            item_id=f"bench/{i}#8:scope_fidelity", trace_id=f"bench/{i}", seq=8, turn=2,
            rubric="scope_fidelity", kind="tool_call",
            goal="Change the flight of one reservation as the customer asks.",
            ledger=ledger, events=events, target=events[-1],
            ledger_keys=frozenset(e["key"] for e in ledger["active"]),
            slice_seqs=frozenset({5, 6, 7, 8}), candidate={"model": "candidate-model"}))
    return items


async def _grade(items: list[Item], prompt: Prompt, provider: Provider, cache: CallCache,
                 concurrency: int, stats: GradingStats) -> float:
    t0 = time.perf_counter()
    out = await grade_items(items, prompt, provider, cache, params=PARAMS,
                            concurrency=concurrency, rpm=None, retries=4, stats=stats)
    elapsed = time.perf_counter() - t0
    assert len(out) == len(items)
    bad = [v for v in out if v.label == "unscored"]
    if bad:
        raise SystemExit(f"{len(bad)} unscored, e.g. {bad[0].reason}")
    return elapsed


def bench_cpu(prompt: Prompt, n: int) -> None:
    items = make_items(n)
    # render and parse alone
    t0 = time.process_time()
    requests = [render(prompt, it, PARAMS) for it in items]
    render_ms = (time.process_time() - t0) / n * 1000
    texts = [default_completion(r) for r in requests]
    t0 = time.process_time()
    for it, text in zip(items, texts, strict=True):
        parse_verdict(text, it, prompt, "scripted")
    parse_ms = (time.process_time() - t0) / n * 1000
    # the whole engine path
    provider = ScriptedProvider(default=default_completion)
    stats = GradingStats()
    t0 = time.process_time()
    asyncio.run(_grade(items, prompt, provider, MemoryCache(), 50, stats))
    total_ms = (time.process_time() - t0) / n * 1000
    # the scripted provider's own work (building its canned answer), to subtract
    t0 = time.process_time()
    for r in requests:
        default_completion(r)
    provider_ms = (time.process_time() - t0) / n * 1000
    own = total_ms - provider_ms
    print(f"[cpu] scripted provider, {n} items, concurrency 50: {total_ms:.3f} ms/item total, "
          f"of which the scripted provider's own answer {provider_ms:.3f} ms")
    print(f"[cpu]   judge's own CPU per item: {own:.3f} ms (target <= 1 ms: "
          f"{'OK' if own <= 1.0 else 'MISSED'}); render alone {render_ms:.3f} ms, "
          f"verdict parse alone {parse_ms:.3f} ms")


def bench_cached(prompt: Prompt, n: int) -> None:
    items = make_items(n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calls.jsonl"
        with JsonlCache(path) as cache:
            asyncio.run(_grade(items, prompt, ScriptedProvider(default=default_completion),
                               cache, 50, GradingStats()))
        size_mb = path.stat().st_size / 1e6
        t0, c0 = time.perf_counter(), time.process_time()
        cache = JsonlCache(path)
        load_s = time.perf_counter() - t0
        stats = GradingStats()
        no_calls = ScriptedProvider()  # any call would fail its item: none may happen
        grade_s = asyncio.run(_grade(items, prompt, no_calls, cache, 50, stats))
        cpu_s = time.process_time() - c0
        cache.close()
    assert stats.provider_calls == 0 and not no_calls.requests
    _bench_cached_db(prompt, items)
    rate = n / grade_s
    rate_all = n / (grade_s + load_s)
    print(f"[cached] rerun of {n} items: {rate:,.0f} items/s grading, {rate_all:,.0f} items/s "
          f"including opening the {size_mb:.1f} MB cache file ({load_s:.2f} s), "
          f"{n / cpu_s:,.0f} items per CPU-second; provider calls {stats.provider_calls}, "
          f"cache hits {stats.cache_hits} (target >= 5,000 items/s: "
          f"{'OK' if rate_all >= 5000 else 'MISSED'})")


def _bench_cached_db(prompt: Prompt, items: list[Item]) -> None:
    """The same rerun from the database call cache (what judge grade and judge run use)."""
    from judge.store import open_store

    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/calls.db") as store:
        asyncio.run(_grade(items, prompt, ScriptedProvider(default=default_completion),
                           store.calls, 50, GradingStats()))
        stats = GradingStats()
        no_calls = ScriptedProvider()
        c0 = time.process_time()
        grade_s = asyncio.run(_grade(items, prompt, no_calls, store.calls, 50, stats))
        cpu_s = time.process_time() - c0
    assert stats.provider_calls == 0 and not no_calls.requests
    rate = len(items) / grade_s
    print(f"[cached] rerun of {len(items)} items from the SQLite call cache: {rate:,.0f} "
          f"items/s, {len(items) / cpu_s:,.0f} items per CPU-second; provider calls "
          f"{stats.provider_calls} (target >= 5,000 items/s: "
          f"{'OK' if rate >= 5000 else 'MISSED'})")


async def _plain_openai(base_url: str, bodies: list[dict[str, Any]], concurrency: int) -> float:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    queue = iter(bodies)

    async def worker() -> None:
        for body in queue:
            resp = await client.chat.completions.create(**body)
            assert resp.choices[0].message.content

    t0 = time.perf_counter()
    c0 = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    CPU["plain"].append((time.process_time() - c0) / len(bodies))
    await client.close()
    return elapsed


async def _judge_openai(base_url: str, items: list[Item], prompt: Prompt,
                        concurrency: int) -> tuple[float, GradingStats]:
    settings = Settings.load(environ={}, base_url=base_url, concurrency=concurrency)
    provider = make_provider("openai:gpt-4.1-mini", settings)
    stats = GradingStats()
    with tempfile.TemporaryDirectory() as tmp, JsonlCache(Path(tmp) / "calls.jsonl") as cache:
        c0 = time.process_time()  # the CLI's default cache: every call appended to a file
        elapsed = await _grade(items, prompt, provider, cache, concurrency, stats)
        CPU["judge"].append((time.process_time() - c0) / len(items))
    await provider.aclose()
    assert stats.provider_calls == len(items), stats.to_dict()
    return elapsed, stats


def bench_vs_plain(prompt: Prompt, n: int, rounds: int) -> None:
    items = make_items(n)
    bodies = [chat_body(render(prompt, it, PARAMS), "gpt-4.1-mini") for it in items]
    with FakeProviderServer(latency=0.1, process=True) as srv:
        url = srv.openai_base_url
        asyncio.run(_plain_openai(url, bodies[:100], 50))  # warm up both paths
        asyncio.run(_judge_openai(url, make_items(100), prompt, 50))
        plain: list[float] = []
        judged: list[float] = []
        CPU["plain"].clear()
        CPU["judge"].clear()
        for _ in range(rounds):
            plain.append(n / asyncio.run(_plain_openai(url, bodies, 50)))
            judged.append(n / asyncio.run(_judge_openai(url, items, prompt, 50))[0])
    p, j = statistics.median(plain), statistics.median(judged)
    print(f"[100ms] server at 100 ms, concurrency 50, {n} items, {rounds} alternating rounds: "
          f"plain openai client {p:.0f} req/s ({', '.join(f'{x:.0f}' for x in plain)}), "
          f"judge {j:.0f} items/s ({', '.join(f'{x:.0f}' for x in judged)})")
    print(f"[100ms]   judge / plain = {j / p:.1%} (target >= 90%: "
          f"{'OK' if j / p >= 0.9 else 'MISSED'}); ideal (latency bound) = {50 / 0.1:.0f}/s")
    cp, cj = statistics.median(CPU["plain"]) * 1000, statistics.median(CPU["judge"]) * 1000
    print(f"[100ms]   client CPU per request: plain {cp:.2f} ms, judge {cj:.2f} ms "
          f"(judge adds {cj - cp:.2f} ms); {_load()}")


def bench_slow_server(prompt: Prompt, n: int, rounds: int) -> None:
    items = make_items(n)
    CPU["judge"].clear()
    CPU["plain"].clear()
    bodies = [chat_body(render(prompt, it, PARAMS), "gpt-4.1-mini") for it in items]
    judged: list[float] = []
    plain: list[float] = []
    with FakeProviderServer(latency=1.0, process=True) as srv:
        for _ in range(rounds):  # alternating, so both see the same machine load
            plain.append(n / asyncio.run(_plain_openai(srv.openai_base_url, bodies, 100)))
            elapsed, _ = asyncio.run(_judge_openai(srv.openai_base_url, items, prompt, 100))
            judged.append(n / elapsed)
        served = srv.generation_count
    rate, plain_rate = statistics.median(judged), statistics.median(plain)
    cpu_ms = statistics.median(CPU["judge"]) * 1000
    print(f"[1s] server at 1 s, concurrency 100, {n} items, {rounds} alternating rounds: judge "
          f"{rate:.1f} items/s ({', '.join(f'{x:.1f}' for x in judged)}) = {rate / 100:.1%} of "
          f"the 100/s limit (target >= 90%: {'OK' if rate >= 90 else 'MISSED'}); "
          f"{served} requests served in all")
    print(f"[1s]   plain openai client, same server and load: {plain_rate:.1f} req/s "
          f"({', '.join(f'{x:.1f}' for x in plain)}); judge / plain = {rate / plain_rate:.1%}")
    print(f"[1s]   client CPU per request: plain {statistics.median(CPU['plain']) * 1000:.2f} ms, "
          f"judge {cpu_ms:.2f} ms (= {cpu_ms * 100 / 1000:.0%} of one core at 100 items/s); "
          f"{_load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--cpu-items", type=int, default=5000)
    parser.add_argument("--cached-items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["cpu", "cached", "100ms", "1s"], action="append")
    args = parser.parse_args()
    prompt = load_prompt("scope_fidelity")
    want = set(args.only or ["cpu", "cached", "100ms", "1s"])
    print(f"prompt {prompt.rubric} {prompt.version} {prompt.hash[:19]}…")
    if "cpu" in want:
        bench_cpu(prompt, args.cpu_items)
    if "cached" in want:
        bench_cached(prompt, args.cached_items)
    if "100ms" in want:
        bench_vs_plain(prompt, args.items, args.rounds)
    if "1s" in want:
        bench_slow_server(prompt, args.items, max(1, args.rounds - 1))


if __name__ == "__main__":
    main()
