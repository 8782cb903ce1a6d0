"""The baseline for benchmarks/run.py: the plain openai client sending the same chat requests
judge sends, in its own process, at a fixed concurrency (a worker pool, no judge code).

    python benchmarks/plain_client.py BODIES.jsonl BASE_URL CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys

import openai


async def main(path: str, base_url: str, concurrency: int) -> None:
    with open(path, encoding="utf-8") as fh:
        bodies = [json.loads(line) for line in fh]
    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    todo = iter(bodies)
    answered = 0

    async def worker() -> None:
        nonlocal answered
        for body in todo:
            completion = await client.chat.completions.create(**body)
            answered += bool(completion.choices[0].message.content)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    print(json.dumps({"requests": len(bodies), "answered": answered}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
