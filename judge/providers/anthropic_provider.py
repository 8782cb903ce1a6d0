"""`anthropic:<model>`: Claude through the official SDK, with the verdict schema as a forced
tool; the completion text is the tool call's input as JSON.

The SDK's own retries are off (`max_retries=0`): judge's retry helper decides.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic

from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse
from judge.providers.retry import is_retryable_status, parse_retry_after

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
                   "input_schema": request.schema}],
        "tool_choice": {"type": "tool", "name": request.schema_name,
                        "disable_parallel_tool_use": True},
    }


def response_from_message(data: dict[str, Any], spec: str,
                          latency_s: float = 0.0) -> ProviderResponse:
    """A ProviderResponse from a message object (as a dict): the first tool_use input as JSON,
    or the text blocks when the model did not call the tool."""
    blocks = data.get("content") or []
    text = ""
    for block in blocks:
        if block.get("type") == "tool_use":
            text = json.dumps(block.get("input"))
            break
    else:
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    usage = {k: v for k, v in (data.get("usage") or {}).items() if isinstance(v, int)}
    raw = {"id": data.get("id"), "model": data.get("model"),
           "stop_reason": data.get("stop_reason")}
    return ProviderResponse(text=text, model=spec, usage=usage, latency_s=latency_s, raw=raw)


def failure_from_error(exc: Exception, what: str) -> ProviderFailure:
    """Map an anthropic SDK exception to a ProviderFailure with the right retry advice."""
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderFailure(f"{what}: request timed out", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderFailure(f"{what}: connection error: {exc}", retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        return ProviderFailure(f"{what}: HTTP {status}: {_short(exc.message)}",
                               retryable=is_retryable_status(status), status=status,
                               retry_after=parse_retry_after(exc.response.headers))
    return ProviderFailure(f"{what}: {type(exc).__name__}: {_short(str(exc))}", retryable=False)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class AnthropicProvider(Provider):
    """A Claude model as a judge (forced tool use with the verdict schema)."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, client: anthropic.AsyncAnthropic | None = None) -> None:
        self.model = model
        self.spec = f"anthropic:{model}"
        self.display_name = self.spec if base_url is None else f"{self.spec} at {base_url}"
        self.client = client or anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url,
                                                         timeout=timeout, max_retries=0)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        body = messages_body(request, self.model)
        started = time.perf_counter()
        try:
            message = await self.client.messages.create(**body)
        except anthropic.AnthropicError as exc:
            raise failure_from_error(exc, self.spec) from exc
        latency = time.perf_counter() - started
        return response_from_message(message.model_dump(), self.spec, latency)

    async def aclose(self) -> None:
        await self.client.close()
