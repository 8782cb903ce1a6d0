"""The batch APIs the fake server offers: OpenAI Files + Batches and Anthropic Message Batches.

Every line of a batch is answered when the batch is created, through the same path as a live
request (`run_line`: the shared verdict choice, faults and counting); a hang or a dropped
connection becomes an expired line. A batch reports itself in progress for `batch_polls`
polls, then ends. Objects are the SDKs' own types (`openai.types.Batch`, `FileObject`,
`anthropic.types.messages.MessageBatch`, `MessageBatchIndividualResponse`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import orjson
from anthropic.types import Message
from anthropic.types.messages import (
    MessageBatch,
    MessageBatchErroredResult,
    MessageBatchExpiredResult,
    MessageBatchIndividualResponse,
    MessageBatchRequestCounts,
    MessageBatchSucceededResult,
)
from openai.types import Batch, BatchError, BatchRequestCounts, FileObject, FilePurpose
from openai.types.chat import ChatCompletion

from judge.testing.anthropic_wire import CUSTOM_ID, AnthropicWire
from judge.testing.openai_wire import OpenAIWire
from judge.testing.wire import ApiError, NewId, Outcome

#: upload purposes: what the SDK may send that a FileObject can also report back
UPLOAD_PURPOSES = tuple(p for p in get_args(FilePurpose)
                        if p in get_args(FileObject.model_fields["purpose"].annotation))
OPENAI_DONE = ("completed", "cancelled", "failed", "expired")
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."

OpenAILine = Callable[[dict[str, Any], str], Outcome[ChatCompletion]]
AnthropicLine = Callable[[dict[str, Any], str], Outcome[Message]]


def dump(model: Any) -> dict[str, Any]:
    """What goes on the wire for an SDK object: the fields that were set."""
    data: dict[str, Any] = model.model_dump(mode="json", exclude_unset=True)
    return data


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


class OpenAIFiles:
    def __init__(self, new_id: NewId) -> None:
        self.new_id = new_id
        self.objects: dict[str, FileObject] = {}
        self.data: dict[str, bytes] = {}

    def upload(self, filename: str | None, data: bytes | None, purpose: str | None) -> FileObject:
        if data is None or purpose is None:
            raise ApiError(400, "'file' and 'purpose' are required", param="file")
        if purpose not in UPLOAD_PURPOSES:
            raise ApiError(400, f"invalid purpose {purpose!r}", param="purpose")
        return self.store(data, filename or "upload.jsonl", purpose)

    def store(self, data: bytes, filename: str, purpose: str) -> FileObject:
        obj = FileObject.model_validate({
            "id": self.new_id("file-fake"), "object": "file", "bytes": len(data),
            "created_at": int(time.time()), "filename": filename, "purpose": purpose,
            "status": "processed"})
        self.objects[obj.id] = obj
        self.data[obj.id] = data
        return obj

    def get(self, file_id: str) -> FileObject:
        if file_id not in self.objects:
            raise ApiError(404, f"No such File object: {file_id}", param="id")
        return self.objects[file_id]

    def content(self, file_id: str) -> bytes:
        self.get(file_id)
        return self.data[file_id]


class OpenAIBatches:
    def __init__(self, wire: OpenAIWire, files: OpenAIFiles, run_line: OpenAILine,
                 new_id: NewId, polls: Callable[[], int]) -> None:
        self.wire = wire
        self.files = files
        self.run_line = run_line
        self.new_id = new_id
        self.polls = polls
        self.batches: dict[str, Batch] = {}
        self._seen: Counter[str] = Counter()
        self._results: dict[str, list[dict[str, Any]]] = {}

    def create(self, body: dict[str, Any]) -> Batch:
        file_id = body.get("input_file_id")
        if not isinstance(file_id, str) or file_id not in self.files.data:
            raise ApiError(400, f"input_file_id {file_id!r} not found", param="input_file_id")
        endpoint = body.get("endpoint")
        if endpoint != self.wire.path:
            raise ApiError(400, f"unsupported endpoint {endpoint!r}", param="endpoint")
        if body.get("completion_window") != "24h":
            raise ApiError(400, "completion_window must be '24h'", param="completion_window")
        metadata = body.get("metadata")
        if metadata is not None and not (isinstance(metadata, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
            raise ApiError(400, "metadata must map strings to strings", param="metadata")
        lines = read_batch_file(self.files.data[file_id], endpoint)
        batch_id = self.new_id("batch_fake")
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in lines:
            outcome = self.run_line(line["body"], batch_id)
            request_id = self.new_id("batch_req_")
            entry: dict[str, Any] = {"id": request_id, "custom_id": line["custom_id"],
                                     "response": None, "error": None}
            if outcome.completion is not None:
                entry["response"] = {"status_code": 200, "request_id": request_id,
                                     "body": dump(outcome.completion)}
                outputs.append(entry)
                continue
            if outcome.expired:
                entry["error"] = dump(BatchError(code="batch_expired", message=EXPIRED_MESSAGE))
            else:
                entry["response"] = {"status_code": outcome.status, "request_id": request_id,
                                     "body": self.wire.error(outcome.status, outcome.message)}
            errors.append(entry)
        now = int(time.time())
        batch = Batch(
            id=batch_id, object="batch", endpoint=endpoint, errors=None,
            input_file_id=file_id, completion_window="24h", status="validating",
            output_file_id=None, error_file_id=None, created_at=now, in_progress_at=None,
            expires_at=now + 86400, finalizing_at=None, completed_at=None, failed_at=None,
            expired_at=None, cancelling_at=None, cancelled_at=None,
            request_counts=BatchRequestCounts(total=len(lines), completed=0, failed=0),
            metadata=metadata)
        self.batches[batch_id] = batch
        # results are not in input order on the real service either
        self._results[batch_id] = [*reversed(outputs), *errors]
        return batch

    def get(self, batch_id: str) -> Batch:
        batch = self.batches.get(batch_id)
        if batch is None:
            raise ApiError(404, f"No batch found with id '{batch_id}'")
        return batch

    def retrieve(self, batch_id: str) -> Batch:
        """The batch as a poll sees it (each poll moves it on)."""
        batch = self.get(batch_id)
        if batch.status in OPENAI_DONE:
            return batch
        self._seen[batch_id] += 1
        now = int(time.time())
        if self._seen[batch_id] <= self.polls():
            batch.status = "in_progress"
            batch.in_progress_at = batch.in_progress_at or now
            return batch
        results = self._results[batch_id]
        outputs = [r for r in results if r["response"] and r["response"]["status_code"] == 200]
        errors = [r for r in results if r not in outputs]
        if outputs:
            batch.output_file_id = self.files.store(jsonl(outputs), f"{batch_id}_output.jsonl",
                                                    "batch_output").id
        if errors:
            batch.error_file_id = self.files.store(jsonl(errors), f"{batch_id}_error.jsonl",
                                                   "batch_output").id
        batch.status = "completed"
        batch.finalizing_at = batch.completed_at = now
        batch.request_counts = BatchRequestCounts(total=len(results), completed=len(outputs),
                                                  failed=len(errors))
        return batch

    def cancel(self, batch_id: str) -> Batch:
        batch = self.get(batch_id)
        if batch.status not in ("completed", "failed", "expired"):
            batch.status = "cancelled"
            batch.cancelled_at = int(time.time())
        return batch


def read_batch_file(data: bytes, endpoint: str) -> list[dict[str, Any]]:
    """The lines of an OpenAI batch input file, checked as the real service checks them."""
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "the input file is not UTF-8") from None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(400, f"line {number}: invalid JSON") from None
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str) or not custom_id:
            raise ApiError(400, f"line {number}: custom_id is required")
        if custom_id in seen:
            raise ApiError(400, f"line {number}: duplicate custom_id {custom_id!r}")
        seen.add(custom_id)
        if line.get("method") != "POST" or line.get("url") != endpoint:
            raise ApiError(400, f"line {number}: method/url must be POST {endpoint}")
        if not isinstance(line.get("body"), dict):
            raise ApiError(400, f"line {number}: body must be an object")
        lines.append(line)
    if not lines:
        raise ApiError(400, "the input file has no requests")
    return lines


class AnthropicBatches:
    def __init__(self, wire: AnthropicWire, run_line: AnthropicLine, new_id: NewId,
                 polls: Callable[[], int], results_url: Callable[[str], str]) -> None:
        self.wire = wire
        self.run_line = run_line
        self.new_id = new_id
        self.polls = polls
        self.results_url = results_url
        self.batches: dict[str, MessageBatch] = {}
        self._seen: Counter[str] = Counter()
        self._results: dict[str, list[MessageBatchIndividualResponse]] = {}
        self._final: dict[str, MessageBatchRequestCounts] = {}

    def create(self, body: dict[str, Any]) -> MessageBatch:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise ApiError(400, "requests: a non-empty list is required")
        seen: set[str] = set()
        for i, entry in enumerate(requests):
            custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                raise ApiError(400, f"requests.{i}.custom_id: String should match pattern "
                                    "'^[a-zA-Z0-9_-]{1,64}$'")
            if custom_id in seen:
                raise ApiError(400, f"requests.{i}.custom_id: duplicate {custom_id!r}")
            seen.add(custom_id)
            if not isinstance(entry.get("params"), dict):
                raise ApiError(400, f"requests.{i}.params: an object is required")
        batch_id = self.new_id("msgbatch_fake")
        rows: list[MessageBatchIndividualResponse] = []
        counts = Counter[str]()
        for entry in requests:
            outcome = self.run_line(entry["params"], batch_id)
            result: MessageBatchSucceededResult | MessageBatchErroredResult | \
                MessageBatchExpiredResult
            if outcome.completion is not None:
                result = MessageBatchSucceededResult(type="succeeded",
                                                     message=outcome.completion)
            elif outcome.expired:
                result = MessageBatchExpiredResult(type="expired")
            else:
                result = MessageBatchErroredResult(
                    type="errored", error=self.wire.error_response(outcome.status,
                                                                   outcome.message))
            counts[result.type] += 1
            rows.append(MessageBatchIndividualResponse(custom_id=entry["custom_id"],
                                                       result=result))
        now = datetime.now(UTC)
        batch = MessageBatch(
            id=batch_id, type="message_batch", processing_status="in_progress",
            request_counts=MessageBatchRequestCounts(processing=len(rows), succeeded=0,
                                                     errored=0, canceled=0, expired=0),
            created_at=now, expires_at=now + timedelta(days=1), ended_at=None,
            archived_at=None, cancel_initiated_at=None, results_url=None)
        self.batches[batch_id] = batch
        self._results[batch_id] = list(reversed(rows))
        self._final[batch_id] = MessageBatchRequestCounts(
            processing=0, succeeded=counts["succeeded"], errored=counts["errored"],
            canceled=0, expired=counts["expired"])
        return batch

    def get(self, batch_id: str) -> MessageBatch:
        batch = self.batches.get(batch_id)
        if batch is None:
            raise ApiError(404, f"message batch {batch_id!r} not found")
        return batch

    def retrieve(self, batch_id: str) -> MessageBatch:
        """The batch as a poll sees it (each poll moves it on)."""
        batch = self.get(batch_id)
        if batch.processing_status == "ended":
            return batch
        self._seen[batch_id] += 1
        if self._seen[batch_id] <= self.polls():
            return batch
        batch.processing_status = "ended"
        batch.ended_at = datetime.now(UTC)
        batch.request_counts = self._final[batch_id]
        batch.results_url = self.results_url(batch_id)
        return batch

    def results(self, batch_id: str) -> bytes:
        batch = self.get(batch_id)
        if batch.processing_status != "ended":
            raise ApiError(400, "batch is still processing; results are not ready")
        return jsonl([dump(row) for row in self._results[batch_id]])
