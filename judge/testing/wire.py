"""What the two wire formats share: the error a request check raises, the adapter interface
each format implements (`Wire`), and the outcome of one generation in a batch.

The shared generation path (verdict choice, faults, counting) lives in `FakeAPI`; a `Wire`
only knows its own format: how a request is checked and how an answer or an error looks.
Answers are the SDKs' own pydantic types, so the wire shape cannot drift from what the SDKs
parse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from judge.testing.faults import FakeRequest, ToolCall

#: the pydantic type of a successful answer (ChatCompletion, Message)
C = TypeVar("C", bound=BaseModel)
C_co = TypeVar("C_co", bound=BaseModel, covariant=True)

#: makes a fresh id from a prefix ("chatcmpl-fake" -> "chatcmpl-fake000001")
NewId = Callable[[str], str]


class ApiError(Exception):
    """A request the real API would refuse, or an injected error status. `body`: the error
    body to send verbatim (another server's shape: judge.testing.dialects); None: the wire
    format's own error body."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.headers = dict(headers or {})
        self.body = body


class DropConnection(Exception):
    """Close the connection without answering (the `disconnect` fault)."""


@dataclass(frozen=True)
class Answer:
    """The completion text, and the verdict object when the text is one (a tool-use answer
    carries the object itself); `tool_calls`: calls of the agent's tools the model makes."""

    text: str
    verdict: dict[str, Any] | None
    tool_calls: tuple[ToolCall, ...] = ()


class Wire(Protocol[C_co]):
    """One wire format: OpenAI chat completions or Anthropic messages."""

    #: FakeRequest.api of its generation requests
    api: str
    #: the `counts` key of its generation endpoint
    counter: str
    #: the generation endpoint's path (batch lines are recorded under it)
    path: str

    def check_auth(self, headers: Mapping[str, str], require_auth: bool) -> None: ...

    def validate(self, body: dict[str, Any]) -> None: ...

    def completion(self, request: FakeRequest, answer: Answer, new_id: NewId) -> C_co: ...

    def error(self, status: int, message: str, param: str | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Outcome(Generic[C]):
    """How one batch line ended: answered, refused, failed with a status, or expired."""

    completion: C | None = None
    status: int = 200
    message: str = ""
    #: the line never ran (a hang or dropped connection in the batch window)
    expired: bool = False


def tokens(text: str) -> int:
    """A rough token count (4 characters a token) for usage figures."""
    return max(1, len(text) // 4)
