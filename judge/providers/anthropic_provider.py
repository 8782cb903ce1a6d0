"""`anthropic:<model>`: Claude through the official SDK, with the item's own verdict schema
(judge.verdicts.schema) as a forced strict tool; the completion text is the tool call's input
as JSON. A request the API rejects as malformed is not retried.

The SDK's own retries are off (`max_retries=0`): judge's retry helper decides. The SDK is
imported on first use (`prepare`, or the first call), not with this module nor when the
provider is built (which only checks that it is installed). Batches: `anthropic_batch.py`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from judge.errors import ConfigError
from judge.providers.base import (
    NO_KEY,
    JudgeRequest,
    Provider,
    ProviderFailure,
    ProviderResponse,
    need_sdk,
)
from judge.providers.retry import (
    is_refusal,
    is_retryable_status,
    parse_retry_after,
    server_message,
)
from judge.providers.transport import SDKClient, aiohttp_client
from judge.verdicts.schema import request_schema

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import Message

    from judge.providers.batch import BatchClient
    from judge.settings import Settings

#: the model `default_model_spec` picks when ANTHROPIC_API_KEY is set
DEFAULT_MODEL = "claude-haiku-4-5"

#: Anthropic error types inside a 200 batch result or an error body that are worth retrying
RETRYABLE_ERROR_TYPES = frozenset({"rate_limit_error", "api_error", "overloaded_error",
                                   "timeout_error"})


def messages_body(request: JudgeRequest, model: str) -> dict[str, Any]:
    """The /v1/messages body for `request` (also the `params` of a batch request).

    No `temperature` or `seed`: the Messages API of the pinned SDK (anthropic 2.x) takes no
    sampling parameters; they stay in the cache key only.
    """
    return {
        "model": model,
        "max_tokens": request.params.max_tokens,
        "system": request.system,
        "messages": list(request.messages),
        "tools": [{"name": request.schema_name, "strict": True,
                   "description": "Record your verdict on the item.",
                   "input_schema": request_schema(request)}],
        "tool_choice": {"type": "tool", "name": request.schema_name,
                        "disable_parallel_tool_use": True},
    }


def response_from_message(message: Message, spec: str,
                          latency_s: float = 0.0) -> ProviderResponse:
    """The ProviderResponse of a message (live, or a batch entry's): the first tool_use
    input as JSON, or the text blocks when the model did not call the tool."""
    text = ""
    for block in message.content:
        if block.type == "tool_use":
            text = json.dumps(block.input)
            break
    else:
        text = "".join(b.text for b in message.content if b.type == "text")
    usage = {k: v for k, v in message.usage if isinstance(v, int) and not isinstance(v, bool)}
    raw = {"id": message.id, "model": message.model, "stop_reason": message.stop_reason}
    return ProviderResponse(text=text, model=spec, usage=usage, latency_s=latency_s, raw=raw)


def failure_from_error(exc: Exception, what: str) -> ProviderFailure:
    """Map an anthropic SDK exception to a ProviderFailure with the right retry advice."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderFailure(f"{what}: request timed out", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderFailure(f"{what}: connection error: {exc}", retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        return ProviderFailure(f"{what}: HTTP {status}: {server_message(exc.body, exc.message)}",
                               retryable=is_retryable_status(status), status=status,
                               refused=is_refusal(status, exc.message),
                               retry_after=parse_retry_after(exc.response.headers))
    return ProviderFailure(f"{what}: {type(exc).__name__}: {_short(str(exc))}", retryable=False)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class AnthropicProvider(Provider):
    """A Claude model as a judge (forced tool use with the verdict schema)."""

    prefix = "anthropic"
    forms = ("anthropic:<model>",)
    #: the verdict schema as a forced tool, always
    native_format = "tool"

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, client: anthropic.AsyncAnthropic | None = None) -> None:
        if client is None:
            need_sdk("anthropic")
        self.model = model
        self.spec = f"anthropic:{model}"
        self.display_name = self.spec if base_url is None else f"{self.spec} at {base_url}"
        self._client_args: dict[str, Any] = {"api_key": api_key, "base_url": base_url,
                                             "timeout": timeout, "max_retries": 0}
        self._client = SDKClient(self._make_client, client)

    # the SDK and its client are made on first use (see OpenAIProvider.client)
    @property
    def client(self) -> anthropic.AsyncAnthropic:
        return self._client.get()

    def _make_client(self) -> anthropic.AsyncAnthropic:
        import anthropic

        # over aiohttp (judge.providers.transport), as the openai provider
        return anthropic.AsyncAnthropic(**self._client_args, **aiohttp_client(anthropic))

    @property
    def endpoint(self) -> str:  # type: ignore[override]  # read-only here
        return str(self.client.base_url)

    def prepare(self) -> None:
        self.client  # noqa: B018 - imports the SDK and builds the client

    @classmethod
    def from_settings(cls, argument: str | None, settings: Settings) -> AnthropicProvider:
        """ANTHROPIC_API_KEY; the base URL from --base-url / JUDGE_BASE_URL (with a base URL
        and no key, a placeholder key: a proxy or a fake server)."""
        model = argument or ""
        api_key = settings.anthropic_api_key
        if not api_key:
            if not settings.base_url:
                raise ConfigError(f"model spec 'anthropic:{model}' needs ANTHROPIC_API_KEY")
            api_key = NO_KEY
        return cls(model, api_key=api_key, base_url=settings.base_url, timeout=settings.timeout)

    @classmethod
    def default_spec(cls, settings: Settings) -> str | None:
        return f"anthropic:{DEFAULT_MODEL}" if settings.anthropic_api_key else None

    def batch_client(self) -> BatchClient:
        from judge.providers.anthropic_batch import AnthropicBatchClient

        return AnthropicBatchClient(self)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        import anthropic

        body = messages_body(request, self.model)
        started = time.perf_counter()
        try:
            message = await self.client.messages.create(**body)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, self.spec) from exc
        return response_from_message(message, self.spec, time.perf_counter() - started)

    async def aclose(self) -> None:
        await self._client.aclose()
