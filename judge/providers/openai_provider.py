"""`openai:<model>`: OpenAI chat completions with strict structured outputs, through the
official SDK. Also any OpenAI-compatible server (vLLM, Ollama, llama.cpp) via `base_url`.

The SDK's own retries are off (`max_retries=0`): judge's retry helper decides, using the
`ProviderFailure` this module raises for every SDK error.
"""

from __future__ import annotations

import time
from typing import Any

import openai

from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse
from judge.providers.retry import is_retryable_status, parse_retry_after


def chat_body(request: JudgeRequest, model: str, *,
              token_field: str = "max_completion_tokens") -> dict[str, Any]:
    """The /v1/chat/completions body for `request` (also the body of a batch line).

    OpenAI itself takes `max_completion_tokens` (newer models reject `max_tokens`);
    OpenAI-compatible servers get `max_tokens`, which they all understand.
    """
    params = request.params
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": request.system}, *request.messages],
        "temperature": params.temperature,
        token_field: params.max_tokens,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "strict": True,
                            "schema": request.schema},
        },
    }
    if params.seed is not None:
        body["seed"] = params.seed
    return body


def response_from_completion(data: dict[str, Any], spec: str,
                             latency_s: float = 0.0) -> ProviderResponse:
    """A ProviderResponse from a chat.completion object (as a dict)."""
    choices = data.get("choices") or []
    if not choices:
        raise ProviderFailure("completion has no choices", retryable=True)
    choice = choices[0]
    message = choice.get("message") or {}
    text = message.get("content") or message.get("refusal") or ""
    usage = {k: v for k, v in (data.get("usage") or {}).items() if isinstance(v, int)}
    raw = {"id": data.get("id"), "model": data.get("model"),
           "finish_reason": choice.get("finish_reason")}
    if message.get("refusal"):
        raw["refusal"] = True
    return ProviderResponse(text=text, model=spec, usage=usage, latency_s=latency_s, raw=raw)


def failure_from_error(exc: Exception, what: str) -> ProviderFailure:
    """Map an openai SDK exception to a ProviderFailure with the right retry advice."""
    if isinstance(exc, openai.APITimeoutError):
        return ProviderFailure(f"{what}: request timed out", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderFailure(f"{what}: connection error: {exc}", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = is_retryable_status(status)
        if status == 429 and exc.code == "insufficient_quota":
            retryable = False  # billing, not load: waiting will not help
        return ProviderFailure(f"{what}: HTTP {status}: {_short(exc.message)}",
                               retryable=retryable, status=status,
                               retry_after=parse_retry_after(exc.response.headers))
    return ProviderFailure(f"{what}: {type(exc).__name__}: {_short(str(exc))}", retryable=False)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class OpenAIProvider(Provider):
    """An OpenAI (or OpenAI-compatible) chat model as a judge."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, client: openai.AsyncOpenAI | None = None) -> None:
        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url
        self.display_name = self.spec if base_url is None else f"{self.spec} at {base_url}"
        self.client = client or openai.AsyncOpenAI(api_key=api_key, base_url=base_url,
                                                   timeout=timeout, max_retries=0)
        official = base_url is None or "api.openai.com" in base_url
        self.token_field = "max_completion_tokens" if official else "max_tokens"

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        body = chat_body(request, self.model, token_field=self.token_field)
        started = time.perf_counter()
        try:
            completion = await self.client.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise failure_from_error(exc, self.spec) from exc
        latency = time.perf_counter() - started
        if not completion.choices:
            raise ProviderFailure(f"{self.spec}: completion has no choices", retryable=True)
        choice = completion.choices[0]
        message = choice.message
        usage = completion.usage
        counts = {"prompt_tokens": usage.prompt_tokens,
                  "completion_tokens": usage.completion_tokens,
                  "total_tokens": usage.total_tokens} if usage is not None else {}
        raw: dict[str, Any] = {"id": completion.id, "model": completion.model,
                               "finish_reason": choice.finish_reason}
        if message.refusal:
            raw["refusal"] = True
        return ProviderResponse(text=message.content or message.refusal or "", model=self.spec,
                                usage=counts, latency_s=latency, raw=raw)

    async def aclose(self) -> None:
        await self.client.close()
