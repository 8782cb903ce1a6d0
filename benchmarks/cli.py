"""Benchmark the CLI as a user runs it: whole processes, start-up and output included.

    .venv/bin/python benchmarks/cli.py [--traces 10000] [--events-per-trace 100]
                                       [--repeat 3] [--no-memory] [--skip-big]

1. `judge --help` beside `--help` of a two-command typer app (written here): target ≤ 1.5×.
2. `judge check SCENARIO trace.json` on one small trace: target < 0.5 s.
3. `judge check SCENARIO big.jsonl --format json` (and jsonl, text) over `--traces` traces of
   `--events-per-trace` events, one trace per line, output written to a file, beside a
   `python -c` process doing `json.loads` on every line of the same file: target ≤ 3×.
4. Peak RSS of `judge check --format json` at a tenth of the traces and at all of them.

Every command runs in a fresh process; the commands of one measure are interleaved and the
best of `--repeat` is kept (the least disturbed by other processes). Wall and CPU (user +
system, from wait4) are both printed: on a shared machine the CPU ratio is the like-for-like
one. Byte-code caching is left on for the children, as for a user (a warm-up run fills it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from checks import SCENARIO, support_events  # noqa: E402

BIN = Path(sys.executable).parent
JUDGE = str(BIN / "judge")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

TYPER_APP = '''\
import typer

app = typer.Typer(add_completion=False)


@app.command()
def hello(name: str = typer.Argument(..., help="who")) -> None:
    """Say hello."""
    typer.echo(f"hello {name}")


@app.command()
def bye(name: str = typer.Option("you", help="who")) -> None:
    """Say goodbye."""
    typer.echo(f"bye {name}")


if __name__ == "__main__":
    app()
'''

JSON_LOADS = "import json, sys\nfor line in open(sys.argv[1]):\n    json.loads(line)\n"


def run(cmd: list[str], out: Path | None = None) -> tuple[float, float, float, int]:
    """(wall s, cpu s, max RSS MiB, exit code) of one process, its output to `out`."""
    with open(out or os.devnull, "wb") as fh:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE, env=ENV)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.stderr is not None
    err = p.stderr.read().decode()
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, p.returncode


def best(commands: dict[str, Callable[[], tuple[float, float, float, int]]],
         repeat: int) -> dict[str, tuple[float, float]]:
    """Interleaved runs; per command the best wall and the best CPU time."""
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    for fn in commands.values():  # warm-up: byte-code caches, page cache
        fn()
    for _ in range(repeat):
        for name, fn in commands.items():
            wall, cpu, _, _ = fn()
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {k: (min(walls[k]), min(cpus[k])) for k in commands}


def write_traces(path: Path, n_traces: int, per_trace: int, seed: int = 7) -> int:
    """`n_traces` traces of `per_trace` events, one trace per line; returns the events."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_traces):
            fh.write(json.dumps({
                "trace_id": f"bench/{i}", "scenario": "bench-support",
                "candidate": {"model": "bench"},
                "events": list(support_events(per_trace, rng, compaction_every=5))}) + "\n")
    return n_traces * per_trace


def line(label: str, result: tuple[float, float]) -> str:
    return f"{label:<58} wall {result[0]:6.2f} s   cpu {result[1]:6.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--events-per-trace", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        scenario = d / "scenario.yaml"
        scenario.write_text(SCENARIO)
        app = d / "two_commands.py"
        app.write_text(TYPER_APP)
        py = sys.executable

        r = best({"typer": lambda: run([py, str(app), "--help"]),
                  "judge": lambda: run([JUDGE, "--help"])}, a.repeat)
        print(line("two-command typer app --help", r["typer"]))
        print(line("judge --help", r["judge"]))
        print(f"ratio judge/typer --help: wall {r['judge'][0] / r['typer'][0]:.2f}x, "
              f"cpu {r['judge'][1] / r['typer'][1]:.2f}x (target <= 1.5x)\n")

        one = d / "one.json"
        one.write_text(json.dumps({"trace_id": "one", "scenario": "bench-support",
                                   "events": list(support_events(40, random.Random(1)))}))
        r = best({"check": lambda: run([JUDGE, "check", str(scenario), str(one)]),
                  "json": lambda: run([JUDGE, "check", str(scenario), str(one),
                                       "--format", "json"])}, a.repeat)
        print(line("judge check SCENARIO one.json (40 events)", r["check"]))
        print(line("judge check SCENARIO one.json --format json", r["json"]))
        print("target: < 0.5 s\n")

        if a.skip_big:
            return
        big = d / "big.jsonl"
        events = write_traces(big, a.traces, a.events_per_trace)
        size = big.stat().st_size / 2**20
        out = d / "out"
        print(f"big.jsonl: {a.traces:,} traces x {a.events_per_trace} events = {events:,} "
              f"events, {size:.0f} MiB, one trace per line")
        check = [JUDGE, "check", str(scenario), str(big)]
        r = best({"loads": lambda: run([py, "-c", JSON_LOADS, str(big)]),
                  "json": lambda: run([*check, "--format", "json"], out),
                  "jsonl": lambda: run([*check, "--format", "jsonl"], out),
                  "text": lambda: run(check, out)}, a.repeat)
        print(line("python -c: json.loads of every line", r["loads"]))
        for fmt in ("json", "jsonl", "text"):
            print(line(f"judge check SCENARIO big.jsonl --format {fmt} > file", r[fmt]))
        for fmt in ("json", "jsonl", "text"):
            print(f"ratio --format {fmt} / json.loads: wall {r[fmt][0] / r['loads'][0]:.2f}x, "
                  f"cpu {r[fmt][1] / r['loads'][1]:.2f}x (target <= 3x)")
        run([*check, "--format", "json"], out)
        print(f"output of --format json: {out.stat().st_size / 2**20:.1f} MiB")

        if a.no_memory:
            return
        small = d / "small.jsonl"
        write_traces(small, max(1, a.traces // 10), a.events_per_trace)
        for label, path in (("a tenth", small), ("all", big)):
            _, _, rss, _ = run([JUDGE, "check", str(scenario), str(path), "--format", "json"],
                               out)
            print(f"peak RSS, judge check --format json, {label} of the traces: {rss:.1f} MiB")


if __name__ == "__main__":
    main()
