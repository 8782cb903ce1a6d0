"""judge against the plain openai SDK replaying judge's own requests (issue 25).

The baseline is the plain `openai.AsyncOpenAI` client sending **exactly the request bodies
judge sent** — captured byte for byte by the wire-format server during a judge run — to the
same server at the same latency and concurrency, JSON-parsing every reply. Everything else
judge does (start-up, reading and checking traces, items, rendering, redaction, the cache
key, validation, routing, storing calls and verdicts, the output file) is what the ratio
prices.

Every figure is a whole process as a user runs it, timed with `os.wait4`: wall clock from
spawn to exit, CPU = user + system of the process and every child it waited for (judge's
checking child included). The server runs in a process of its own (a separate interpreter
started by this script, not a fork of the measured process), so its CPU is in neither
figure. Measures are interleaved, round by round (judge, replay, judge, replay, …), and the
load average is printed beside every figure: other engineers share the machine's cores.

1. grading: the 1,164 tool calls of the 200 tau-bench airline trajectories graded for scope
   fidelity (`judge grade SCENARIO airline.jsonl --model openai:bench-judge --concurrency 50
   --db sqlite:///… -o verdicts.jsonl`), 100 ms latency. Targets: judge's throughput ≥ 0.9×
   the replaying client's, its CPU seconds ≤ 1.5× the client's.
2. nightly: `judge run examples/nightly.yaml --suite nightly` at 1 s latency, concurrency
   100, against its latency floor (ceil(items / 100) waves of 1 s): target ≤ 1.5×; the
   replaying client beside it.

    .venv/bin/python benchmarks/replay.py [--rounds 5] [--only grading|nightly]
        [--latency 0.1] [--concurrency 50] [--command grade|run] [--profile DIR]
        [--baseline REV] [--aiohttp-client] [--json FILE]

`--profile DIR` also records one judge run under py-spy (`--subprocesses`, the checking
child included) as a flame graph (DIR/judge-grade.svg) and a raw collapsed-stack file
(DIR/judge-grade.txt) that `benchmarks/profile_top.py` summarises.

Helpers (this file runs them as subprocesses):

    python benchmarks/replay.py serve LATENCY [--record FILE]   # the wire-format server
    python benchmarks/replay.py client BODIES BASE_URL CONCURRENCY [httpx|aiohttp]
        # the replaying client (over the SDK's default transport, or its aiohttp one)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
NIGHTLY = ROOT / "examples/nightly.yaml"
BIN = Path(sys.executable).parent
MODEL = "openai:bench-judge"
#: also time the replaying client over aiohttp (--aiohttp-client)
AIOHTTP_CLIENT = False
#: judge's settings cache across runs (--cache): "shared" (one for every run: the first
#: measured round meets the server afresh, the later ones find its structured-output mode
#: kept), "cold" (an empty one for every judge run: every round is a first contact) or
#: "warm" (shared, and each judge tree runs once, unmeasured, before the rounds)
CACHE = "shared"


# -- the server (its own process) -----------------------------------------------------------
def serve_main(latency: float, record: str | None) -> None:
    """Serve until stdin closes; print the port first. With `record`, write the raw body of
    every chat completion request, in arrival order, one per line, when stopping."""
    from judge.testing.fakeserver import FakeProviderServer

    srv = FakeProviderServer(latency=latency, record=record is not None)
    with srv:
        print(srv.port, flush=True)
        sys.stdin.read()
        if record is not None:
            with open(record, "wb") as out:
                for r in srv.requests:
                    if r.api == "openai" and r.path.endswith("/chat/completions"):
                        out.write(r.raw.replace(b"\n", b"") + b"\n")


@contextmanager
def server(latency: float, record: Path | None = None) -> Iterator[str]:
    """The fake server in an interpreter of its own; yields its OpenAI base URL."""
    cmd = [sys.executable, __file__, "serve", str(latency)]
    if record is not None:
        cmd += ["--record", str(record)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(60)


# -- the replaying client (its own process) -------------------------------------------------
async def client_main(path: str, base_url: str, concurrency: int, transport: str) -> None:
    """The plain SDK: `chat.completions.create(**body)` for every captured body, a fixed
    pool of `concurrency` workers, each reply's content parsed as JSON. `transport`:
    "httpx" (the SDK's default, the baseline) or "aiohttp" (its DefaultAioHttpClient, what
    judge sends through: judge.providers.transport)."""
    import openai

    with open(path, encoding="utf-8") as fh:
        bodies = [json.loads(line) for line in fh]
    extra: dict[str, Any] = {"http_client": openai.DefaultAioHttpClient()} \
        if transport == "aiohttp" else {}
    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0,
                                **extra)
    todo = iter(bodies)
    parsed = 0

    async def worker() -> None:
        nonlocal parsed
        for body in todo:
            completion = await client.chat.completions.create(**body)
            reply = json.loads(completion.choices[0].message.content or "null")
            parsed += isinstance(reply, dict) and "label" in reply

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    print(json.dumps({"requests": len(bodies), "parsed": parsed}))


# -- timing ---------------------------------------------------------------------------------
@dataclass
class Timed:
    wall: float
    cpu: float
    load: float  # 1-minute load average when the process ended
    out: str


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> Timed:
    """One process run to its end: wall and CPU seconds (its own and its waited children's,
    from wait4), its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {stderr[-3000:]}")
    return Timed(wall, usage.ru_utime + usage.ru_stime, os.getloadavg()[0], stdout)


def env_for(base_url: str, home: Path, tree: Path = ROOT, cache: Path | None = None
            ) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": base_url,
           "XDG_CACHE_HOME": str(cache or home / "cache"),
           "PYTHONPATH": str(tree)}
    for name in ("JUDGE_DATABASE_URL", "OPENAI_API_KEY", "JUDGE_RESPONSE_FORMAT"):
        env.pop(name, None)
    return env


# -- the work -------------------------------------------------------------------------------
def prepare_grading(tmp: Path) -> tuple[Path, Path, Path]:
    """The tau-airline scenario with scope fidelity on every tool call, the trajectories as
    judge traces, and a one-suite manifest over both (for `--command run`)."""
    import yaml

    doc = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    doc["judge"] = [{"rubric": "scope_fidelity", "on": "tool_call", "tools": ["*"]}]
    scen = tmp / "tau-all" / "scenario.yaml"
    scen.parent.mkdir(parents=True, exist_ok=True)
    scen.write_text(yaml.safe_dump(doc, sort_keys=False))
    traces = tmp / "airline.jsonl"
    subprocess.run([str(BIN / "judge"), "import", "tau-bench", str(TAU), "-o", str(traces)],
                   check=True, capture_output=True)
    suite = tmp / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"all-calls": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(scen.parent), "traces": [str(traces)]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}))
    return scen.parent, traces, suite


#: what the `judge` console script runs; with PYTHONPATH pointing at a tree (and the working
#: directory outside every tree) it is that tree's judge
LAUNCH = "import sys; from judge.cli.main import main; sys.exit(main())"


def judge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", LAUNCH, *args]


def judge_grade_cmd(scen: Path, traces: Path, concurrency: int, db: Path, out: Path
                    ) -> list[str]:
    return judge_cmd("grade", str(scen), str(traces), "--model", MODEL, "--concurrency",
                     str(concurrency), "--db", f"sqlite:///{db}", "-o", str(out),
                     "--no-progress")


def judge_run_cmd(suite: Path, concurrency: int, db: Path, extra: tuple[str, ...] = ()
                  ) -> list[str]:
    return judge_cmd("run", str(suite), "--allow-outside", *extra, "--model", MODEL,
                     "--concurrency", str(concurrency), "--no-progress", "--format", "json",
                     "--db", f"sqlite:///{db}")


@contextmanager
def trees(baseline: str | None) -> Iterator[dict[str, Path]]:
    """The judge trees to measure: this one, and `baseline` (a git revision: its judge/
    and prompts/, extracted with `git archive`) when asked."""
    out = {"judge": ROOT}
    if baseline is None:
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="judge-baseline-") as d:
        archive = subprocess.run(["git", "archive", baseline, "judge", "prompts"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
        out[f"judge@{baseline}"] = Path(d)
        yield out


def load_now() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def compare(name: str, judge_cmd: Any, bodies: Path, latency: float, concurrency: int,
            rounds: int, tmp: Path, expect: int, judges: dict[str, Path]) -> dict[str, Any]:
    """Rounds of each judge tree, then the replaying client, against one server; medians,
    and each judge's ratios to the client of its own round."""
    clients = ["replay", *(["replay-aiohttp"] if AIOHTTP_CLIENT else [])]
    runs: dict[str, list[Timed]] = {**{who: [] for who in judges}, **{c: [] for c in clients}}
    with server(latency) as url:
        if CACHE == "warm":  # each tree meets the server once, unmeasured
            for tree in judges.values():
                db, out = tmp / f"{name}-warmup.db", tmp / f"{name}-warmup.jsonl"
                timed(judge_cmd(db, out), env_for(url, tmp, tree), tmp)
                for p in (db, out):
                    p.unlink(missing_ok=True)
        for k in range(rounds):
            line = []
            for who, tree in judges.items():
                db, out = tmp / f"{name}-{k}.db", tmp / f"{name}-{k}.jsonl"
                cache = tmp / f"cache-{name}-{who}-{k}" if CACHE == "cold" else tmp / "cache"
                kept = "kept" if kept_mode(cache, url) else "none kept"
                t = timed(judge_cmd(db, out), env_for(url, tmp, tree, cache), tmp)
                runs[who].append(t)
                line.append(f"{who} {t.wall:.2f} s wall, {t.cpu:.2f} s CPU (load {t.load:.2f}; "
                            f"mode {kept})")
                for p in (db, out):
                    p.unlink(missing_ok=True)
            for c in clients:
                r = timed([sys.executable, __file__, "client", str(bodies), url,
                           str(concurrency), "aiohttp" if c == "replay-aiohttp" else "httpx"],
                          env_for(url, tmp), tmp)
                got = json.loads(r.out)
                if got["parsed"] != expect:
                    raise SystemExit(f"{c} parsed {got} of {expect} replies")
                runs[c].append(r)
                line.append(f"{c} {r.wall:.2f} s wall, {r.cpu:.2f} s CPU (load {r.load:.2f})")
            print(f"  [{name} round {k + 1}] " + "; ".join(line), flush=True)
    out: dict[str, Any] = {}
    for who, ts in runs.items():
        out[who] = {"wall_s": median([t.wall for t in ts]), "cpu_s": median([t.cpu for t in ts]),
                    "walls": [round(t.wall, 2) for t in ts], "cpus": [round(t.cpu, 2) for t in ts],
                    "loads": [round(t.load, 2) for t in ts]}
        if who in clients:
            continue
        # per round (judge and client ran a minute apart at most), then the median
        speeds = [r.wall / j.wall for j, r in zip(ts, runs["replay"], strict=True)]
        cpus = [j.cpu / r.cpu for j, r in zip(ts, runs["replay"], strict=True)]
        out[who].update(speed=median(speeds), cpu_ratio=median(cpus),
                        speeds=[round(x, 3) for x in speeds],
                        cpu_ratios=[round(x, 3) for x in cpus])
        if AIOHTTP_CLIENT:  # beside the client over the transport judge uses
            aio = runs["replay-aiohttp"]
            out[who].update(
                speed_aiohttp=median([r.wall / j.wall for j, r in zip(ts, aio, strict=True)]),
                cpu_ratio_aiohttp=median([j.cpu / r.cpu for j, r in zip(ts, aio, strict=True)]))
    return out


def kept_mode(cache: Path, url: str) -> bool:
    """Whether judge's settings cache holds a structured-output mode for this server."""
    try:
        return url.removesuffix("/v1") in (cache / "judge" / "response-formats.json").read_text()
    except OSError:
        return False


def capture(judge_cmd: Any, latency: float, tmp: Path, name: str) -> tuple[Path, int]:
    """One judge run against a recording server: the bodies it sent, in arrival order."""
    bodies = tmp / f"{name}-bodies.jsonl"
    with server(latency, record=bodies) as url:
        t = timed(judge_cmd(tmp / f"{name}-capture.db", tmp / f"{name}-capture.jsonl"),
                  env_for(url, tmp), tmp)
    n = sum(1 for _ in bodies.open("rb"))
    print(f"  [{name}] captured {n} request bodies from one judge run ({t.wall:.2f} s wall, "
          f"{t.cpu:.2f} s CPU; {load_now()})", flush=True)
    return bodies, n


def summary(name: str, res: dict[str, Any], judges: dict[str, Path]) -> None:
    for who in judges:
        j = res[who]
        print(f"[{name}] {who}: {j['wall_s']:.2f} s wall {j['walls']}, {j['cpu_s']:.2f} s CPU "
              f"{j['cpus']}; speed / replaying client {j['speed']:.2f}× {j['speeds']}; CPU / "
              f"client {j['cpu_ratio']:.2f}× {j['cpu_ratios']}; loads {j['loads']}", flush=True)
        if "speed_aiohttp" in j:
            print(f"[{name}] {who} against the client over aiohttp: speed "
                  f"{j['speed_aiohttp']:.2f}×, CPU {j['cpu_ratio_aiohttp']:.2f}×", flush=True)
    for c in ("replay", "replay-aiohttp"):
        if c in res:
            r = res[c]
            print(f"[{name}] {c}: {r['wall_s']:.2f} s wall {r['walls']}, {r['cpu_s']:.2f} s "
                  f"CPU {r['cpus']}; loads {r['loads']}", flush=True)


def grading(tmp: Path, rounds: int, latency: float, concurrency: int, command: str,
            profile: Path | None, judges: dict[str, Path]) -> dict[str, Any]:
    scen, traces, suite = prepare_grading(tmp)

    def cmd(db: Path, out: Path) -> list[str]:
        if command == "run":
            return judge_run_cmd(suite, concurrency, db)
        return judge_grade_cmd(scen, traces, concurrency, db, out)

    bodies, n = capture(cmd, latency, tmp, "grading")
    if profile is not None:
        profile_run(cmd, latency, tmp, profile, f"judge-{command}")
    res = compare("grading", cmd, bodies, latency, concurrency, rounds, tmp, n, judges)
    res["requests"] = n
    print(f"[grading] {n} calls, {int(latency * 1000)} ms / c{concurrency}, judge {command}, "
          f"{rounds} rounds interleaved, medians (targets: speed ≥ 0.9×, CPU ≤ 1.5×):")
    summary("grading", res, judges)
    return res


def nightly(tmp: Path, rounds: int, judges: dict[str, Path]) -> dict[str, Any]:
    latency, concurrency = 1.0, 100

    def cmd(db: Path, out: Path) -> list[str]:
        return judge_run_cmd(NIGHTLY, concurrency, db, ("--suite", "nightly"))

    bodies, n = capture(cmd, latency, tmp, "nightly")
    res = compare("nightly", cmd, bodies, latency, concurrency, rounds, tmp, n, judges)
    floor = math.ceil(n / concurrency) * latency
    res.update(requests=n, floor_s=floor, replay_ratio=res["replay"]["wall_s"] / floor)
    print(f"[nightly] {n} calls at 1 s / c100, {rounds} rounds; the latency floor is "
          f"ceil({n} / 100) waves of 1 s = {floor:.0f} s (target ≤ 1.5×):")
    for who in judges:
        res[who]["floor_ratio"] = res[who]["wall_s"] / floor
        print(f"[nightly] {who}: {res[who]['wall_s']:.2f} s {res[who]['walls']} = "
              f"{res[who]['floor_ratio']:.2f}× the floor, CPU {res[who]['cpu_s']:.2f} s",
              flush=True)
    summary("nightly", res, judges)
    print(f"[nightly] replaying client: {res['replay_ratio']:.2f}× the floor", flush=True)
    return res


def profile_run(cmd: Any, latency: float, tmp: Path, where: Path, name: str) -> None:
    """One judge run under py-spy: a flame graph and the collapsed stacks."""
    spy = shutil.which("py-spy", path=str(BIN)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy (pip install py-spy; in the dev extras)")
    where = where.resolve()  # py-spy runs in the scratch directory
    where.mkdir(parents=True, exist_ok=True)
    with server(latency) as url:
        env = env_for(url, tmp)
        for fmt, suffix in (("flamegraph", "svg"), ("raw", "txt")):
            db = tmp / f"profile-{fmt}.db"
            done = subprocess.run([spy, "record", "--subprocesses", "--gil", "--rate", "250",
                                   "--format", fmt, "-o", str(where / f"{name}.{suffix}"),
                                   "--", *cmd(db, tmp / f"profile-{fmt}.jsonl")],
                                  env=env, cwd=tmp, check=False, capture_output=True,
                                  text=True)
            if not (where / f"{name}.{suffix}").exists():
                raise SystemExit(f"py-spy wrote no {fmt} profile: {spy_err(done)}")
    print(f"  profile: {where / (name + '.svg')} and {where / (name + '.txt')} "
          f"({load_now()})", flush=True)


def spy_err(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr + done.stdout).strip().splitlines()
    return f"exit {done.returncode}: " + " / ".join(lines[-5:])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        ap = argparse.ArgumentParser()
        ap.add_argument("cmd")
        ap.add_argument("latency", type=float)
        ap.add_argument("--record")
        a = ap.parse_args()
        serve_main(a.latency, a.record)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        asyncio.run(client_main(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                sys.argv[5] if len(sys.argv) > 5 else "httpx"))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["grading", "nightly"], action="append")
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--command", choices=["grade", "run"], default="grade")
    ap.add_argument("--profile", type=Path, help="also profile one judge run into this dir")
    ap.add_argument("--baseline", metavar="REV", help="also measure judge at this git "
                    "revision (its judge/ and prompts/), interleaved in every round")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--aiohttp-client", action="store_true",
                    help="also time the replaying client over aiohttp (the SDK's "
                    "DefaultAioHttpClient, the transport judge sends through), interleaved")
    ap.add_argument("--cache", choices=["shared", "cold", "warm"], default="shared",
                    help="judge's settings cache (where the server's structured-output mode "
                    "is kept): shared by every run (round 1 meets the server afresh, later "
                    "rounds find the mode kept), an empty one per judge run (cold), or shared "
                    "after one unmeasured run per judge tree (warm)")
    args = ap.parse_args()
    global AIOHTTP_CLIENT, CACHE
    AIOHTTP_CLIENT = args.aiohttp_client
    CACHE = args.cache
    want = set(args.only or ["grading", "nightly"])
    print(f"{load_now()} on {os.cpu_count()} cores; settings cache: {CACHE}", flush=True)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="judge-replay-") as d, \
            trees(args.baseline) as judges:
        tmp = Path(d)
        if "grading" in want:
            results["grading"] = grading(tmp, args.rounds, args.latency, args.concurrency,
                                         args.command, args.profile, judges)
        if "nightly" in want:
            results["nightly"] = nightly(tmp, args.rounds, judges)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
