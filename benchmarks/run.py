"""Benchmark `judge run` as a user runs it: whole processes, side by side, in one run.

1. grading: the 1,164-item run (scope_fidelity on every tool call of the 200 tau-bench
   airline trajectories) against the local fake server, `judge run SUITE --model openai:…`
   in its own process vs the plain openai client sending the same requests in its own
   process (benchmarks/plain_client.py) vs inspect_ai's model_graded_qa on the same items
   (benchmarks/inspect_grader.py, when inspect_ai is installed), at 100 ms latency /
   concurrency 50 and 1 s / concurrency 100. Rounds alternate; medians; each process's
   CPU seconds beside its wall time. Target: judge ≥ 0.9× the plain client's throughput.
2. nightly: `judge run examples/nightly.yaml --suite nightly` at 1 s latency,
   concurrency 100, whole process: wall time vs the limit items ÷ 100 × 1 s (target ≤ 1.5×).
3. scale-out: the same work graded by 1 and by 4 `judge worker` processes (concurrency 10
   each, 1 s latency) sharing one PostgreSQL database: throughput ratio (target ≥ 3×).

    .venv/bin/python benchmarks/run.py [--rounds 3] [--only grading|nightly|workers]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(ROOT / "tests"))  # the throwaway PostgreSQL helper

from judge.pipeline.collect import Checker  # noqa: E402
from judge.pipeline.worker import enqueue_run  # noqa: E402
from judge.prompts import render  # noqa: E402
from judge.providers.openai_provider import chat_body  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.store import open_store  # noqa: E402
from judge.suite.plan import make_plan  # noqa: E402
from judge.suite.run import sources  # noqa: E402
from judge.testing.fakeserver import FakeProviderServer  # noqa: E402

TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
NIGHTLY = ROOT / "examples/nightly.yaml"
JUDGE = [str(Path(sys.executable).parent / "judge")]
MODEL = "openai:bench-judge"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def all_calls_suite(tmp: Path) -> Path:
    """tau-airline with scope fidelity on every tool call, as a one-suite manifest."""
    doc = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    doc["judge"] = [{"rubric": "scope_fidelity", "on": "tool_call", "tools": ["*"]}]
    scen = tmp / "tau-all" / "scenario.yaml"
    scen.parent.mkdir(parents=True, exist_ok=True)
    scen.write_text(yaml.safe_dump(doc, sort_keys=False))
    suite = tmp / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"all-calls": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(scen.parent),
                       "traces": [{"path": str(TAU), "format": "tau-bench"}]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}))
    return suite


def request_bodies(suite: Path, out: Path, name: str | None = None) -> int:
    """The chat requests judge sends for the suite's items (what the plain client sends)."""
    plan = make_plan(suite, name, allow_outside=True)
    settings = Settings.load(environ={})
    checked = Checker(sources(plan, []), None).run()
    params = settings.model_params()
    with out.open("w", encoding="utf-8") as fh:
        for it in checked.items:
            req = render(plan.prompts[it.rubric], it, params, settings.redaction())
            body = chat_body(req, MODEL.split(":", 1)[1], token_field="max_tokens")
            fh.write(json.dumps(body) + "\n")
    return len(checked.items)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system) of one process run to the end; its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def judge_run(suite: Path, base_url: str, concurrency: int, tmp: Path, k: int,
              extra: tuple[str, ...] = ()) -> tuple[float, float, dict[str, Any]]:
    db = tmp / f"judge-{k}.db"
    env = {**os.environ, "OPENAI_BASE_URL": base_url}
    env.pop("JUDGE_DATABASE_URL", None)
    wall, cpu, out = timed([*JUDGE, "run", str(suite), "--allow-outside", *extra, "--model", MODEL,
                            "--concurrency", str(concurrency), "--no-progress", "--format",
                            "json", "--db", f"sqlite:///{db}"], env, tmp)
    summary = json.loads(out)
    return wall, cpu, summary


def grading(tmp: Path, rounds: int, with_inspect: bool) -> dict[str, Any]:
    suite = all_calls_suite(tmp)
    bodies = tmp / "bodies.jsonl"
    n = request_bodies(suite, bodies)
    results: dict[str, Any] = {"items": n}
    for latency, concurrency in ((0.1, 50), (1.0, 100)):
        runs: dict[str, list[tuple[float, float]]] = {"judge": [], "plain": [], "inspect": []}
        with FakeProviderServer(latency=latency, process=True) as srv:
            url = srv.openai_base_url
            for k in range(rounds):
                wall, cpu, summary = judge_run(suite, url, concurrency, tmp,
                                               len(runs["judge"]) + 100 * concurrency)
                j = summary["judge"]
                if j["items"] != n or j["unscored"] or j["provider_calls"] != n:
                    raise SystemExit(f"judge graded {j} of {n} items")
                runs["judge"].append((wall, cpu))
                wall, cpu, _ = timed([sys.executable, str(BENCH / "plain_client.py"),
                                      str(bodies), url, str(concurrency)], dict(os.environ), tmp)
                runs["plain"].append((wall, cpu))
                if with_inspect and k < max(1, rounds - 1):
                    wall, cpu, _ = timed([sys.executable, str(BENCH / "inspect_grader.py"),
                                          str(bodies), url, str(concurrency),
                                          str(tmp / "inspect-logs")], dict(os.environ), tmp)
                    runs["inspect"].append((wall, cpu))
        row: dict[str, Any] = {}
        for name, vals in runs.items():
            if vals:
                row[name] = {"wall_s": statistics.median(w for w, _ in vals),
                             "cpu_s": statistics.median(c for _, c in vals),
                             "walls": [round(w, 2) for w, _ in vals]}
        row["judge_vs_plain"] = row["plain"]["wall_s"] / row["judge"]["wall_s"]
        label = f"{int(latency * 1000)} ms / c{concurrency}"
        results[label] = row
        line = (f"[grading {label}] {n} items, {rounds} rounds: judge run "
                f"{row['judge']['wall_s']:.2f} s (cpu {row['judge']['cpu_s']:.2f} s) "
                f"{row['judge']['walls']}; plain openai client {row['plain']['wall_s']:.2f} s "
                f"(cpu {row['plain']['cpu_s']:.2f} s) {row['plain']['walls']}")
        if "inspect" in row:
            line += (f"; inspect_ai model_graded_qa {row['inspect']['wall_s']:.2f} s "
                     f"(cpu {row['inspect']['cpu_s']:.2f} s)")
        print(line)
        print(f"[grading {label}]   judge throughput / plain = {row['judge_vs_plain']:.2f}× "
              f"(target ≥ 0.9×); {_load()}")
    return results


def nightly(tmp: Path, rounds: int) -> dict[str, Any]:
    walls: list[float] = []
    cpus: list[float] = []
    plain: list[float] = []
    items = 0
    bodies = tmp / "nightly-bodies.jsonl"
    n_bodies = request_bodies(NIGHTLY, bodies, "nightly")
    with FakeProviderServer(latency=1.0, process=True) as srv:
        for k in range(rounds):
            wall, cpu, summary = judge_run(NIGHTLY, srv.openai_base_url, 100, tmp, 1000 + k,
                                           ("--suite", "nightly"))
            items = summary["judge"]["items"]
            if summary["judge"]["unscored"] or items != n_bodies:
                raise SystemExit(f"nightly: {summary['judge']}")
            walls.append(wall)
            cpus.append(cpu)
            plain.append(timed([sys.executable, str(BENCH / "plain_client.py"), str(bodies),
                                srv.openai_base_url, "100"], dict(os.environ), tmp)[0])
    limit = items / 100 * 1.0
    wall, plain_wall = statistics.median(walls), statistics.median(plain)
    print(f"[nightly] {items} items at 1 s / c100, {rounds} runs: judge run "
          f"{wall:.2f} s {[round(w, 2) for w in walls]} (cpu {statistics.median(cpus):.2f} s) "
          f"vs the limit {limit:.2f} s = {wall / limit:.2f}× (target ≤ 1.5×); the plain "
          f"openai client, same requests: {plain_wall:.2f} s = {plain_wall / limit:.2f}×; "
          f"{_load()}")
    return {"items": items, "wall_s": wall, "walls": walls, "limit_s": limit,
            "ratio": wall / limit, "plain_wall_s": plain_wall, "plain_ratio": plain_wall / limit}


def workers_throughput(tmp: Path, n_workers: int, n_items: int, pg_url: str,
                       base_url: str, warmup_s: float = 8.0) -> dict[str, float]:
    """Items/s of `n_workers` worker processes, timed from enqueueing to the last verdict
    (the workers are started and polling first, so their start-up is not counted)."""
    tmp.mkdir(parents=True, exist_ok=True)
    plan = make_plan(all_calls_suite(tmp), allow_outside=True)
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "JUDGE_DATABASE_URL": pg_url}
    with open_store(pg_url) as store:
        run_id = store.save_run(suite="bench", config={"model": MODEL})
        checked = Checker(sources(plan, []), store).run()
        items = checked.items[:n_items]
        procs = [subprocess.Popen(
            [*JUDGE, "worker", "--run", run_id, "--concurrency", "10", "--idle-exit",
             str(warmup_s + 5)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True) for _ in range(n_workers)]
        time.sleep(warmup_s)
        t0 = time.perf_counter()
        enqueue_run(store, run_id, items, checked.vetoes)
        while store.work.outstanding(run_id) > 0:
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        for p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                raise SystemExit(f"worker failed: {err.strip().splitlines()[-1:]}")
        graded = store.count_verdicts(run_id)
    return {"workers": n_workers, "items": len(items), "graded": graded, "wall_s": wall,
            "items_per_s": len(items) / wall}


def workers(tmp: Path, n_items: int) -> dict[str, Any]:
    from pg import start_server

    pg = start_server()
    try:
        with FakeProviderServer(latency=1.0, process=True) as srv:
            one = workers_throughput(tmp / "w1", 1, n_items, pg.create_database(),
                                     srv.openai_base_url)
            four = workers_throughput(tmp / "w4", 4, n_items, pg.create_database(),
                                      srv.openai_base_url)
    finally:
        pg.stop()
    ratio = four["items_per_s"] / one["items_per_s"]
    print(f"[workers] 1 worker {one['items_per_s']:.1f} items/s ({one['items']} items in "
          f"{one['wall_s']:.1f} s); 4 workers {four['items_per_s']:.1f} items/s "
          f"({four['wall_s']:.1f} s): ratio {ratio:.2f} (target ≥ 3); {_load()}")
    return {"one": one, "four": four, "ratio": ratio}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker-items", type=int, default=400)
    ap.add_argument("--only", choices=["grading", "nightly", "workers"], action="append")
    ap.add_argument("--no-inspect", action="store_true")
    args = ap.parse_args()
    want = set(args.only or ["grading", "nightly", "workers"])
    with_inspect = not args.no_inspect and importlib.util.find_spec("inspect_ai") is not None
    results: dict[str, Any] = {}
    print(_load())
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "grading" in want:
            results["grading"] = grading(tmp, args.rounds, with_inspect)
        if "nightly" in want:
            results["nightly"] = nightly(tmp, args.rounds)
        if "workers" in want:
            results["workers"] = workers(tmp, args.worker_items)
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
