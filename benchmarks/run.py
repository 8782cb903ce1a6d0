"""Benchmark `judge run` (issue 6): the nightly suite against a local provider at 1 s latency.

1. Nightly over the 200 tau-bench airline trajectories with both rubrics, the fake provider
   at 1 s latency, concurrency 100: wall time vs the limit items ÷ 100 × 1 s (target ≤ 1.2×).
   The run checks, stores and grades; grading overlaps the checks (judge.suite.pipeline).
2. Scale-out: the same work graded by 1 and by 4 `judge worker` processes (concurrency 10
   each, 1 s latency) sharing one PostgreSQL database: throughput ratio (target ≥ 3×).

    .venv/bin/python benchmarks/run.py [--skip-workers] [--worker-items 400]
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

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the throwaway PostgreSQL helper

from judge.providers.registry import make_provider  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.store import open_store  # noqa: E402
from judge.suite import work  # noqa: E402
from judge.suite.plan import make_plan  # noqa: E402
from judge.suite.run import RunOptions, check_and_grade, collect  # noqa: E402
from judge.testing.fakeserver import FakeProviderServer  # noqa: E402

TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"


def suite_file(tmp: Path, scenario: Path, traces: Path) -> Path:
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity", "summary_fidelity"],
        "scenarios": [{"scenario": str(scenario),
                       "traces": [{"path": str(traces), "format": "tau-bench"}]}]}}}))
    return path


async def _plain_client(base_url: str, n: int, concurrency: int) -> float:
    """The plain openai client sending `n` requests at `concurrency`: the floor on this
    machine for the same number of calls (its own CPU and connection set-up included)."""
    import asyncio

    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await client.chat.completions.create(
                model="plain", messages=[{"role": "user", "content": f"seq {i}"}])

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0
    await client.close()
    return wall


def nightly(tmp: Path, scenario: Path = SCENARIO) -> dict[str, float]:
    plan = make_plan(suite_file(tmp, scenario, TAU))
    with FakeProviderServer(latency=1.0, process=True) as srv:
        settings = Settings.load(environ={"OPENAI_BASE_URL": srv.openai_base_url},
                                 concurrency=100)
        provider = make_provider("openai:bench-judge", settings)
        with open_store(f"sqlite:///{tmp / f'nightly-{scenario.name}.db'}") as store:
            run_id = store.save_run(suite="nightly")
            t0 = time.perf_counter()
            collected, stats = check_and_grade(plan, store, run_id, provider, settings,
                                               RunOptions())
            wall = time.perf_counter() - t0
        calls = srv.stats()["counts"].get("chat", 0)
        items = sum(len(v) for v in collected.items.values())
        import asyncio

        plain = asyncio.run(_plain_client(srv.openai_base_url, items, 100))
    limit = items / 100 * 1.0
    return {"traces": len(collected.outcomes), "items": items, "provider_calls": calls,
            "unscored": stats.unscored, "wall_s": wall, "limit_s": limit,
            "ratio": wall / limit, "plain_client_wall_s": plain,
            "plain_client_ratio": plain / limit}


def all_calls_scenario(tmp: Path) -> Path:
    """tau-airline with scope fidelity on every tool call: enough items to time workers."""
    doc = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    doc["judge"] = [{"rubric": "scope_fidelity", "on": "tool_call", "tools": ["*"]}]
    out = tmp / "tau-all" / "scenario.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out.parent


def workers_throughput(tmp: Path, n_workers: int, n_items: int, pg_url: str,
                       base_url: str, warmup_s: float = 8.0) -> dict[str, float]:
    """Items/s of `n_workers` worker processes, timed from enqueueing to the last verdict
    (the workers are started and polling first, so their start-up is not counted)."""
    tmp.mkdir(parents=True, exist_ok=True)
    plan = make_plan(suite_file(tmp, all_calls_scenario(tmp), TAU))
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "JUDGE_DATABASE_URL": pg_url}
    with open_store(pg_url) as store:
        run_id = store.save_run(suite="bench", config={"model": "openai:bench-judge"})
        collected = collect(plan, store)
        items = [it for its in collected.items.values() for it in its][:n_items]
        procs = [subprocess.Popen(
            [sys.executable, "-m", "judge.cli.main", "worker", "--run", run_id,
             "--concurrency", "10", "--idle-exit", str(warmup_s + 5)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(n_workers)]
        time.sleep(warmup_s)
        t0 = time.perf_counter()
        work.enqueue(store, run_id, items, collected.vetoed)
        while work.outstanding(store, run_id) > 0:
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        for p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                raise SystemExit(f"worker failed: {err.strip().splitlines()[-1:]}")
        graded = store.count_verdicts(run_id)
    return {"workers": n_workers, "items": len(items), "graded": graded, "wall_s": wall,
            "items_per_s": len(items) / wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-workers", action="store_true")
    ap.add_argument("--worker-items", type=int, default=400)
    args = ap.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for label, scenario in (("nightly (tau-airline as shipped: mutating calls)", SCENARIO),
                                ("nightly (scope fidelity on every tool call)",
                                 all_calls_scenario(tmp))):
            n = nightly(tmp, scenario)
            results[label] = n
            print(f"{label}: {n['traces']} traces, {n['items']} items, "
                  f"{n['provider_calls']} calls, wall {n['wall_s']:.2f} s vs limit "
                  f"{n['limit_s']:.2f} s (items/100 × 1 s): ratio {n['ratio']:.2f} "
                  f"(target ≤ 1.2); the plain openai client alone, same calls: "
                  f"{n['plain_client_wall_s']:.2f} s, ratio {n['plain_client_ratio']:.2f}")
        if not args.skip_workers:
            from pg import start_server

            pg = start_server()
            try:
                with FakeProviderServer(latency=1.0, process=True) as srv:
                    one = workers_throughput(tmp / "w1", 1, args.worker_items,
                                             pg.create_database(), srv.openai_base_url)
                    four = workers_throughput(tmp / "w4", 4, args.worker_items,
                                              pg.create_database(), srv.openai_base_url)
            finally:
                pg.stop()
            ratio = four["items_per_s"] / one["items_per_s"]
            results["workers"] = {"one": one, "four": four, "ratio": ratio}
            print(f"workers: 1 worker {one['items_per_s']:.1f} items/s "
                  f"({one['items']} items in {one['wall_s']:.1f} s); 4 workers "
                  f"{four['items_per_s']:.1f} items/s ({four['wall_s']:.1f} s): "
                  f"ratio {ratio:.2f} (target ≥ 3)")
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
