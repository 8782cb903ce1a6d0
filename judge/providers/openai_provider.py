"""`openai:<model>`: OpenAI chat completions with strict structured outputs, through the
official SDK. Also any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio) via
`base_url`.

Structured output: JSON Schema (strict) with the item's own schema (judge.verdicts.schema);
a server that refuses it gets the next mode of the ladder (judge.providers.response_format),
found once per endpoint and model and remembered. OpenAI itself, and every server that takes
JSON Schema, receives exactly the body it always did, apart from the item's enums; at OpenAI
(and in a remembered mode) every request goes out at once, none waits for a first reply.

The SDK's own retries are off (`max_retries=0`): judge's retry helper decides, using the
`ProviderFailure` this module raises for every SDK error; a refusal (a request the server
rejects as malformed) is never retried. The SDK is imported on first use (`prepare`, or the
first call), not with this module nor when the provider is built (which only checks that it
is installed). Batches: `openai_batch.py`.

The live call is the SDK's `post` with its endpoint, auth, headers, timeout and errors, made
lighter on both ends (issue 25): the body goes out as JSON bytes made by orjson (the same
JSON value the SDK would write: `body_bytes`), and the reply comes back raw (the SDK's
`with_raw_response`) and is read by orjson into just what a verdict needs
(`response_from_json`) instead of into the SDK's ChatCompletion model. Together that was
about 0.4 ms of CPU per call of the ~1.6 ms the SDK path cost (benchmarks/README.md).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import orjson

from judge.errors import ConfigError
from judge.providers.base import (
    NO_KEY,
    JudgeRequest,
    Provider,
    ProviderFailure,
    ProviderResponse,
    need_sdk,
)
from judge.providers.response_format import (
    AUTO,
    DESCRIPTIONS,
    JSON_SCHEMA,
    MODES,
    FormatMemory,
    Ladder,
    Notice,
    apply_mode,
    stderr_notice,
)
from judge.providers.retry import (
    is_refusal,
    is_retryable_status,
    parse_retry_after,
    server_message,
)
from judge.providers.transport import SDKClient, aiohttp_client
from judge.verdicts.schema import request_decoder_schema, request_schema

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

    from judge.providers.batch import BatchClient
    from judge.settings import Settings

#: the model `default_model_spec` picks when OpenAI settings are present
DEFAULT_MODEL = "gpt-4.1-mini"
#: the header the SDK's `with_raw_response` sets: `post` then hands back the HTTP response
#: unread by any model (openai._constants.RAW_RESPONSE_HEADER)
_RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"


class _RawReply:
    """What `post` is cast to under the raw-response header: unused by the SDK (it returns
    its raw response wrapper), named for the reader; `content` is what is read."""

    content: bytes


def chat_body(request: JudgeRequest, model: str, *,
              token_field: str = "max_completion_tokens",
              mode: str = JSON_SCHEMA) -> dict[str, Any]:
    """The /v1/chat/completions body for `request` (also the body of a batch line), asking
    for the item's own schema in structured-output `mode` (judge.providers.response_format).

    OpenAI itself takes `max_completion_tokens` (newer models reject `max_tokens`);
    OpenAI-compatible servers get `max_tokens`, which they all understand.
    """
    params = request.params
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": request.system}, *request.messages],
        "temperature": params.temperature,
        token_field: params.max_tokens,
    }
    apply_mode(body, mode, request_schema(request), request.schema_name,
               lambda: request_decoder_schema(request))
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


def response_from_json(payload: bytes, spec: str, latency_s: float = 0.0) -> ProviderResponse:
    """The ProviderResponse of a chat completion's JSON bytes, as `response_from_completion`
    reads the SDK's model of the same JSON (tested to agree), without building the model. A
    reply that is not a completion (not JSON, no choices, a content that is not text) is a
    retryable failure, as a completion without choices always was."""
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise ProviderFailure(f"{spec}: the reply is not JSON", retryable=True) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list):
        raise ProviderFailure(f"{spec}: completion has no choices", retryable=True)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ProviderFailure(f"{spec}: completion choice has no message", retryable=True)
    content, refusal = message.get("content"), message.get("refusal")
    if not isinstance(content, str | None) or not isinstance(refusal, str | None):
        raise ProviderFailure(f"{spec}: completion message is not text", retryable=True)
    usage = data.get("usage")
    counts = ({k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
              if isinstance(usage, dict) else {})
    raw: dict[str, Any] = {"id": data.get("id"), "model": data.get("model"),
                           "finish_reason": choice.get("finish_reason")}
    if refusal:
        raw["refusal"] = True
    return ProviderResponse(text=content or refusal or "", model=spec, usage=counts,
                            latency_s=latency_s, raw=raw)


def body_bytes(body: dict[str, Any]) -> bytes | None:
    """`body` as the JSON bytes the SDK would send (compact, UTF-8, no NaN), written by
    orjson; None when orjson cannot write the same JSON value (an integer beyond 64 bits, a
    lone surrogate, a temperature that is not finite): the SDK then writes it, or refuses."""
    temperature = body.get("temperature")
    if isinstance(temperature, float) and not math.isfinite(temperature):
        return None  # orjson writes null; the SDK refuses, as it should
    try:
        return orjson.dumps(body)
    except TypeError:
        return None


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
        said = server_message(exc.body, exc.message)
        return ProviderFailure(f"{what}: HTTP {status}: {said}", retryable=retryable,
                               status=status, refused=is_refusal(status, exc.message),
                               retry_after=parse_retry_after(exc.response.headers))
    return ProviderFailure(f"{what}: {type(exc).__name__}: {_short(str(exc))}", retryable=False)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class OpenAIProvider(Provider):
    """An OpenAI (or OpenAI-compatible) chat model as a judge."""

    prefix = "openai"
    forms = ("openai:<model>",)

    native_format = JSON_SCHEMA

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, client: openai.AsyncOpenAI | None = None,
                 response_format: str = AUTO, memory: FormatMemory | None = None,
                 on_notice: Notice = stderr_notice) -> None:
        if client is None:
            need_sdk("openai")
        if response_format != AUTO and response_format not in MODES:
            raise ValueError(f"unknown response format {response_format!r}")
        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url
        self.display_name = self.spec if base_url is None else f"{self.spec} at {base_url}"
        self._client_args: dict[str, Any] = {"api_key": api_key, "base_url": base_url,
                                             "timeout": timeout, "max_retries": 0}
        self._client = SDKClient(self._make_client, client)
        #: OpenAI itself (not an OpenAI-compatible server)
        self.official = base_url is None or "api.openai.com" in base_url
        self.token_field = "max_completion_tokens" if self.official else "max_tokens"
        #: where found modes are remembered (the settings cache)
        self.memory = memory if memory is not None else FormatMemory.default()
        self.on_notice = on_notice
        self._setting = response_format
        self._ladder: Ladder | None = None

    # The SDK (0.5 s of CPU to import) and its client are made on first use, not when the
    # provider is built (commands that never call a judge do not pay for it): a run calls
    # `prepare` before it forks its children (judge.pipeline.grade).
    @property
    def client(self) -> openai.AsyncOpenAI:
        return self._client.get()

    def _make_client(self) -> openai.AsyncOpenAI:
        import openai

        # over aiohttp (judge.providers.transport): the SDK's client, a lighter transport
        return openai.AsyncOpenAI(**self._client_args, **aiohttp_client(openai))

    @property
    def endpoint(self) -> str:  # type: ignore[override]  # read-only here
        return str(self.client.base_url)

    @property
    def ladder(self) -> Ladder:
        if self._ladder is None:
            remembered = None
            if self._setting == AUTO:
                # known good: the mode kept for this endpoint and model, else JSON Schema at
                # OpenAI itself (requests go out in it at once, all of them)
                remembered = self.memory.get(self.endpoint, self.model) or \
                    (JSON_SCHEMA if self.official else None)
            self._ladder = Ladder(setting=self._setting, remembered=remembered,
                                  on_found=self._found, on_kept=self._kept)
        return self._ladder

    def prepare(self) -> None:
        self.ladder  # noqa: B018 - builds the client and finds the remembered mode

    @property
    def response_format(self) -> str:
        return self.ladder.mode

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
        return cls(model, api_key=api_key, base_url=base_url, timeout=settings.timeout,
                   response_format=settings.response_format)

    @classmethod
    def default_spec(cls, settings: Settings) -> str | None:
        if settings.openai_api_key or settings.base_url or settings.openai_base_url:
            return f"openai:{DEFAULT_MODEL}"
        return None

    def batch_client(self) -> BatchClient:
        from judge.providers.openai_batch import OpenAIBatchClient

        return OpenAIBatchClient(self)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        return await self.ladder.send(lambda mode: self._post(request, mode))

    async def _post(self, request: JudgeRequest, mode: str) -> ProviderResponse:
        import openai

        body = chat_body(request, self.model, token_field=self.token_field, mode=mode)
        content = body_bytes(body)
        started = time.perf_counter()
        try:
            # `chat.completions.create(**body)` without its request transform: for the plain
            # JSON body chat_body builds the transform is an identity (tested), and it costs
            # a quarter of the SDK's CPU per call. Same endpoint, auth, timeout and errors;
            # the body as orjson's bytes and the reply raw (see the module doc). (It also
            # sends the fields of modes the SDK has no type for.)
            reply = await self.client.post(
                "/chat/completions", cast_to=_RawReply,
                **({"content": content} if content is not None else {"body": body}),
                options={"headers": {_RAW_RESPONSE_HEADER: "true"}})
        except openai.OpenAIError as exc:
            failure = failure_from_error(exc, self.spec)
            if failure.refused and self.ladder.forced:
                failure = ProviderFailure(
                    f"{failure} (structured output is fixed to {mode} by "
                    "JUDGE_RESPONSE_FORMAT / judge.toml response_format; 'auto' finds a mode "
                    "this server takes)", retryable=False, status=failure.status,
                    refused=True)
            raise failure from exc
        response = response_from_json(reply.content, self.spec, time.perf_counter() - started)
        response.raw["response_format"] = mode
        return response

    def _found(self, refused_mode: str, mode: str, refusal: ProviderFailure) -> None:
        """The ladder found `mode` after the server refused `refused_mode`: remember it, and
        say so (once per walk: at most once per rung, the ladder only goes down)."""
        said = str(refusal).removeprefix(f"{self.spec}: ")
        kept = self.memory.put(self.endpoint, self.model, mode,
                               f"{refused_mode} refused: {said}")
        where = f"remembered in {self.memory.path}" if kept and self.memory.path else \
            "not remembered (the settings cache cannot be written)"
        self.on_notice(f"{self.display_name}: the server refused "
                       f"{DESCRIPTIONS[refused_mode]} ({said}); grading with "
                       f"{DESCRIPTIONS[mode]} from now on, {where}; set JUDGE_RESPONSE_FORMAT "
                       "to choose another")

    def _kept(self, mode: str) -> None:
        """`mode` answered at its first try: remember it (quietly), so that the next run
        against this endpoint and model sends in it at once."""
        self.memory.put(self.endpoint, self.model, mode, f"{mode} answered at the first try")

    async def aclose(self) -> None:
        await self._client.aclose()
