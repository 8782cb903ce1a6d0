"""`judge run --batch`: grade through the providers' batch APIs by filling the call cache.

Every pending item is rendered exactly as the engine would render it; items already in the
cache are skipped; the rest go out as one batch whose id is stored on the run at once, so a
killed run resumes by polling the same batch instead of submitting again. Successful results
are stored as provider calls under the engine's cache keys; the ordinary grading pass then
reads them with zero provider calls, re-asks invalid verdicts in real time, and retries (or
marks unscored with the reason) the entries the batch failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import select, update

from judge.grading.keys import KeyMaker
from judge.items import Item
from judge.prompts import Prompt, Redaction, render
from judge.providers.base import CallRecord, JudgeRequest, ModelParams, Provider
from judge.providers.batch import batch_client
from judge.store import tables
from judge.store.db import store_errors
from judge.store.repo import Store

T_RUN: Any = tables.RunRow.__table__  # type: ignore[attr-defined]


def _stored_batches(store: Store, run_id: str) -> dict[str, str]:
    with store_errors(store.url), store.engine.connect() as conn:
        cfg = conn.execute(select(T_RUN.c.config).where(T_RUN.c.run_id == run_id)).scalar_one()
    return dict((cfg or {}).get("batches", {}))


def _remember_batch(store: Store, run_id: str, rubric: str, batch_id: str) -> None:
    with store_errors(store.url), store.engine.begin() as conn:
        cfg = dict(conn.execute(select(T_RUN.c.config).where(T_RUN.c.run_id == run_id))
                   .scalar_one() or {})
        cfg["batches"] = {**cfg.get("batches", {}), rubric: batch_id}
        conn.execute(update(T_RUN).where(T_RUN.c.run_id == run_id).values(config=cfg))


def prefill_by_batch(store: Store, run_id: str, rubric: str, prompt: Prompt,
                     items: list[Item], provider: Provider, params: ModelParams, *,
                     redaction: Redaction | None = None,
                     poll_base_delay: float = 5.0,
                     on_status: Callable[[str], None] | None = None) -> dict[str, int]:
    """Submit (or resume) the batch for the uncached items of one rubric; cache its results."""
    requests: dict[str, JudgeRequest] = {}
    keys: dict[str, str] = {}
    maker: KeyMaker | None = None
    for it in items:
        req = render(prompt, it, params, redaction)
        if maker is None:
            maker = KeyMaker(prompt.hash, provider.spec, params, req.schema, req.schema_name)
        key = maker.key(req)
        if store.calls.get(key) is None:
            requests[it.item_id] = req
            keys[it.item_id] = key
    counts = {"submitted": 0, "succeeded": 0, "failed": 0}
    if not requests:
        return counts
    client = batch_client(provider)

    async def go() -> None:
        batch_id = _stored_batches(store, run_id).get(rubric)
        if batch_id is None:
            batch_id = await client.submit(list(requests.values()),
                                           metadata={"run_id": run_id, "rubric": rubric})
            _remember_batch(store, run_id, rubric, batch_id)
            counts["submitted"] = len(requests)
        if on_status is not None:
            on_status(f"batch {batch_id}: waiting")
        await client.wait(batch_id, base_delay=poll_base_delay,
                          on_poll=lambda s: on_status(f"batch {batch_id}: {s.state}")
                          if on_status else None)
        results = await client.collect(batch_id, list(requests))
        for item_id, res in results.items():
            req = requests.get(item_id)
            if req is None:
                continue
            if isinstance(res, Exception):
                counts["failed"] += 1
                continue
            counts["succeeded"] += 1
            store.calls.put(CallRecord(
                cache_key=keys[item_id], item_id=item_id, prompt_hash=prompt.hash,
                model=provider.spec, params=params.to_dict(),
                request={"system": req.system, "messages": list(req.messages),
                         "schema_name": req.schema_name, "schema": req.schema},
                response_text=res.text, usage=res.usage, latency_s=res.latency_s,
                raw={"batch_id": batch_id}))

    asyncio.run(go())
    return counts
