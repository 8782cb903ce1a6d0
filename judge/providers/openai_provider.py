"""`openai:<model>`: OpenAI chat completions with strict structured outputs, through the
official SDK. Also any OpenAI-compatible server (vLLM, Ollama, llama.cpp) via `base_url`.

The SDK's own retries are off (`max_retries=0`): judge's retry helper decides, using the
`ProviderFailure` this module raises for every SDK error. The SDK is imported when a
provider is built, not with this module. Batches: `openai_batch.py`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from judge.errors import ConfigError
from judge.providers.base import NO_KEY, JudgeRequest, Provider, ProviderFailure, ProviderResponse
from judge.providers.retry import is_retryable_status, parse_retry_after

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

    from judge.providers.batch import BatchClient
    from judge.settings import Settings

#: the model `default_model_spec` picks when OpenAI settings are present
DEFAULT_MODEL = "gpt-4.1-mini"


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


def response_from_completion(completion: ChatCompletion, spec: str,
                             latency_s: float = 0.0) -> ProviderResponse:
    """The ProviderResponse of a chat completion: the one reader for live completions and
    batch results (`completion_from_body` reads a batch line's body into the same type)."""
    if not completion.choices:
        raise ProviderFailure(f"{spec}: completion has no choices", retryable=True)
    choice = completion.choices[0]
    message = choice.message
    usage = completion.usage
    counts = ({k: v for k, v in usage if isinstance(v, int) and not isinstance(v, bool)}
              if usage is not None else {})
    raw: dict[str, Any] = {"id": completion.id, "model": completion.model,
                           "finish_reason": choice.finish_reason}
    if message.refusal:
        raw["refusal"] = True
    return ProviderResponse(text=message.content or message.refusal or "", model=spec,
                            usage=counts, latency_s=latency_s, raw=raw)


def completion_from_body(body: Any, spec: str) -> ChatCompletion:
    """A batch line's response body as the SDK's ChatCompletion (validated: a batch file is
    data we read ourselves, not a response the SDK checked); malformed is a failure."""
    import pydantic
    from openai.types.chat import ChatCompletion

    try:
        return ChatCompletion.model_validate(body)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise ProviderFailure(f"{spec}: malformed completion in batch result: field "
                              f"'{where}': {err['msg']}", retryable=False) from None


def failure_from_error(exc: Exception, what: str) -> ProviderFailure:
    """Map an openai SDK exception to a ProviderFailure with the right retry advice."""
    import openai

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

    prefix = "openai"
    forms = ("openai:<model>",)

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, client: openai.AsyncOpenAI | None = None) -> None:
        import openai

        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url
        self.display_name = self.spec if base_url is None else f"{self.spec} at {base_url}"
        self.client = client or openai.AsyncOpenAI(api_key=api_key, base_url=base_url,
                                                   timeout=timeout, max_retries=0)
        self.endpoint = str(self.client.base_url)
        official = base_url is None or "api.openai.com" in base_url
        self.token_field = "max_completion_tokens" if official else "max_tokens"

    @classmethod
    def from_settings(cls, argument: str | None, settings: Settings) -> OpenAIProvider:
        """OPENAI_API_KEY; the base URL from --base-url / JUDGE_BASE_URL, else
        OPENAI_BASE_URL. A base URL without a key is an OpenAI-compatible server."""
        model = argument or ""
        base_url = settings.base_url or settings.openai_base_url
        api_key = settings.openai_api_key
        if not api_key:
            if not base_url:
                raise ConfigError(f"model spec 'openai:{model}' needs OPENAI_API_KEY, or a base "
                                  "URL (--base-url / OPENAI_BASE_URL) for an OpenAI-compatible "
                                  "server")
            api_key = NO_KEY
        return cls(model, api_key=api_key, base_url=base_url, timeout=settings.timeout)

    @classmethod
    def default_spec(cls, settings: Settings) -> str | None:
        if settings.openai_api_key or settings.base_url or settings.openai_base_url:
            return f"openai:{DEFAULT_MODEL}"
        return None

    def batch_client(self) -> BatchClient:
        from judge.providers.openai_batch import OpenAIBatchClient

        return OpenAIBatchClient(self)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        import openai
        from openai.types.chat import ChatCompletion

        body = chat_body(request, self.model, token_field=self.token_field)
        started = time.perf_counter()
        try:
            # `chat.completions.create(**body)` without its request transform: for the plain
            # JSON body chat_body builds the transform is an identity (tested), and it costs
            # a quarter of the SDK's CPU per call. Same endpoint, auth, timeout, errors and
            # typed response.
            completion = await self.client.post("/chat/completions", body=body,
                                                cast_to=ChatCompletion)
        except openai.OpenAIError as exc:
            raise failure_from_error(exc, self.spec) from exc
        return response_from_completion(completion, self.spec, time.perf_counter() - started)

    async def aclose(self) -> None:
        await self.client.close()
