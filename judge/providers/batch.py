"""Batch grading through the providers' batch APIs: OpenAI Batch (Files + Batches) and
Anthropic Message Batches, both through the SDKs.

    client = batch_client(provider)               # from an OpenAIProvider / AnthropicProvider
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
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.errors import ConfigError
from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse
from judge.providers.retry import is_retryable_status

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
    """The batch client for a network provider; ConfigError for providers without one."""
    from judge.providers.anthropic_provider import AnthropicProvider
    from judge.providers.openai_provider import OpenAIProvider

    if isinstance(provider, OpenAIProvider):
        return OpenAIBatchClient(provider)
    if isinstance(provider, AnthropicProvider):
        return AnthropicBatchClient(provider)
    raise ConfigError(f"model '{provider.spec}' has no batch API (use openai:<model> or "
                      "anthropic:<model>)")


class OpenAIBatchClient(BatchClient):
    """OpenAI Batch API: JSONL of /v1/chat/completions bodies, custom_id = item id."""

    def __init__(self, provider: Any) -> None:
        super().__init__()
        self.provider = provider
        self.spec = provider.spec

    def custom_id(self, item_id: str) -> str:
        return item_id

    async def submit(self, requests: Sequence[JudgeRequest], *,
                     metadata: dict[str, str] | None = None) -> str:
        import openai

        from judge.providers.openai_provider import chat_body, failure_from_error

        ids = _unique_ids(requests)
        lines = [json.dumps({"custom_id": r.item_id, "method": "POST",
                             "url": "/v1/chat/completions",
                             "body": chat_body(r, self.provider.model,
                                               token_field=self.provider.token_field)})
                 for r in requests]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        client = self.provider.client
        try:
            upload = await client.files.create(file=("judge-batch.jsonl", data,
                                                     "application/jsonl"), purpose="batch")
            batch = await client.batches.create(input_file_id=upload.id,
                                                endpoint="/v1/chat/completions",
                                                completion_window="24h", metadata=metadata)
        except openai.OpenAIError as exc:
            raise failure_from_error(exc, f"{self.spec} batch submit") from exc
        self.custom_ids[batch.id] = {i: i for i in ids}
        return str(batch.id)

    async def poll(self, batch_id: str) -> BatchStatus:
        import openai

        from judge.providers.openai_provider import failure_from_error

        try:
            batch = await self.provider.client.batches.retrieve(batch_id)
        except openai.OpenAIError as exc:
            raise failure_from_error(exc, f"{self.spec} batch poll") from exc
        counts = batch.request_counts
        return BatchStatus(
            batch_id=batch_id, state=batch.status,
            done=batch.status in ("completed", "failed", "expired", "cancelled"),
            total=counts.total if counts else 0, succeeded=counts.completed if counts else 0,
            failed=counts.failed if counts else 0, raw=batch.model_dump())

    async def _results(self, batch_id: str) -> dict[str, BatchResult]:
        import openai

        from judge.providers.openai_provider import failure_from_error, response_from_completion

        client = self.provider.client
        try:
            batch = await client.batches.retrieve(batch_id)
            texts = [(await client.files.content(fid)).text
                     for fid in (batch.output_file_id, batch.error_file_id) if fid]
        except openai.OpenAIError as exc:
            raise failure_from_error(exc, f"{self.spec} batch collect") from exc
        out: dict[str, BatchResult] = {}
        for text in texts:
            for line in text.splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                custom_id = str(row.get("custom_id"))
                response = row.get("response") or {}
                status = response.get("status_code")
                if status == 200:
                    try:
                        out[custom_id] = response_from_completion(response.get("body") or {},
                                                                  self.spec)
                    except ProviderFailure as failure:
                        out[custom_id] = failure
                    continue
                error = row.get("error") or (response.get("body") or {}).get("error") or {}
                message = error.get("message") or "failed in batch"
                code = error.get("code")
                retryable = code == "batch_expired" or (
                    isinstance(status, int) and is_retryable_status(status))
                out[custom_id] = ProviderFailure(
                    f"{self.spec}: batch entry failed: {status or code}: {message}",
                    retryable=retryable, status=status if isinstance(status, int) else None)
        return out


class AnthropicBatchClient(BatchClient):
    """Anthropic Message Batches: params = the /v1/messages body, custom_id = safe id."""

    def __init__(self, provider: Any) -> None:
        super().__init__()
        self.provider = provider
        self.spec = provider.spec

    def custom_id(self, item_id: str) -> str:
        return safe_custom_id(item_id)

    async def submit(self, requests: Sequence[JudgeRequest], *,
                     metadata: dict[str, str] | None = None) -> str:
        import anthropic

        from judge.providers.anthropic_provider import failure_from_error, messages_body

        ids = _unique_ids(requests)
        mapping = {safe_custom_id(i): i for i in ids}
        if len(mapping) != len(ids):  # pragma: no cover - needs a sha256 prefix collision
            raise ValueError("two item ids map to the same custom_id")
        entries = [{"custom_id": safe_custom_id(r.item_id),
                    "params": messages_body(r, self.provider.model)} for r in requests]
        try:
            batch = await self.provider.client.messages.batches.create(requests=entries)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, f"{self.spec} batch submit") from exc
        self.custom_ids[batch.id] = mapping
        return str(batch.id)

    async def poll(self, batch_id: str) -> BatchStatus:
        import anthropic

        from judge.providers.anthropic_provider import failure_from_error

        try:
            batch = await self.provider.client.messages.batches.retrieve(batch_id)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, f"{self.spec} batch poll") from exc
        c = batch.request_counts
        return BatchStatus(batch_id=batch_id, state=batch.processing_status,
                           done=batch.processing_status == "ended",
                           total=c.processing + c.succeeded + c.errored + c.canceled + c.expired,
                           succeeded=c.succeeded, failed=c.errored + c.canceled + c.expired,
                           raw=batch.model_dump(mode="json"))

    async def _results(self, batch_id: str) -> dict[str, BatchResult]:
        import anthropic

        from judge.providers.anthropic_provider import (
            RETRYABLE_ERROR_TYPES,
            failure_from_error,
            response_from_message,
        )

        out: dict[str, BatchResult] = {}
        try:
            decoder = await self.provider.client.messages.batches.results(batch_id)
            async for entry in decoder:
                result = entry.result.model_dump()
                kind = result.get("type")
                if kind == "succeeded":
                    out[entry.custom_id] = response_from_message(result["message"], self.spec)
                elif kind == "errored":
                    error = (result.get("error") or {}).get("error") or {}
                    etype = str(error.get("type", "api_error"))
                    out[entry.custom_id] = ProviderFailure(
                        f"{self.spec}: batch entry errored: {etype}: {error.get('message')}",
                        retryable=etype in RETRYABLE_ERROR_TYPES)
                else:
                    out[entry.custom_id] = ProviderFailure(
                        f"{self.spec}: batch entry {kind}", retryable=True)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, f"{self.spec} batch collect") from exc
        return out


def _unique_ids(requests: Sequence[JudgeRequest]) -> list[str]:
    ids = [r.item_id for r in requests]
    if not ids:
        raise ValueError("a batch needs at least one request")
    if len(set(ids)) != len(ids):
        raise ValueError("item ids in a batch must be unique")
    return ids
