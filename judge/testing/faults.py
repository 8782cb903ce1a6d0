"""What the fake server answers: a `Reply` (normal answer, error status, delay, dropped
connection, malformed text, a chosen verdict) and responders built from them.

A responder is `Callable[[FakeRequest], Reply | dict | str | None]`: a dict gives verdict
fields over the default verdict, a str is the completion text verbatim, None is the default.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class FakeRequest:
    """One request the fake server received (generation requests, batch lines included)."""

    api: str            # "openai" | "anthropic" | "openai-files" | "openai-batches" | ...
    method: str
    path: str
    headers: dict[str, str]
    body: Any           # the parsed JSON body (None for uploads and GETs)
    index: int          # 0-based arrival order among generation requests (-1 for others)
    batch_id: str | None = None
    raw: bytes = field(default=b"", repr=False)  # the body's bytes as sent (live requests)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @cached_property
    def text(self) -> str:
        """System and message contents joined, for responders that look at the prompt."""
        if not isinstance(self.body, dict):
            return ""
        chunks: list[str] = []
        system = self.body.get("system")
        if isinstance(system, str):
            chunks.append(system)
        instructions = self.body.get("instructions")  # the Responses API
        if isinstance(instructions, str):
            chunks.append(instructions)
        items = self.body.get("input")
        if isinstance(items, str):
            chunks.append(items)
            items = None
        for message in [*(self.body.get("messages") or []), *(items or [])]:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                chunks.append(content)
            elif isinstance(content, list):
                chunks.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
            elif isinstance(message, dict) and isinstance(message.get("output"), str):
                chunks.append(message["output"])  # a Responses function_call_output
        return "\n".join(chunks)

    @property
    def response_format(self) -> str | None:
        """How a chat request asks for structured output: "json_schema", "json_object",
        "guided_json", another response_format type, or None (nothing: the prompt asks)."""
        if not isinstance(self.body, dict):
            return None
        fmt = self.body.get("response_format")
        if isinstance(fmt, dict):
            return str(fmt.get("type"))
        return "guided_json" if "guided_json" in self.body else None

    @property
    def schema(self) -> dict[str, Any] | None:
        """The output schema the request asks for (response_format json_schema, json_object
        with a schema, guided_json, or the forced tool)."""
        if not isinstance(self.body, dict):
            return None
        fmt = self.body.get("response_format")
        if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
            schema = fmt["json_schema"].get("schema")
            return schema if isinstance(schema, dict) else None
        if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
            return dict(fmt["schema"])
        if isinstance(self.body.get("guided_json"), dict):
            return dict(self.body["guided_json"])
        tools = self.body.get("tools")
        if isinstance(tools, list) and tools and isinstance(tools[0], dict):
            schema = tools[0].get("input_schema")
            return schema if isinstance(schema, dict) else None
        return None


@dataclass(frozen=True)
class ToolCall:
    """A tool call the fake model makes (an agent loop's model turn): OpenAI chat
    completions answer it as `message.tool_calls`, the Responses API as a `function_call`
    output item."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: the call id; None = one made up (`call_fake000001`, …)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """How to answer one generation request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: the completion text verbatim (200 only); None = a verdict as JSON (or, with
    #: `tool_calls`, no text)
    text: str | None = None
    #: tool calls the model makes (200 only; OpenAI chat completions and Responses API)
    tool_calls: tuple[ToolCall, ...] = ()
    #: verdict fields over the default verdict (200 only)
    verdict: dict[str, Any] | None = None
    #: seconds to wait before answering, on top of the server latency
    hold: float = 0.0
    #: drop the connection without answering
    disconnect: bool = False
    message: str = "injected fault"


Responder = Callable[[FakeRequest], "Reply | dict[str, Any] | str | None"]


def tool_calls(*calls: ToolCall | tuple[str, dict[str, Any]], text: str | None = None) -> Reply:
    """A 200 in which the model calls these tools (`("get_order", {"orderId": "o-1"})` or
    `ToolCall(...)`), with `text` beside them if given."""
    made = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], dict(c[1])) for c in calls)
    return Reply(text=text, tool_calls=made)


def rate_limited(retry_after: float | str | None = 1, *, in_ms: bool = False) -> Reply:
    """429 with `retry-after` seconds (or an HTTP date string), or `retry-after-ms`."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        if in_ms:
            headers["retry-after-ms"] = str(retry_after)
        else:
            headers["retry-after"] = str(retry_after)
    return Reply(status=429, headers=headers, message="rate limit exceeded (injected)")


def server_error(status: int = 500) -> Reply:
    return Reply(status=status, message=f"server error {status} (injected)")


def bad_request(message: str = "bad request (injected)") -> Reply:
    return Reply(status=400, message=message)


def hang(seconds: float = 30.0) -> Reply:
    """Hold the answer for `seconds` (longer than the client timeout: the client times out)."""
    return Reply(hold=seconds)


def disconnect() -> Reply:
    return Reply(disconnect=True)


def malformed(text: str = '{"label": "pass", "confidence": 0.9, "rationale": "cut off') -> Reply:
    """A 200 whose completion text is not valid JSON."""
    return Reply(text=text)


def verdict(**fields: Any) -> Reply:
    """A 200 with these verdict fields over the default (e.g. an unknown violated_key)."""
    return Reply(verdict=fields)


def unknown_key_verdict(key: str = "no_such_ledger_key") -> Reply:
    return verdict(label="fail", violated_key=key, confidence=0.8)


def outside_slice_verdict(seq: int = 987_654) -> Reply:
    return verdict(evidence_event=seq)


def default_fault_mix(timeout_hold: float = 30.0) -> tuple[Reply, ...]:
    """The mix `flaky` draws from: 429, 500, 503, a timeout, malformed JSON, invalid verdicts."""
    return (rate_limited(0.05), server_error(500), server_error(503), hang(timeout_hold),
            malformed(), unknown_key_verdict(), outside_slice_verdict())


def sequence(*replies: Reply | dict[str, Any] | str | None) -> Responder:
    """Answer the n-th request with replies[n]; the default afterwards."""
    lock = threading.Lock()
    remaining = list(replies)

    def respond(_: FakeRequest) -> Reply | dict[str, Any] | str | None:
        with lock:
            return remaining.pop(0) if remaining else None

    return respond


def flaky(rate: float, *, mix: Sequence[Reply] | None = None, seed: int = 0,
          timeout_hold: float = 30.0, base: Responder | None = None) -> Responder:
    """Fail a share `rate` of requests with a fault drawn from `mix` (default_fault_mix);
    answer the rest with `base` (or the default). Deterministic for a given seed and order."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError("rate must be in [0, 1]")
    faults = tuple(mix) if mix is not None else default_fault_mix(timeout_hold)
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(request: FakeRequest) -> Reply | dict[str, Any] | str | None:
        with lock:
            fail = rng.random() < rate
            fault = rng.choice(faults) if fail else None
        if fault is not None:
            return fault
        return base(request) if base is not None else None

    return respond
