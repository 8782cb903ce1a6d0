"""Benchmark the CLI as a user runs it: whole processes, start-up and output included.

    .venv/bin/python benchmarks/cli.py [--traces 10000] [--events-per-trace 100]
                                       [--jobs 1,N] [--repeat 3] [--no-memory] [--skip-big]
                                       [--compaction-every 5] [--threshold] [--instructions]

1. `judge --help` beside `--help` of a two-command typer app (written here): target ≤ 1.5×.
2. `judge check SCENARIO trace.json` on one small trace: target < 0.5 s.
3. `judge check SCENARIO big.jsonl --format json --jobs J` for each J of `--jobs` (default
   1 and the CPU count), and jsonl and text at the last J, over `--traces` traces of
   `--events-per-trace` events, one trace per line, output written to a file, beside a
   `python -c` process doing `json.loads` on every line of the same file: target ≤ 3×.
   The outputs of every J are compared byte for byte.
4. Peak memory of `judge check --format json --jobs J` at a tenth of the traces and at all
   of them: the largest sum, over the process and its workers, of RSS and of PSS (shared
   pages counted once, split between the processes sharing them), sampled every 20 ms.
5. With `--threshold`: `--jobs 1` against the last J on files of a few hundred KiB to a few
   MiB, every file split however small (what `judge.checks.parallel.PARALLEL_MIN_BYTES`
   is chosen from).
6. With `--instructions` (needs valgrind): instructions executed by both processes of 3. on
   the tenth-size file (`--jobs 1`), and the ratio extrapolated to the full size. Unlike
   times, the count does not depend on what else the machine is doing.

Every command runs in a fresh process; the commands of one measure are interleaved and the
best of `--repeat` is kept (the least disturbed by other processes). Wall and CPU (user +
system, from wait4, workers included) are both printed: with one process the CPU ratio is
the like-for-like one on a shared machine; with workers, wall time is what they buy, and it
depends on idle cores. Byte-code caching is left on for the children, as for a user (a
warm-up run fills it). The load average is printed before and after each measure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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
# `judge` from wherever PYTHONPATH points (--baseline: the code before)
BASELINE = ("import sys\nfrom judge.cli.main import main\nsys.argv[0] = 'judge'\nmain()\n")
# `judge check` with every .jsonl file split, however small (for --threshold)
SPLIT_ALL = ("import sys\nimport judge.checks.parallel as p\np.PARALLEL_MIN_BYTES = 0\n"
             "from judge.cli.main import main\nsys.argv[0] = 'judge'\nmain()\n")


def run(cmd: list[str], out: Path | None = None,
        env: dict[str, str] | None = None) -> tuple[float, float, float, int]:
    """(wall s, cpu s, max RSS MiB, exit code) of one process, its output to `out`."""
    with open(out or os.devnull, "wb") as fh:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE, env=env or ENV)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.stderr is not None
    err = p.stderr.read().decode()
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, p.returncode


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (from /proc: each process's parent)."""
    parents: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            parents.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += parents.get(p, [])
    return out


def _memory(pids: list[int]) -> tuple[float, float]:
    """(RSS, PSS) summed over `pids`, MiB."""
    rss = pss = 0
    for p in pids:
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        for row in text.splitlines():
            if row.startswith("Rss:"):
                rss += int(row.split()[1])
            elif row.startswith("Pss:"):
                pss += int(row.split()[1])
    return rss / 1024, pss / 1024


def peak_memory(cmd: list[str], out: Path) -> tuple[float, float, int]:
    """(peak RSS sum, peak PSS sum, workers seen) of a process tree, sampled every 20 ms."""
    with open(out, "wb") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL, env=ENV)
        peak_rss = peak_pss = 0.0
        most = 0
        while p.poll() is None:
            pids = _tree(p.pid)
            most = max(most, len(pids) - 1)
            rss, pss = _memory(pids)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            time.sleep(0.02)
    return peak_rss, peak_pss, most


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def instructions(cmd: list[str], out: Path | None = None) -> int:
    """Instructions a process executes (valgrind's cachegrind, no cache simulation)."""
    with open(out or os.devnull, "wb") as fh:
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                               "--cachegrind-out-file=/dev/null", *cmd], stdout=fh,
                              stderr=subprocess.PIPE, text=True, env=ENV, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


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


def write_traces(path: Path, n_traces: int, per_trace: int, seed: int = 7,
                 compaction_every: int = 5) -> int:
    """`n_traces` traces of `per_trace` events, one trace per line; returns the events."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_traces):
            fh.write(json.dumps({
                "trace_id": f"bench/{i}", "scenario": "bench-support",
                "candidate": {"model": "bench"},
                "events": list(support_events(per_trace, rng, compaction_every))}) + "\n")
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
    ap.add_argument("--instructions", action="store_true")
    ap.add_argument("--compaction-every", type=int, default=5,
                    help="turns between compaction summaries (10 events a turn; 50 = none "
                         "in a 100-event trace)")
    ap.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}",
                    help="comma-separated --jobs values for `judge check` (json; jsonl and "
                         "text at the last one)")
    ap.add_argument("--threshold", action="store_true")
    ap.add_argument("--baseline", type=Path,
                    help="a checkout of the code before (e.g. main): its `judge check "
                         "--format json` joins the interleaved runs, its output compared")
    a = ap.parse_args()
    jobs = [int(j) for j in a.jobs.split(",")]
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

        if a.threshold:
            threshold(scenario, d, a, jobs[-1])
        if a.skip_big:
            return
        big = d / "big.jsonl"
        events = write_traces(big, a.traces, a.events_per_trace,
                              compaction_every=a.compaction_every)
        size = big.stat().st_size / 2**20
        out = d / "out"
        print(f"big.jsonl: {a.traces:,} traces x {a.events_per_trace} events = {events:,} "
              f"events, {size:.0f} MiB, one trace per line, a compaction summary every "
              f"{a.compaction_every} turns")
        check = [JUDGE, "check", str(scenario), str(big)]
        last = jobs[-1]
        commands: dict[str, Callable[[], tuple[float, float, float, int]]] = {
            "loads": lambda: run([py, "-c", JSON_LOADS, str(big)])}
        for j in jobs:
            commands[f"json -j{j}"] = (lambda j=j: run([*check, "--format", "json", "--jobs",
                                                        str(j)], out))
        for fmt in ("jsonl", "text"):
            commands[f"{fmt} -j{last}"] = (lambda fmt=fmt: run([*check, "--format", fmt,
                                                                "--jobs", str(last)], out))
        before = [py, "-P", "-c", BASELINE, "check", str(scenario), str(big), "--format", "json"]
        if a.baseline:
            benv = {**ENV, "PYTHONPATH": str(a.baseline.resolve())}
            commands["baseline"] = lambda: run(before, out, benv)
        print(load())
        r = best(commands, a.repeat)
        print(load())
        print(line("python -c: json.loads of every line", r["loads"]))
        if a.baseline:
            print(line(f"before ({a.baseline}): judge check ... --format json", r["baseline"]))
        for name in commands:
            if name not in ("loads", "baseline"):
                fmt, j = name.split()
                print(line(f"judge check SCENARIO big.jsonl --format {fmt} --jobs {j[2:]}",
                           r[name]))
        for name in commands:
            if name != "loads":
                print(f"ratio {name} / json.loads: wall {r[name][0] / r['loads'][0]:.2f}x, "
                      f"cpu {r[name][1] / r['loads'][1]:.2f}x (target <= 3x wall)")
        outputs = []
        for j in jobs:
            run([*check, "--format", "json", "--jobs", str(j)], out)
            outputs.append(out.read_bytes())
        if a.baseline:
            run(before, out, benv)
            outputs.append(out.read_bytes())
        same = all(o == outputs[0] for o in outputs)
        print(f"output of --format json: {len(outputs[0]) / 2**20:.1f} MiB, identical for "
              f"--jobs {', '.join(map(str, jobs))}{' and before' if a.baseline else ''}: "
              f"{same}")
        if not same:
            raise SystemExit("outputs differ between --jobs values")

        small = d / "small.jsonl"
        tenth = max(1, a.traces // 10)
        write_traces(small, tenth, a.events_per_trace, compaction_every=a.compaction_every)
        if not a.no_memory:
            for label, path, n in (("a tenth", small, tenth), ("all", big, a.traces)):
                for j in jobs:
                    rss, pss, workers = peak_memory(
                        [JUDGE, "check", str(scenario), str(path), "--format", "json",
                         "--jobs", str(j)], out)
                    print(f"peak memory, judge check --format json --jobs {j}, {label} of the "
                          f"traces ({n * a.events_per_trace:,} events): RSS {rss:.1f} MiB, "
                          f"PSS {pss:.1f} MiB (process + {workers} workers)")
        if a.instructions:
            one_line = d / "one.jsonl"
            write_traces(one_line, 1, a.events_per_trace, compaction_every=a.compaction_every)
            n_small = tenth * a.events_per_trace
            counts = {
                "python": instructions([py, "-c", "pass"]),
                "loads": instructions([py, "-c", JSON_LOADS, str(small)]),
                "check": instructions([JUDGE, "check", str(scenario), str(small), "--format",
                                       "json", "--jobs", "1"], out),
                "start": instructions([JUDGE, "check", str(scenario), str(one_line),
                                       "--format", "json", "--jobs", "1"], out),
            }
            per_loads = (counts["loads"] - counts["python"]) / n_small
            per_check = (counts["check"] - counts["start"]) / (n_small - a.events_per_trace)
            print(f"instructions per event: json.loads {per_loads:,.0f}, judge check "
                  f"--format json {per_check:,.0f}; start-up {counts['start'] / 1e9:.2f} G "
                  f"(json.loads process {counts['python'] / 1e9:.2f} G)")
            full = (counts["start"] + per_check * events) / (
                counts["python"] + per_loads * events)
            print(f"instruction ratio at {events:,} events: {full:.2f}x")


def threshold(scenario: Path, d: Path, a: argparse.Namespace, jobs: int) -> None:
    """`--jobs 1` against `--jobs J` with every file split, on small files."""
    out = d / "out"
    py = sys.executable
    for n in (25, 50, 100, 200, 400, 800):
        path = d / f"t{n}.jsonl"
        write_traces(path, n, a.events_per_trace, compaction_every=a.compaction_every)
        base = [py, "-P", "-c", SPLIT_ALL, "check", str(scenario), str(path), "--format", "json"]
        r = best({"1": lambda base=base: run([*base, "--jobs", "1"], out),
                  "j": lambda base=base: run([*base, "--jobs", str(jobs)], out)}, a.repeat)
        size = path.stat().st_size / 2**20
        print(f"{n:>4} traces, {size:5.2f} MiB: --jobs 1 wall {r['1'][0]:.3f} s, --jobs "
              f"{jobs} (split) wall {r['j'][0]:.3f} s = {r['j'][0] / r['1'][0]:.2f}x  "
              f"(cpu {r['1'][1]:.3f} / {r['j'][1]:.3f} s)")


if __name__ == "__main__":
    main()
