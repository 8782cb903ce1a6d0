"""Fake provider server and plain-client baselines (H4).

Prints:
1. the server's own throughput on one core (raw keep-alive HTTP client in a separate
   process, 0 latency) — target > 1,000 req/s;
2. 200 concurrent slow requests (1 s latency, raw client) complete in about 1 s;
3. the plain openai SDK client (AsyncOpenAI, max_retries=0) against the server at 100 ms
   latency, concurrency 50, 2,000 requests — the baseline judge is compared with;
4. the same through judge's OpenAIProvider + generate_with_retries (no cache, no items).

Run: .venv/bin/python benchmarks/fakeserver.py [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.requests

    with FakeProviderServer(process=True) as srv:
        rate = asyncio.run(raw_client(srv.port, 10_000, 20))
        print(f"server alone (0 ms, raw keep-alive client, 20 conns): {rate:,.0f} req/s")

    with FakeProviderServer(latency=1.0, process=True) as srv:
        elapsed = asyncio.run(slow_concurrent(srv.port, 200))
        print(f"200 concurrent requests at 1 s latency (raw client): {elapsed:.2f} s wall")

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
