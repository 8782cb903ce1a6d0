"""`judge run --batch`: grade through the providers' batch APIs by filling the call cache.

Every pending item is rendered exactly as the engine would render it; items already in the
cache are skipped; the rest go out as one batch whose id is stored on the run at once, so a
killed run resumes by polling the same batch instead of submitting again. Successful results
are stored as provider calls under the engine's cache keys; the ordinary grading pass then
reads them with zero provider calls, re-asks invalid verdicts in real time, and retries (or
marks unscored with the reason) the entries the batch failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from judge.grading.keys import KeyMaker, endpoint_of
from judge.items import Item
from judge.prompts import Prompt, Redaction, render
from judge.providers.base import CallRecord, JudgeRequest, ModelParams, Provider, ProviderFailure
from judge.providers.batch import batch_client

if TYPE_CHECKING:
    from judge.store import Store


async def prefill_by_batch(store: Store, run_id: str, rubric: str, prompt: Prompt,
                           items: Sequence[Item], provider: Provider, params: ModelParams, *,
                           redaction: Redaction | None = None, poll_base_delay: float = 5.0,
                           on_status: Callable[[str], None] | None = None,
                           batch_key: str | None = None) -> dict[str, int]:
    """Submit (or resume) the batch for the uncached items of one rubric; cache its results.
    Returns counts: submitted, succeeded, failed. `batch_key`: what the batch id is stored
    under on the run (default the rubric; a jury has one batch per seat, `rubric:juror`)."""
    key_on_run = batch_key or rubric
    requests: dict[str, JudgeRequest] = {}
    keys: dict[str, str] = {}
    maker: KeyMaker | None = None
    for it in items:
        req = render(prompt, it, params, redaction)
        if maker is None:
            maker = KeyMaker(prompt.hash, provider.spec, params, req.schema, req.schema_name,
                             endpoint=endpoint_of(provider))
        key = maker.key(req)
        if store.calls.get(key) is None:
            requests[it.item_id] = req
            keys[it.item_id] = key
    counts = {"submitted": 0, "succeeded": 0, "failed": 0}
    if not requests:
        return counts
    client = batch_client(provider)

    def status(text: str) -> None:
        if on_status is not None:
            on_status(text)

    async def submit() -> str:
        new = await client.submit(list(requests.values()),
                                  metadata={"run_id": run_id, "rubric": rubric})
        store.save_batch_id(run_id, key_on_run, new)
        counts["submitted"] = len(requests)
        return new

    stored = store.batch_ids(run_id).get(key_on_run)
    batch_id = stored or await submit()
    status(f"batch {batch_id}: waiting")
    try:
        await client.wait(batch_id, base_delay=poll_base_delay,
                          on_poll=lambda s: status(f"batch {batch_id}: {s.state}"))
    except ProviderFailure as exc:
        # a resumed run's batch the provider no longer knows (expired, deleted): without
        # this the run could never be resumed; what is still uncached is asked again
        if stored is None or exc.status not in (404, 410):
            raise
        status(f"batch {batch_id} is gone at the provider (HTTP {exc.status}); "
               f"submitting its {len(requests)} uncached request(s) again")
        batch_id = await submit()
        await client.wait(batch_id, base_delay=poll_base_delay,
                          on_poll=lambda s: status(f"batch {batch_id}: {s.state}"))
    results = await client.collect(batch_id, list(requests))
    records = []
    for item_id, res in results.items():
        sent = requests.get(item_id)
        if sent is None:
            continue
        if isinstance(res, Exception):
            counts["failed"] += 1
            continue
        counts["succeeded"] += 1
        records.append(CallRecord(
            cache_key=keys[item_id], item_id=item_id, prompt_hash=prompt.hash,
            model=provider.spec, params=params.to_dict(),
            request={"system": sent.system, "messages": list(sent.messages),
                     "schema_name": sent.schema_name, "schema": sent.schema},
            response_text=res.text, usage=res.usage, latency_s=res.latency_s,
            raw={"batch_id": batch_id}))
    store.calls.put_many(records)
    return counts
