"""Structured-output ladder and the item's own schema (issue 20): what they cost per item, and
what a server that refuses JSON Schema costs in requests. Prints figures and ratios, one run:

1. per-call CPU of what this work adds to every request, against the tree before it (run in a
   child process with that tree first on PYTHONPATH, interleaved rounds): the chat body
   (`chat_body`, now with the item's schema) and the call's cache key (`KeyMaker.key`, now
   with the item's enums), for N rendered airline items;
2. the engine, N items at concurrency 16 against the fake server imitating llama-cpp-python
   (JSON Schema refused with HTTP 500): requests per item, this tree against the tree before
   (which retries each refusal) — the tree before needs `--before`;
3. the whole command as a user runs it: `judge grade` on refund-once against that fake, first
   run (the mode is found) and rerun (all cached), wall time and requests.

Run: .venv/bin/python benchmarks/response_format.py [--items 2000] [--rounds 3]
     [--before DIR]   (DIR: the tree before, e.g. `git archive b87f930 | tar -x -C DIR`)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def per_call_cpu(n: int) -> dict[str, float]:
    """µs of CPU per call for the body and the key (this process's judge, whichever tree)."""
    from grading import make_items

    from judge.grading.keys import KeyMaker
    from judge.prompts import load_prompt, render
    from judge.providers.base import ModelParams
    from judge.providers.openai_provider import chat_body

    prompt = load_prompt("scope_fidelity")
    requests = [render(prompt, it, ModelParams()) for it in make_items(n)]
    maker = KeyMaker(prompt.hash, "openai:m", ModelParams(), requests[0].schema,
                     endpoint="http://127.0.0.1:1/v1")
    out = {}
    for name, step in (("body", lambda r: chat_body(r, "m", token_field="max_tokens")),
                       ("key", maker.key)):
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            for r in requests:
                step(r)
            best = min(best, time.process_time() - t0)
        out[name] = best / n * 1e6
    return out


def engine_requests(n: int, base_url: str) -> dict[str, float]:
    """Grade n items with this process's judge (whichever tree) against `base_url`."""
    from grading import make_items

    from judge.grading.cache import MemoryCache
    from judge.grading.engine import GradingStats, grade_items
    from judge.prompts import load_prompt
    from judge.providers.base import ModelParams
    from judge.providers.openai_provider import OpenAIProvider

    provider = OpenAIProvider("gemma-270m", api_key="x", base_url=base_url)
    stats = GradingStats()
    t0 = time.perf_counter()
    out = asyncio.run(grade_items(make_items(n), load_prompt("scope_fidelity"), provider,
                                  MemoryCache(), params=ModelParams(), concurrency=16,
                                  rpm=None, retries=4, retry_base_delay=0.0, stats=stats))
    return {"items": n, "wall_s": time.perf_counter() - t0,
            "unscored": sum(v.label == "unscored" for v in out)}


def child(tree: str, what: str, *args: object) -> dict[str, float]:
    """Run `what(*args)` in a child process whose judge is `tree` ("" for this tree)."""
    env = {**os.environ, "XDG_CACHE_HOME": tempfile.mkdtemp(prefix="rf-bench-")}
    if tree:
        env["PYTHONPATH"] = tree
    call = ", ".join(repr(a) for a in args)
    code = (f"import json, sys; sys.argv = ['x']; sys.path.insert(0, {str(ROOT / 'benchmarks')!r});"
            f"import response_format as b; print(json.dumps(b.{what}({call})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, cwd=tempfile.gettempdir())
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def whole_command() -> list[tuple[str, float, int, str]]:
    from judge.testing.fakeserver import FakeProviderServer

    scenario = ROOT / "examples" / "scenarios" / "refund-once"
    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            FakeProviderServer(dialect="llama-cpp-python") as srv:
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "xdg"),
               "OPENAI_BASE_URL": srv.openai_base_url}
        for run in ("first run", "rerun"):
            before = srv.count("chat")
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "judge.cli.main", "grade", str(scenario),
                 *map(str, sorted(scenario.glob("*.json"))), "--model", "openai:gemma-270m",
                 "--cache", "calls.jsonl"], cwd=tmp, env=env, capture_output=True, text=True,
                check=False)
            rows.append((run, time.perf_counter() - t0, srv.count("chat") - before,
                         done.stdout.strip().splitlines()[-1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="", help="the tree before this work")
    args = parser.parse_args()
    print(f"# response_format benchmark, {args.items} items, {_load()}")
    if args.before:
        now: dict[str, list[float]] = {"body": [], "key": []}
        old: dict[str, list[float]] = {"body": [], "key": []}
        for _ in range(args.rounds):
            for into, tree in ((now, ""), (old, args.before)):
                for k, v in child(tree, "per_call_cpu", args.items).items():
                    into[k].append(v)
        for k in ("body", "key"):
            a, b = statistics.median(now[k]), statistics.median(old[k])
            rounds_now = ", ".join(f"{x:.1f}" for x in now[k])
            rounds_old = ", ".join(f"{x:.1f}" for x in old[k])
            print(f"{k:5} CPU per call: now {a:6.1f} µs (rounds {rounds_now}); before "
                  f"{b:6.1f} µs ({rounds_old}); +{a - b:.1f} µs = {a / b:.2f}x")
    else:
        print("per call:", per_call_cpu(args.items))
    from judge.testing.fakeserver import FakeProviderServer

    n = min(args.items, 200)
    for tree, label in (("", "now"), (args.before, "before")):
        if label == "before" and not tree:
            continue
        with FakeProviderServer(dialect="llama-cpp-python") as srv:
            r = child(tree, "engine_requests", n, srv.openai_base_url)
            requests = srv.count("chat")
        print(f"engine vs fake llama-cpp-python, {label}: {requests} requests for "
              f"{n} items ({requests / n:.3f} per item), {r['unscored']:.0f} unscored, "
              f"{r['wall_s']:.2f} s")
    for run, wall, requests, last in whole_command():
        print(f"judge grade refund-once vs fake llama-cpp-python, {run}: {wall:.2f} s wall, "
              f"{requests} requests; {last}")
    print(f"# done, {_load()}")


if __name__ == "__main__":
    main()
