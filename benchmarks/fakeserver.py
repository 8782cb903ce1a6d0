"""Fake provider server and plain-client baselines (H4, issue 10).

Prints:
1. the server's own throughput (raw keep-alive HTTP client, 0 latency, server in a forked
   process: `process=True`) and the server's CPU per request — target > 1,000 req/s;
2. 200 concurrent slow requests (1 s latency, raw client) complete in about 1 s;
   with `--compare REV`, (1) and (2) run interleaved, round by round, against this tree's
   server and the one at git revision REV (extracted with `git archive`, run in its own
   interpreter), so old and new are measured under the same load;
3. the plain openai SDK client (AsyncOpenAI, max_retries=0) against the server at 100 ms
   latency, concurrency 50, 2,000 requests — the baseline judge is compared with;
4. the same through judge's OpenAIProvider + generate_with_retries (no cache, no items).

Run: .venv/bin/python benchmarks/fakeserver.py [--requests 2000] [--compare f1cecca]
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai

from judge.providers.base import JudgeRequest
from judge.providers.openai_provider import OpenAIProvider
from judge.providers.retry import generate_with_retries
from judge.testing.fakeserver import FakeProviderServer

SCHEMA = {"type": "object", "additionalProperties": False,
          "required": ["label", "violated_key", "evidence_event", "confidence", "rationale"],
          "properties": {"label": {"type": "string", "enum": ["pass", "fail"]},
                         "violated_key": {"type": ["string", "null"]},
                         "evidence_event": {"type": ["integer", "null"]},
                         "confidence": {"type": "number"}, "rationale": {"type": "string"}}}
PROMPT = "You judge one agent action. " * 40
EVENTS = "\n".join(json.dumps({"seq": i, "kind": "tool_call", "tool": "get_order",
                               "args": {"orderId": f"order-{i}"}}) for i in range(1, 12))


def chat_body(i: int) -> dict[str, object]:
    return {"model": "gpt-4.1-mini", "temperature": 0, "seed": 0, "max_tokens": 512,
            "messages": [{"role": "system", "content": PROMPT},
                         {"role": "user", "content": f"item {i}\n{EVENTS}"}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "verdict", "strict": True, "schema": SCHEMA}}}


async def raw_client(port: int, n: int, conns: int) -> float:
    """Minimal keep-alive HTTP/1.1 client: measures the server, not a client library."""
    body = json.dumps(chat_body(0)).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            f"\r\nAuthorization: Bearer x\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    per = n // conns

    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(per):
            writer.write(head + body)
            header = await reader.readuntil(b"\r\n\r\n")
            length = int(header.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(conns)))
    return per * conns / (time.perf_counter() - started)


async def plain_openai(base_url: str, n: int, concurrency: int) -> tuple[float, float]:
    """Requests/s and client CPU ms per request for the bare SDK."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=60)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await client.chat.completions.create(**chat_body(i))  # type: ignore[call-overload]

    await asyncio.gather(*(one(-1) for _ in range(concurrency)))  # warm the connection pool
    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    await client.close()
    return n / elapsed, cpu / n * 1000


async def judge_provider(base_url: str, n: int, concurrency: int) -> tuple[float, float]:
    """The same through judge's OpenAIProvider and retry helper."""
    provider = OpenAIProvider("gpt-4.1-mini", api_key="x", base_url=base_url)
    sem = asyncio.Semaphore(concurrency)
    requests = [JudgeRequest(item_id=f"t#{i}:r", system=PROMPT,
                             messages=({"role": "user", "content": f"item {i}\n{EVENTS}"},),
                             schema=SCHEMA) for i in range(n)]

    async def one(req: JudgeRequest) -> None:
        async with sem:
            await generate_with_retries(provider, req, retries=4)

    await asyncio.gather(*(one(requests[0]) for _ in range(concurrency)))
    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    await provider.aclose()
    return n / elapsed, cpu / n * 1000


async def slow_concurrent(port: int, n: int) -> float:
    """n connections, one request each, all in flight at once (raw client)."""
    started = time.perf_counter()
    await raw_client(port, n, n)
    return time.perf_counter() - started


ROOT = Path(__file__).resolve().parent.parent
#: runs FakeProviderServer(process=True) of whichever judge is first on sys.path (the cwd),
#: prints the port and the server process id, serves until stdin closes
DRIVER = """
import sys
from judge.testing.fakeserver import FakeProviderServer
srv = FakeProviderServer(latency=float(sys.argv[1]), process=True).start()
print(srv.port, srv._proc.pid, flush=True)
sys.stdin.read()
srv.stop()
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def served(tree: Path, latency: float) -> Iterator[tuple[int, int]]:
    """The fake server of the judge tree at `tree`, in process mode: (port, server pid)."""
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(latency)], cwd=tree,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        port, pid = (int(x) for x in proc.stdout.readline().split())
        yield port, pid
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(20)


@contextmanager
def old_tree(rev: str) -> Iterator[Path]:
    """judge/ as it was at `rev`, in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", rev, "judge"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


def server_figures(trees: dict[str, Path], rounds: int) -> None:
    """Throughput, server CPU per request and slow concurrency, interleaved across trees."""
    rates: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    slow: dict[str, list[float]] = {name: [] for name in trees}
    n = 10_000
    for _ in range(rounds):
        for name, tree in trees.items():
            with served(tree, 0.0) as (port, pid):
                before = cpu_seconds(pid)
                rates[name].append(asyncio.run(raw_client(port, n, 20)))
                cpus[name].append((cpu_seconds(pid) - before) / n * 1000)
            with served(tree, 1.0) as (port, _):
                slow[name].append(asyncio.run(slow_concurrent(port, 200)))
    for name in trees:
        print(f"{name}: server alone (0 ms, raw keep-alive client, 20 conns, {n:,} requests): "
              f"{statistics.median(rates[name]):,.0f} req/s median of {rounds} "
              f"({', '.join(f'{r:,.0f}' for r in rates[name])}); server CPU "
              f"{statistics.median(cpus[name]):.3f} ms/request "
              f"({', '.join(f'{c:.3f}' for c in cpus[name])})")
        print(f"{name}: 200 concurrent requests at 1 s latency (raw client): "
              f"{statistics.median(slow[name]):.2f} s wall median "
              f"({', '.join(f'{w:.2f}' for w in slow[name])})")
    if len(trees) == 2:
        new, old = trees
        rate = statistics.median(rates[new]) / statistics.median(rates[old])
        cpu = statistics.median(cpus[new]) / statistics.median(cpus[old])
        print(f"new/old: throughput {rate:.2f}×, server CPU per request {cpu:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", metavar="REV",
                        help="also measure the fake server at this git revision")
    args = parser.parse_args()
    n = args.requests

    if args.compare:
        with old_tree(args.compare) as old:
            server_figures({"new": ROOT, f"old ({args.compare})": old}, args.rounds)
    else:
        server_figures({"this tree": ROOT}, args.rounds)

    with FakeProviderServer(latency=0.1, process=True) as srv:
        plain_runs, judge_runs = [], []
        for _ in range(args.rounds):  # interleaved: a busy machine affects both alike
            plain_runs.append(asyncio.run(plain_openai(srv.openai_base_url, n, 50)))
            judge_runs.append(asyncio.run(judge_provider(srv.openai_base_url, n, 50)))
        plain = statistics.median(r for r, _ in plain_runs)
        ours = statistics.median(r for r, _ in judge_runs)
        plain_cpu = statistics.median(c for _, c in plain_runs)
        ours_cpu = statistics.median(c for _, c in judge_runs)
        print(f"plain openai client, 100 ms, concurrency 50, {n} requests: {plain:,.0f} req/s "
              f"(client CPU {plain_cpu:.2f} ms/request; runs "
              f"{', '.join(f'{r:.0f}' for r, _ in plain_runs)})")
        print(f"judge OpenAIProvider + retry helper, same load: {ours:,.0f} req/s "
              f"(client CPU {ours_cpu:.2f} ms/request; runs "
              f"{', '.join(f'{r:.0f}' for r, _ in judge_runs)}) = {ours / plain:.0%} of plain")
        print(f"server counted {srv.stats()['generations']} completions")


if __name__ == "__main__":
    main()
