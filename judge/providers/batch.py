"""Batch grading through the providers' batch APIs. Each provider with one owns its client
(`openai_batch.py`: OpenAI Batch, Files + Batches; `anthropic_batch.py`: Message Batches,
both through the SDKs); this module holds what they share.

    client = batch_client(provider)               # asks the provider (`Provider.batch_client`)
    batch_id = await client.submit(requests)      # store batch_id: everything resumes from it
    status = await client.wait(batch_id)          # poll with backoff (or `poll` once)
    results = await client.collect(batch_id, item_ids)   # item id -> response | failure

Results are keyed by item id. OpenAI takes the item id as `custom_id`; Anthropic's custom_id
must match ^[a-zA-Z0-9_-]{1,64}$, so `safe_custom_id` maps item ids to safe ids
deterministically (readable prefix + hash): given the item ids, the mapping is rebuilt after a
restart. Entries that failed come back as `ProviderFailure` (retryable for 429/5xx/expired),
and with `item_ids`, any item with no result at all (expired, cancelled) does too.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.errors import ConfigError
from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse

BatchResult = ProviderResponse | ProviderFailure

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_custom_id(item_id: str) -> str:
    """An Anthropic-safe custom_id for `item_id`: itself when already safe, else a readable
    prefix and 16 hex digits of its sha256 (64 characters at most)."""
    if len(item_id) <= 64 and not _UNSAFE.search(item_id) and item_id:
        return item_id
    digest = hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', item_id)[:47]}-{digest}"


class BatchNotFinished(Exception):
    """`collect` was called before the batch ended."""


@dataclass
class BatchStatus:
    batch_id: str
    state: str          # the provider's own status word
    done: bool          # no more results will come
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    raw: dict[str, Any] = field(default_factory=dict)


class BatchClient(ABC):
    """Submit, poll and collect one provider's batches."""

    spec: str

    def __init__(self) -> None:
        #: batch id -> custom_id -> item id, for batches submitted by this client
        self.custom_ids: dict[str, dict[str, str]] = {}

    @abstractmethod
    async def submit(self, requests: Sequence[JudgeRequest], *,
                     metadata: dict[str, str] | None = None) -> str:
        """Send all requests as one batch; return the batch id."""

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchStatus:
        """The batch's status now."""

    @abstractmethod
    async def _results(self, batch_id: str) -> dict[str, BatchResult]:
        """Results keyed by custom_id."""

    @abstractmethod
    def custom_id(self, item_id: str) -> str:
        """The custom_id this API uses for `item_id`."""

    async def wait(self, batch_id: str, *, base_delay: float = 5.0, max_delay: float = 300.0,
                   timeout: float | None = None,
                   sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                   on_poll: Callable[[BatchStatus], None] | None = None) -> BatchStatus:
        """Poll until done, waiting base_delay, ×1.5 each time up to max_delay; returns the last
        status (not done when `timeout` seconds passed first)."""
        started = time.monotonic()
        delay = base_delay
        while True:
            status = await self.poll(batch_id)
            if on_poll is not None:
                on_poll(status)
            if status.done or (timeout is not None and time.monotonic() - started >= timeout):
                return status
            await sleep(delay)
            delay = min(max_delay, delay * 1.5)

    async def collect(self, batch_id: str,
                      item_ids: Iterable[str] | None = None) -> dict[str, BatchResult]:
        """Results by item id. With `item_ids` (needed after a restart for Anthropic's safe
        ids), every one of them gets an entry: missing results become retryable failures."""
        status = await self.poll(batch_id)
        if not status.done:
            raise BatchNotFinished(f"batch {batch_id} is still {status.state}")
        by_custom = await self._results(batch_id)
        mapping = dict(self.custom_ids.get(batch_id, {}))
        wanted = list(item_ids) if item_ids is not None else None
        if wanted is not None:
            mapping.update({self.custom_id(i): i for i in wanted})
        out: dict[str, BatchResult] = {mapping.get(cid, cid): result
                                       for cid, result in by_custom.items()}
        for item_id in wanted or ():
            if item_id not in out:
                out[item_id] = ProviderFailure(
                    f"{self.spec}: no result in batch {batch_id} ({status.state})",
                    retryable=True)
        return out


def batch_client(provider: Provider) -> BatchClient:
    """The provider's batch client; ConfigError for providers without one."""
    client = provider.batch_client()
    if client is None:
        from judge.providers.registry import batch_forms

        raise ConfigError(f"model '{provider.spec}' has no batch API (use "
                          f"{' or '.join(batch_forms())})")
    return client


def unique_ids(requests: Sequence[JudgeRequest]) -> list[str]:
    ids = [r.item_id for r in requests]
    if not ids:
        raise ValueError("a batch needs at least one request")
    if len(set(ids)) != len(ids):
        raise ValueError("item ids in a batch must be unique")
    return ids
