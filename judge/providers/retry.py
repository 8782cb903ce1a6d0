"""Retries with exponential backoff and full jitter, honoring Retry-After.

Only `ProviderFailure(retryable=True)` is retried (429, 5xx, timeouts, connection errors, as
each provider decides). Any other exception propagates at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping

from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse
from judge.providers.ratelimit import RateLimiter

#: a Retry-After longer than this is not waited for: the failure is raised instead
MAX_RETRY_AFTER = 600.0

OnRetry = Callable[[int, ProviderFailure, float], None]


def backoff_delay(attempt: int, failure: ProviderFailure, *, base_delay: float,
                  max_delay: float, rng: random.Random) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based): full jitter over
    `min(max_delay, base_delay * 2**(attempt-1))`, and never less than Retry-After."""
    cap = min(max_delay, base_delay * (2 ** (attempt - 1)))
    delay = rng.uniform(0.0, cap)
    if failure.retry_after is not None:
        delay = max(delay, failure.retry_after)
    return delay


async def generate_with_retries(
    provider: Provider,
    request: JudgeRequest,
    *,
    retries: int,
    base_delay: float = 0.5,
    max_delay: float = 30.0,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    limiter: RateLimiter | None = None,
    on_retry: OnRetry | None = None,
) -> tuple[ProviderResponse, int]:
    """Call `provider.generate(request)` up to `retries + 1` times.

    Returns the response and the number of attempts made. Raises the last ProviderFailure
    when it is not retryable, when retries are exhausted, or when the server asks to wait
    longer than MAX_RETRY_AFTER; its `attempts` attribute says how many calls were made.
    `limiter` is acquired before every attempt; `on_retry(attempt, failure, delay)` is called
    before each wait.
    """
    rng = rng or random.Random()
    attempt = 0
    while True:
        attempt += 1
        if limiter is not None:
            await limiter.acquire()
        try:
            return await provider.generate(request), attempt
        except ProviderFailure as failure:
            failure.attempts = attempt
            if not failure.retryable or attempt > retries:
                raise
            if failure.retry_after is not None and failure.retry_after > MAX_RETRY_AFTER:
                raise
            delay = backoff_delay(attempt, failure, base_delay=base_delay,
                                  max_delay=max_delay, rng=rng)
            if on_retry is not None:
                on_retry(attempt, failure, delay)
            await sleep(delay)


def parse_retry_after(headers: Mapping[str, str] | None, *,
                      now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from `retry-after-ms` (milliseconds) or `retry-after` (seconds or an
    HTTP date); None when absent or unreadable."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now())


def is_retryable_status(status: int) -> bool:
    """Statuses worth another try: request timeout, conflict, rate limit, server errors."""
    return status in (408, 409, 429) or status >= 500


#: statuses that say "this request is malformed": the same request gets the same answer
REFUSAL_STATUSES = frozenset({400, 404, 413, 422})
#: what a 5xx body says when it is a request validation error dressed as a server error
#: (llama-cpp-python answers HTTP 500 to a request its pydantic model rejects)
_VALIDATION = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted|"
    r"literal_error|unprocessable|invalid (?:request|parameter|schema|value)|"
    r"response_format|json_schema|guided_json|not supported", re.IGNORECASE)


def is_refusal(status: int, message: str) -> bool:
    """Did the server reject the request as malformed (not worth a retry; a structured-output
    mode it may not take)? A 400/404/413/422, or a 5xx whose message is a validation error
    or names the response format. 429, other 5xx, timeouts and connection errors are not."""
    if status in REFUSAL_STATUSES:
        return True
    return status >= 500 and _VALIDATION.search(message) is not None


# pydantic's error list as str() prints it: {'type': ..., 'loc': ('body', 'x'), 'msg': "..."}
_PYDANTIC = re.compile(r"""'loc':\s*\(([^)]*)\),\s*'msg':\s*"""
                       r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""")
MAX_MESSAGE = 300


def server_message(body: object, fallback: str) -> str:
    """The server's reason on one line: the error body's `message` (OpenAI, vLLM, Anthropic,
    llama-cpp-python), a string `error` (LM Studio), FastAPI's `detail`; a pydantic error
    list as "field.path: message"; else the first line of `fallback`. At most MAX_MESSAGE
    characters, whitespace runs collapsed."""
    text = _message_of(body) or fallback
    match = _PYDANTIC.search(text)
    if match:
        loc = [p.strip().strip("'\"") for p in match.group(1).split(",")]
        where = ".".join(p for p in loc if p and p != "body")
        said = match.group(2) if match.group(2) is not None else match.group(3)
        text = f"{where}: {said}" if where else said
    else:
        text = next((line for line in text.splitlines() if line.strip()), text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "…"


def _message_of(body: object, depth: int = 0) -> str | None:
    if isinstance(body, str):
        return body.strip() or None
    if not isinstance(body, dict) or depth > 3:
        return None
    for name in ("message", "error", "detail"):
        value = body.get(name)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, dict):
            if "msg" in value and isinstance(value.get("msg"), str):  # FastAPI's 422 detail
                loc = value.get("loc")
                where = ".".join(str(p) for p in loc if p != "body") \
                    if isinstance(loc, list | tuple) else ""
                return f"{where}: {value['msg']}" if where else value["msg"]
            found = _message_of(value, depth + 1)
            if found:
                return found
        elif isinstance(value, str) and value.strip():
            return value.strip()
    return None
