"""The one small interface every judge provider implements, and the records of a call.

Providers know nothing of the store: the grading engine hands them a rendered request and
stores what comes back through a `CallCache`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from judge.request import JudgeRequest as JudgeRequest
from judge.request import ModelParams as ModelParams

if TYPE_CHECKING:
    from judge.providers.batch import BatchClient
    from judge.settings import Settings

#: placeholder key for OpenAI-compatible servers that need none (vLLM, Ollama, llama.cpp)
NO_KEY = "not-needed"

@dataclass
class ProviderResponse:
    """What a provider returned: the raw completion text (JSON expected) and its accounting."""

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)
    #: requests this answer took (more than 1 while a structured-output mode was being
    #: found: judge.providers.response_format)
    calls: int = 1


class ProviderFailure(Exception):
    """A provider call failed. `retryable` and `retry_after` guide the engine's backoff.

    `refused`: the server rejected the request as malformed (a 400/404/413/422, or a 5xx
    whose body is a validation error): never retried, since the same request gets the same
    answer; the message quotes the server's one-line reason."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None,
                 status: int | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable and not refused
        self.retry_after = retry_after
        self.status = status
        self.refused = refused
        #: calls made before giving up (set by the retry helper)
        self.attempts = 1
        #: requests the last call made (more than 1 while a mode was being found)
        self.calls = 1


class Provider(ABC):
    """A judge model. Subclasses implement `generate`; one module each.

    A provider class is also its own registration: its spec `prefix` and `forms`, how it is
    built from settings (`from_settings`), when it is the default (`default_spec`), and its
    batch client (`batch_client`). `judge.providers.registry` maps prefixes to modules and
    asks the class. Provider modules import their SDK only when a provider is first used
    (`prepare`, or its first call), so importing one, or building one, is cheap; building
    one still fails for a missing SDK (`need_sdk`).
    """

    #: the spec prefix: "openai" in "openai:gpt-4.1-mini"
    prefix: ClassVar[str]
    #: the spec forms it accepts, for messages: "heuristic" (no argument) and/or
    #: "openai:<model>" (a non-empty argument after the colon)
    forms: ClassVar[tuple[str, ...]]

    #: the model spec, e.g. "openai:gpt-4.1-mini", "heuristic"
    spec: str
    #: a name fit for every output, e.g. "heuristic baseline (no LLM)"
    display_name: str
    #: False for providers that run locally without a network (no retries, no rate limit)
    remote: bool = True
    #: where requests go (the API base URL; "" for a local provider): part of every call's
    #: cache key, since another server under the same model name is another judge
    endpoint: str = ""
    #: True when the same request always gets the same answer whatever the seed or
    #: temperature (the heuristic baseline): k samples of it would agree by construction
    deterministic: bool = False
    #: the provider's own structured-output mode (see `response_format`)
    native_format: ClassVar[str] = ""

    @property
    def response_format(self) -> str:
        """How structured output is asked for now ("" for local providers): stored with
        every verdict; a mode other than `native_format` is part of every call's cache key
        (judge.grading.keys), since the same request in another mode is another call."""
        return self.native_format

    @classmethod
    def from_settings(cls, argument: str | None, settings: Settings) -> Provider:
        """Build from a spec's argument (the text after `prefix:`; None without a colon)
        and settings. ConfigError, before any call, if it cannot work; ImportError when its
        SDK is missing (the registry turns that into an install hint). Registered providers
        override it; wrappers around a provider do not."""
        raise NotImplementedError(f"{cls.__name__} is not built from a model spec")

    @classmethod
    def default_spec(cls, settings: Settings) -> str | None:
        """The spec to use when none is named and `settings` point at this provider."""
        return None

    def batch_client(self) -> BatchClient | None:
        """This provider's batch client, or None when it has no batch API."""
        return None

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """Do now what the first call would otherwise do (import the SDK, build its client):
        a run calls it before it forks its children and freezes the heap
        (judge.pipeline.heap), so the SDK's objects are shared and never collected."""

    @abstractmethod
    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        """Send one request; raise ProviderFailure on any failure."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


def need_sdk(name: str) -> None:
    """ImportError (which the registry turns into an install hint) unless package `name` is
    installed: a provider that imports its SDK on first use still fails when it is built."""
    import importlib.util

    try:
        found = importlib.util.find_spec(name) is not None
    except ValueError:  # imported already without a spec: it is there
        found = True
    if not found:
        raise ModuleNotFoundError(f"No module named '{name}'", name=name)


@dataclass
class CallRecord:
    """One stored provider call; `cache_key` covers prompt hash, model, endpoint, params and
    input. `invalid_reason`: why the reply failed verdict validation when it was stored (None:
    valid, or not validated); `replaces_invalid`: this call asked again for a key whose
    stored reply was not served (why), so the store keeps that reply aside and this one
    under the key (judge.grading.engine)."""

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
    invalid_reason: str | None = None
    replaces_invalid: str | None = None


class CallCache(Protocol):
    """Where provider calls are stored and looked up (the database, or memory in tests)."""

    def get(self, cache_key: str) -> CallRecord | None: ...

    def put(self, record: CallRecord) -> None: ...
