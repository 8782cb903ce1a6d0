"""Anthropic Message Batches for `anthropic:<model>` (`AnthropicProvider.batch_client`):
params = the /v1/messages body; custom_id = `safe_custom_id(item id)` (Anthropic's ids must
match ^[a-zA-Z0-9_-]{1,64}$), rebuilt from the item ids after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judge.providers.anthropic_provider import (
    RETRYABLE_ERROR_TYPES,
    AnthropicProvider,
    failure_from_error,
    messages_body,
    response_from_message,
)
from judge.providers.base import JudgeRequest, ProviderFailure
from judge.providers.batch import (
    BatchClient,
    BatchResult,
    BatchStatus,
    safe_custom_id,
    unique_ids,
)


class AnthropicBatchClient(BatchClient):
    """Anthropic Message Batches: params = the /v1/messages body, custom_id = safe id."""

    def __init__(self, provider: AnthropicProvider) -> None:
        super().__init__()
        self.provider = provider
        self.spec = provider.spec

    def custom_id(self, item_id: str) -> str:
        return safe_custom_id(item_id)

    async def submit(self, requests: Sequence[JudgeRequest], *,
                     metadata: dict[str, str] | None = None) -> str:
        import anthropic

        ids = unique_ids(requests)
        mapping = {safe_custom_id(i): i for i in ids}
        if len(mapping) != len(ids):  # pragma: no cover - needs a sha256 prefix collision
            raise ValueError("two item ids map to the same custom_id")
        entries: list[Any] = [{"custom_id": safe_custom_id(r.item_id),
                    "params": messages_body(r, self.provider.model)} for r in requests]
        try:
            batch = await self.provider.client.messages.batches.create(requests=entries)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, f"{self.spec} batch submit") from exc
        self.custom_ids[batch.id] = mapping
        return str(batch.id)

    async def poll(self, batch_id: str) -> BatchStatus:
        import anthropic

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

        out: dict[str, BatchResult] = {}
        try:
            decoder = await self.provider.client.messages.batches.results(batch_id)
            async for entry in decoder:
                result = entry.result
                if result.type == "succeeded":
                    out[entry.custom_id] = response_from_message(result.message, self.spec)
                elif result.type == "errored":
                    error = result.error.error
                    out[entry.custom_id] = ProviderFailure(
                        f"{self.spec}: batch entry errored: {error.type}: {error.message}",
                        retryable=error.type in RETRYABLE_ERROR_TYPES)
                else:
                    out[entry.custom_id] = ProviderFailure(
                        f"{self.spec}: batch entry {result.type}", retryable=True)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, f"{self.spec} batch collect") from exc
        return out
