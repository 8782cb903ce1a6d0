"""The real openai and anthropic SDKs against the local fake server, through judge's
providers and retry helper."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from judge.providers.anthropic_provider import AnthropicProvider
from judge.providers.base import JudgeRequest, ModelParams, Provider, ProviderFailure
from judge.providers.openai_provider import OpenAIProvider
from judge.providers.registry import make_provider
from judge.providers.retry import generate_with_retries, parse_retry_after
from judge.settings import Settings
from judge.testing import faults
from judge.testing.fakeserver import FakeProviderServer, fake_provider_server

SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["label", "violated_key", "evidence_event", "confidence", "rationale"],
    "properties": {"label": {"type": "string", "enum": ["pass", "fail"]},
                   "violated_key": {"type": ["string", "null"]},
                   "evidence_event": {"type": ["integer", "null"]},
                   "confidence": {"type": "number"}, "rationale": {"type": "string"}},
}
REQ = JudgeRequest(item_id="refund/run-1#4:scope_fidelity", system="You grade one action.",
                   messages=({"role": "user", "content": 'events: {"seq": 3} {"seq": 4}'},),
                   schema=SCHEMA, params=ModelParams(temperature=0.0, seed=7, max_tokens=300))


@pytest.fixture
def srv() -> Iterator[FakeProviderServer]:
    with fake_provider_server() as server:
        yield server


def _openai(srv: FakeProviderServer, timeout: float = 5.0) -> OpenAIProvider:
    return OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url=srv.openai_base_url,
                          timeout=timeout)


def _anthropic(srv: FakeProviderServer, timeout: float = 5.0) -> AnthropicProvider:
    return AnthropicProvider("claude-haiku-4-5", api_key="k", base_url=srv.anthropic_base_url,
                             timeout=timeout)


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


async def test_openai_success_sends_strict_structured_output(srv: FakeProviderServer) -> None:
    provider = _openai(srv)
    response = await provider.generate(REQ)
    verdict = json.loads(response.text)
    assert verdict["label"] == "pass" and verdict["evidence_event"] is None
    assert response.model == "openai:gpt-4.1-mini" and response.latency_s > 0
    assert response.usage["total_tokens"] == (response.usage["prompt_tokens"]
                                              + response.usage["completion_tokens"])
    (sent,) = srv.generations("openai")
    body = sent.body
    assert body["model"] == "gpt-4.1-mini" and body["seed"] == 7 and body["max_tokens"] == 300
    assert body["temperature"] == 0.0
    assert body["messages"][0] == {"role": "system", "content": "You grade one action."}
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "verdict", "strict": True, "schema": SCHEMA}}
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert srv.count("chat") == 1
    await provider.aclose()


async def test_anthropic_success_forces_the_verdict_tool(srv: FakeProviderServer) -> None:
    provider = _anthropic(srv)
    response = await provider.generate(REQ)
    assert json.loads(response.text)["label"] == "pass"
    assert response.usage == {"input_tokens": response.usage["input_tokens"],
                              "output_tokens": response.usage["output_tokens"]}
    assert response.raw["stop_reason"] == "tool_use"
    (sent,) = srv.generations("anthropic")
    assert sent.body["tools"][0]["input_schema"] == SCHEMA
    assert sent.body["tool_choice"]["type"] == "tool"
    assert sent.body["tool_choice"]["name"] == "verdict"
    assert sent.body["system"] == "You grade one action." and sent.body["max_tokens"] == 300
    assert "k" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert "anthropic-version" in sent.headers


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_429_retry_after_is_honored_then_recovers(srv: FakeProviderServer, make) -> None:
    srv.enqueue(faults.rate_limited(2.5))
    sleeps = Sleeps()
    response, attempts = await generate_with_retries(make(srv), REQ, retries=3, sleep=sleeps)
    assert attempts == 2 and json.loads(response.text)["label"] == "pass"
    assert len(sleeps.calls) == 1 and sleeps.calls[0] >= 2.5
    assert srv.generation_count == 2


async def test_retry_after_ms_and_http_date(srv: FakeProviderServer) -> None:
    srv.enqueue(faults.rate_limited(1500, in_ms=True))
    with pytest.raises(ProviderFailure) as info:
        await _openai(srv).generate(REQ)
    assert info.value.status == 429 and info.value.retryable
    assert info.value.retry_after == pytest.approx(1.5)
    when = datetime.now(UTC) + timedelta(seconds=30)
    assert parse_retry_after({"Retry-After": format_datetime(when, usegmt=True)}) == \
        pytest.approx(30, abs=1.5)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_real_wait_is_at_least_retry_after(srv: FakeProviderServer) -> None:
    srv.enqueue(faults.rate_limited(0.3))
    started = time.perf_counter()
    await generate_with_retries(_openai(srv), REQ, retries=2, base_delay=0.001)
    assert time.perf_counter() - started >= 0.3


@pytest.mark.parametrize("make", [_openai, _anthropic])
@pytest.mark.parametrize("status", [500, 503, 529])
async def test_5xx_then_success(srv: FakeProviderServer, make, status: int) -> None:
    srv.enqueue(faults.server_error(status))
    sleeps = Sleeps()
    response, attempts = await generate_with_retries(make(srv), REQ, retries=2, sleep=sleeps,
                                                     rng=random.Random(0))
    assert attempts == 2 and response.text


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_timeout_is_a_retryable_failure(srv: FakeProviderServer, make) -> None:
    srv.enqueue(faults.hang(5.0))
    started = time.perf_counter()
    with pytest.raises(ProviderFailure, match="timed out") as info:
        await make(srv, timeout=0.3).generate(REQ)
    assert info.value.retryable and time.perf_counter() - started < 3


async def test_dropped_connection_is_retryable(srv: FakeProviderServer) -> None:
    srv.enqueue(faults.disconnect())
    response, attempts = await generate_with_retries(_openai(srv), REQ, retries=1,
                                                     sleep=Sleeps())
    assert attempts == 2 and response.text


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_malformed_completion_is_returned_as_text(srv: FakeProviderServer, make) -> None:
    srv.enqueue(faults.malformed('{"label": "pass", "confid'))
    response = await make(srv).generate(REQ)
    assert response.text == '{"label": "pass", "confid'


async def test_chosen_invalid_verdicts_come_back_verbatim(srv: FakeProviderServer) -> None:
    srv.enqueue(faults.unknown_key_verdict("ghostKey"), faults.outside_slice_verdict(999))
    first = json.loads((await _openai(srv).generate(REQ)).text)
    second = json.loads((await _anthropic(srv).generate(REQ)).text)
    assert (first["label"], first["violated_key"]) == ("fail", "ghostKey")
    assert second["evidence_event"] == 999


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_exhausted_retries_raise(srv: FakeProviderServer, make) -> None:
    srv.enqueue(*[faults.server_error(503)] * 3)
    with pytest.raises(ProviderFailure) as info:
        await generate_with_retries(make(srv), REQ, retries=2, sleep=Sleeps())
    assert info.value.status == 503 and info.value.attempts == 3
    assert srv.generation_count == 3


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_bad_request_is_not_retried(srv: FakeProviderServer, make) -> None:
    bad = JudgeRequest(item_id="x", system="s", messages=({"role": "robot", "content": "x"},),
                       schema=SCHEMA)
    with pytest.raises(ProviderFailure) as info:
        await generate_with_retries(make(srv), bad, retries=3, sleep=Sleeps())
    assert info.value.status == 400 and not info.value.retryable and info.value.attempts == 1


async def test_non_strict_schema_rejected_like_openai(srv: FakeProviderServer) -> None:
    loose = dict(SCHEMA, required=["label"])
    request = JudgeRequest(item_id="x", system="s", messages=REQ.messages, schema=loose)
    with pytest.raises(ProviderFailure, match="required") as info:
        await _openai(srv).generate(request)
    assert info.value.status == 400


async def test_insufficient_quota_is_not_retryable(srv: FakeProviderServer) -> None:
    srv.set_responder(lambda r: faults.Reply(status=429, message="quota"))
    with pytest.raises(ProviderFailure) as info:
        await _openai(srv).generate(REQ)
    assert info.value.retryable  # an ordinary 429 is retryable ...
    import httpx2
    import openai

    from judge.providers.openai_provider import failure_from_error

    response = httpx2.Response(429, request=httpx2.Request("POST", "http://x"))
    exc = openai.RateLimitError("quota", response=response,
                                body={"code": "insufficient_quota", "message": "quota"})
    assert not failure_from_error(exc, "openai:m").retryable  # ... billing is not


async def test_openai_compatible_base_url_without_api_key(srv: FakeProviderServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
    provider: Provider = make_provider("openai:llama-3.1-8b", Settings.load())
    response = await provider.generate(REQ)
    assert json.loads(response.text)["label"] == "pass"
    assert srv.generations()[0].body["model"] == "llama-3.1-8b"
    assert srv.generations()[0].headers["authorization"] == "Bearer not-needed"


async def test_registry_base_url_flag_drives_anthropic(srv: FakeProviderServer) -> None:
    settings = Settings.load(base_url=srv.anthropic_base_url)
    provider = make_provider("anthropic:claude-x", settings)
    assert json.loads((await provider.generate(REQ)).text)["label"] == "pass"
    assert srv.count("messages") == 1


def test_token_limit_field_matches_the_server_kind() -> None:
    from judge.providers.openai_provider import chat_body

    assert OpenAIProvider("gpt-4.1-mini", api_key="k").token_field == "max_completion_tokens"
    assert OpenAIProvider("m", api_key="k", base_url="http://localhost:8000/v1").token_field \
        == "max_tokens"
    body = chat_body(REQ, "gpt-4.1-mini")
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body


@pytest.mark.slow
async def test_flaky_server_every_request_ends_answered_or_failed() -> None:
    import asyncio

    responder = faults.flaky(0.2, seed=5, timeout_hold=3.0)
    with FakeProviderServer(responder=responder) as server:
        provider = _openai(server, timeout=1.0)
        sem = asyncio.Semaphore(40)

        async def one(i: int) -> tuple[str, int]:
            async with sem:
                try:
                    response, attempts = await generate_with_retries(
                        provider, REQ, retries=3, base_delay=0.001, max_delay=0.01,
                        rng=random.Random(i))
                except ProviderFailure as failure:
                    return "failed", failure.attempts
                return ("answered" if response.text else "empty"), attempts

        outcomes = await asyncio.gather(*(one(i) for i in range(200)))
        await provider.aclose()
        kinds = {k for k, _ in outcomes}
        assert kinds <= {"answered", "failed"} and "answered" in kinds
        retried = sum(1 for _, attempts in outcomes if attempts > 1)
        assert retried > 10  # 429/5xx/timeouts were retried ...
        # every attempt is accounted for (a client-side timeout on a busy machine may fire
        # before the request is written, so the server can see slightly fewer)
        assert len(outcomes) < server.generation_count <= sum(a for _, a in outcomes)
