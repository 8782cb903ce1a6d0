"""The openai provider's lighter live path (issue 25): the body sent as orjson's bytes and the
reply read from its raw JSON. Both must mean exactly what the SDK's own path meant: the body
is the same JSON value the SDK would write, and the reply reads as the SDK's ChatCompletion
of the same JSON reads (`response_from_completion`, still the reader of batch results)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai._utils._json import openapi_dumps

from judge.providers.base import JudgeRequest, ProviderFailure
from judge.providers.openai_provider import (
    OpenAIProvider,
    body_bytes,
    completion_from_body,
    response_from_completion,
    response_from_json,
)
from judge.testing.fakeserver import FakeProviderServer

# every code point but the surrogates (which no JSON text can carry alone)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
JSONISH: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(system=TEXT, user=TEXT, model=TEXT, extra=st.dictionaries(TEXT, JSONISH, max_size=3),
       temperature=st.sampled_from([0.0, 0.2, 0.7, 1.0, 1.5, 2.0]),
       tokens=st.integers(1, 2**31), seed=st.none() | st.integers(-(2**63), 2**63 - 1))
def test_body_bytes_are_the_bytes_the_sdk_writes(system: str, user: str, model: str,
                                                 extra: dict[str, Any], temperature: float,
                                                 tokens: int, seed: int | None) -> None:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "system", "content": system},
                                                         {"role": "user", "content": user}],
                            "temperature": temperature, "max_tokens": tokens,
                            "response_format": {"type": "json_schema", "json_schema": {
                                "name": "verdict", "strict": True, "schema": extra}}}
    if seed is not None:
        body["seed"] = seed
    sent = body_bytes(body)
    assert sent == openapi_dumps(body)  # byte for byte, control characters and all
    assert json.loads(sent) == body


@settings(max_examples=200, deadline=None)
@given(temperature=st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_temperature_is_the_same_json_value(temperature: float) -> None:
    body = {"model": "m", "messages": [], "temperature": temperature}
    sent = body_bytes(body)
    assert sent is not None and json.loads(sent) == json.loads(openapi_dumps(body))


@pytest.mark.parametrize("body", [
    {"model": "m", "temperature": float("nan")},     # the SDK refuses it; orjson writes null
    {"model": "m", "temperature": float("inf")},
    {"model": "m", "seed": 2**64},                    # beyond orjson's integers
    {"model": "m", "messages": [{"content": "\ud800"}]},  # a lone surrogate
])
def test_what_orjson_cannot_write_faithfully_is_left_to_the_sdk(body: dict[str, Any]) -> None:
    assert body_bytes(body) is None


USAGE = st.fixed_dictionaries(
    {"prompt_tokens": st.integers(0, 10**6), "completion_tokens": st.integers(0, 10**6),
     "total_tokens": st.integers(0, 10**6)},
    optional={"prompt_tokens_details": st.fixed_dictionaries(
        {"cached_tokens": st.integers(0, 100)}),
              "completion_tokens_details": st.fixed_dictionaries(
        {"reasoning_tokens": st.integers(0, 100)})})
MESSAGE = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.none() | TEXT},
    optional={"refusal": st.none() | TEXT})
CHOICE = st.fixed_dictionaries(
    {"index": st.just(0), "message": MESSAGE,
     "finish_reason": st.sampled_from(["stop", "length", "content_filter", "tool_calls"])},
    optional={"logprobs": st.none()})
COMPLETION = st.fixed_dictionaries(
    {"id": TEXT, "object": st.just("chat.completion"), "created": st.integers(0, 2**31),
     "model": TEXT, "choices": st.lists(CHOICE, min_size=1, max_size=2)},
    optional={"usage": USAGE, "system_fingerprint": st.none() | TEXT,
              "service_tier": st.sampled_from(["default", "auto"])})


@settings(max_examples=300, deadline=None)
@given(completion=COMPLETION, latency=st.floats(0, 100))
def test_the_raw_reader_reads_what_the_sdks_model_reads(completion: dict[str, Any],
                                                        latency: float) -> None:
    model = completion_from_body(completion, "openai:m")
    assert response_from_json(orjson.dumps(completion), "openai:m", latency) == \
        response_from_completion(model, "openai:m", latency)


@pytest.mark.parametrize(("payload", "why"), [
    (b"<html>502</html>", "not JSON"),
    (b"[]", "no choices"),
    (b'{"choices": []}', "no choices"),
    (b'{"choices": "nope"}', "no choices"),
    (b'{"choices": [7]}', "no message"),
    (b'{"choices": [{"message": {"content": 12}}]}', "not text"),
    (b'{"choices": [{"message": {"content": null, "refusal": {"x": 1}}}]}', "not text"),
])
def test_a_reply_that_is_not_a_completion_is_a_retryable_failure(payload: bytes,
                                                                 why: str) -> None:
    with pytest.raises(ProviderFailure, match=why) as err:
        response_from_json(payload, "openai:m")
    assert err.value.retryable


def test_the_live_call_sends_json_bytes_and_reads_the_reply_raw() -> None:
    """Through the SDK's post against the fake server: the body arrives as the JSON the
    SDK would have sent, with its content type and auth, and the reply reads as before."""
    request = JudgeRequest(item_id="t#1:r", system="Judge one \u2028 action.",
                           messages=({"role": "user", "content": "seq 1 · ünïcode \x1f"},),
                           schema={"type": "object", "properties": {
                               "label": {"type": "string", "enum": ["pass", "fail"]}},
                               "required": ["label"], "additionalProperties": False})

    async def go(srv: FakeProviderServer) -> Any:
        provider = OpenAIProvider("m", api_key="k", base_url=srv.openai_base_url)
        try:
            return await provider.generate(request)
        finally:
            await provider.aclose()

    with FakeProviderServer() as srv:
        response = asyncio.run(go(srv))
        (sent,) = srv.generations()
    from judge.providers.openai_provider import chat_body

    expected = chat_body(request, "m", token_field="max_tokens")
    assert sent.raw == openapi_dumps(expected)
    assert sent.headers.get("content-type", sent.headers.get("Content-Type")) == \
        "application/json"
    assert json.loads(response.text)["label"] == "pass"
    assert response.raw["response_format"] == "json_schema" and response.usage
