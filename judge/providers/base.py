"""The one small interface every judge provider implements, and the records of a call.

Providers know nothing of the store: the grading engine hands them a rendered request and
stores what comes back through a `CallCache`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelParams:
    """Generation parameters; part of the cache key."""

    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1024

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class JudgeRequest:
    """A rendered, redacted, model-blind request for one item.

    `messages` are chat turns after the system prompt (`{"role": "user"|"assistant",
    "content": str}`); a re-ask appends the previous completion and the validation error.
    `schema` is the JSON Schema the verdict must follow. `item` is the structured item,
    for providers that reason over it without text (heuristic, scripted); network providers
    never read it.
    """

    item_id: str
    system: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    schema_name: str = "verdict"
    params: ModelParams = ModelParams()
    item: Any = None


@dataclass
class ProviderResponse:
    """What a provider returned: the raw completion text (JSON expected) and its accounting."""

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)


class ProviderFailure(Exception):
    """A provider call failed. `retryable` and `retry_after` guide the engine's backoff."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        #: calls made before giving up (set by the retry helper)
        self.attempts = 1


class Provider(ABC):
    """A judge model. Subclasses implement `generate`; one module each, imported lazily."""

    #: the model spec, e.g. "openai:gpt-4.1-mini", "heuristic"
    spec: str
    #: a name fit for every output, e.g. "heuristic baseline (no LLM)"
    display_name: str
    #: False for providers that run locally without a network (no retries, no rate limit)
    remote: bool = True

    @abstractmethod
    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        """Send one request; raise ProviderFailure on any failure."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


@dataclass
class CallRecord:
    """One stored provider call; `cache_key` covers prompt hash, model, params and input."""

    cache_key: str
    item_id: str
    prompt_hash: str
    model: str
    params: dict[str, Any]
    request: dict[str, Any]
    response_text: str
    usage: dict[str, int]
    latency_s: float
    raw: dict[str, Any] = field(default_factory=dict)


class CallCache(Protocol):
    """Where provider calls are stored and looked up (the database, or memory in tests)."""

    def get(self, cache_key: str) -> CallRecord | None: ...

    def put(self, record: CallRecord) -> None: ...
