"""The fake server's state and its one generation path, free of any HTTP library.

Every completion — an OpenAI chat completion, an Anthropic message, a line of either batch
API — goes through the same steps: count it, record it as a `FakeRequest`, check it the way
the real API would, choose the reply (queued replies first, then the responder, then a valid
verdict built from the request: see judge.testing.verdicts), apply the reply's fault. The two
wire formats (`OpenAIWire`, `AnthropicWire`) only check requests and shape answers and errors.
`judge.testing.routes` puts this on HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter, deque
from collections.abc import Mapping
from functools import partial
from typing import Any

import orjson

from judge.testing.anthropic_wire import AnthropicWire
from judge.testing.batches import AnthropicBatches, OpenAIBatches, OpenAIFiles, dump
from judge.testing.faults import FakeRequest, Reply, Responder
from judge.testing.openai_wire import OpenAIWire
from judge.testing.responses_wire import ResponsesWire
from judge.testing.verdicts import default_verdict, find_seq
from judge.testing.wire import Answer, ApiError, C, DropConnection, Outcome, Wire

ReplyLike = Reply | dict[str, Any] | str | None


class FakeAPI:
    """State of one fake server. Safe for one server loop plus readers and `enqueue` callers
    in other threads."""

    def __init__(self, *, latency: float = 0.0, responder: Responder | None = None,
                 batch_polls: int = 1, require_auth: bool = False,
                 record: bool = True, dialect: str = "openai") -> None:
        self.latency = latency
        self.responder = responder
        self.batch_polls = batch_polls
        self.require_auth = require_auth
        self.record = record
        self.base_url = ""
        self.requests: list[FakeRequest] = []
        self.counts: Counter[str] = Counter()
        self._queue: deque[ReplyLike] = deque()
        self._ids = itertools.count(1)
        self._gen_index = itertools.count()
        self.openai = OpenAIWire(dialect)
        self.responses = ResponsesWire()
        self.anthropic = AnthropicWire()
        self.openai_files = OpenAIFiles(self.new_id)
        self.openai_batches = OpenAIBatches(
            self.openai, self.openai_files, partial(self.batch_line, self.openai),
            self.new_id, lambda: self.batch_polls)
        self.anthropic_batches = AnthropicBatches(
            self.anthropic, partial(self.batch_line, self.anthropic), self.new_id,
            lambda: self.batch_polls,
            lambda batch_id: f"{self.base_url}/v1/messages/batches/{batch_id}/results")

    # -- public helpers -------------------------------------------------------------------
    def enqueue(self, *replies: ReplyLike) -> None:
        """Answer the next generation requests with these, in order, before the responder."""
        self._queue.extend(replies)

    def stats(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "generations": self.counts["chat"]
                + self.counts["messages"] + self.counts["responses"],
                "queued": len(self._queue)}

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    @property
    def file_data(self) -> dict[str, bytes]:
        """Uploaded and generated file contents by file id."""
        return self.openai_files.data

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        return {k: dump(v) for k, v in self.openai_files.objects.items()}

    @property
    def batches(self) -> dict[str, dict[str, Any]]:
        """OpenAI batches as the wire shows them, by id."""
        return {k: dump(v) for k, v in self.openai_batches.batches.items()}

    @property
    def message_batches(self) -> dict[str, dict[str, Any]]:
        """Anthropic message batches as the wire shows them, by id."""
        return {k: dump(v) for k, v in self.anthropic_batches.batches.items()}

    # -- the one generation path ------------------------------------------------------------
    async def generate(self, wire: Wire[C], method: str, path: str,
                       headers: Mapping[str, str], raw: bytes) -> tuple[C, dict[str, str]]:
        """A live completion request: the answer and the reply's extra headers. Raises
        ApiError for a refused request or an injected error status, DropConnection for a
        dropped connection."""
        self.counts[wire.counter] += 1
        wire.check_auth(headers, self.require_auth)
        body = parse_body(raw)
        fake = self._record(wire, method, path, dict(headers), body, raw=raw)
        wire.validate(body)
        reply = self.decide(fake)
        delay = self.latency + reply.hold
        if delay > 0:
            await asyncio.sleep(delay)
        if reply.disconnect:
            raise DropConnection
        if reply.status != 200:
            raise ApiError(reply.status, reply.message, headers=reply.headers)
        return wire.completion(fake, self.answer(fake, reply), self.new_id), reply.headers

    def batch_line(self, wire: Wire[C], body: dict[str, Any], batch_id: str) -> Outcome[C]:
        """One line of a batch, answered at once; hangs and drops expire the line."""
        fake = self._record(wire, "POST", wire.path, {}, body, batch_id)
        self.counts["batch_lines"] += 1
        try:
            wire.validate(body)
        except ApiError as exc:
            return Outcome(status=exc.status, message=exc.message)
        reply = self.decide(fake)
        if reply.disconnect or reply.hold > 0:
            return Outcome(expired=True)
        if reply.status != 200:
            return Outcome(status=reply.status, message=reply.message)
        return Outcome(completion=wire.completion(fake, self.answer(fake, reply), self.new_id))

    def decide(self, fake: FakeRequest) -> Reply:
        """The reply for one generation request: queued, else the responder's, else default."""
        try:
            reply = self._queue.popleft()
        except IndexError:
            reply = self.responder(fake) if self.responder is not None else None
        if isinstance(reply, Reply):
            return reply
        if isinstance(reply, dict):
            return Reply(verdict=reply)
        if isinstance(reply, str):
            return Reply(text=reply)
        return Reply()

    @staticmethod
    def answer(fake: FakeRequest, reply: Reply) -> Answer:
        """The completion for a 200 reply: its text verbatim, or the default verdict for the
        request with the reply's fields over it."""
        if reply.tool_calls:
            return Answer(reply.text or "", None, reply.tool_calls)
        if reply.text is not None:
            return Answer(reply.text, None)
        obj = default_verdict(fake.schema)
        if reply.verdict:
            obj.update(reply.verdict)
            if obj.get("label") != "pass" and "evidence_event" not in reply.verdict:
                # a chosen fail cites the target: the largest seq the prompt shows
                obj["evidence_event"] = find_seq(fake.text)
        return Answer(json.dumps(obj), obj)

    def _record(self, wire: Wire[Any], method: str, path: str, headers: dict[str, str],
                body: Any, batch_id: str | None = None, *, raw: bytes = b"") -> FakeRequest:
        fake = FakeRequest(api=wire.api, method=method, path=path, headers=headers,
                           body=body, index=next(self._gen_index), batch_id=batch_id,
                           raw=raw)
        if self.record:
            self.requests.append(fake)
        return fake


def parse_body(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, "We could not parse the JSON body of your request.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "request body must be a JSON object")
    return body
