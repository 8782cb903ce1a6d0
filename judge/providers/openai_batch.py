"""OpenAI Batch API for `openai:<model>` (`OpenAIProvider.batch_client`): a JSONL file of
/v1/chat/completions bodies uploaded through Files, one batch through Batches, results read
back from the output and error files. custom_id is the item id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from judge.providers.base import JudgeRequest, ProviderFailure
from judge.providers.batch import BatchClient, BatchResult, BatchStatus, unique_ids
from judge.providers.openai_provider import (
    OpenAIProvider,
    chat_body,
    completion_from_body,
    failure_from_error,
    response_from_completion,
)
from judge.providers.retry import is_retryable_status


class OpenAIBatchClient(BatchClient):
    """OpenAI Batch API: JSONL of /v1/chat/completions bodies, custom_id = item id."""

    def __init__(self, provider: OpenAIProvider) -> None:
        super().__init__()
        self.provider = provider
        self.spec = provider.spec

    def custom_id(self, item_id: str) -> str:
        return item_id

    async def submit(self, requests: Sequence[JudgeRequest], *,
                     metadata: dict[str, str] | None = None) -> str:
        import openai

        ids = unique_ids(requests)
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
                        completion = completion_from_body(response.get("body"), self.spec)
                        out[custom_id] = response_from_completion(completion, self.spec)
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
