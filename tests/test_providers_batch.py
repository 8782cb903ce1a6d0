"""Batch APIs through the real SDKs against the fake server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from judge.errors import ConfigError
from judge.providers.anthropic_batch import AnthropicBatchClient
from judge.providers.anthropic_provider import AnthropicProvider
from judge.providers.base import JudgeRequest, ProviderFailure, ProviderResponse
from judge.providers.batch import BatchNotFinished, batch_client, safe_custom_id
from judge.providers.openai_batch import OpenAIBatchClient
from judge.providers.openai_provider import OpenAIProvider
from judge.providers.scripted import ScriptedProvider
from judge.testing import faults
from judge.testing.fakeserver import FakeProviderServer

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["label"],
          "properties": {"label": {"type": "string"}}}
ITEM_IDS = [f"tau/airline-{i}/trial-0#{i + 3}:scope_fidelity" for i in range(6)]
REQUESTS = [JudgeRequest(item_id=i, system="grade", schema=SCHEMA,
                         messages=({"role": "user", "content": f'{{"seq": {n + 3}}}'},))
            for n, i in enumerate(ITEM_IDS)]


async def no_sleep(_: float) -> None:
    return None


@pytest.fixture
def srv() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(batch_polls=2) as server:
        yield server


def _openai(srv: FakeProviderServer) -> OpenAIBatchClient:
    provider = OpenAIProvider("gpt-4.1-mini", api_key="x", base_url=srv.openai_base_url)
    client = batch_client(provider)
    assert isinstance(client, OpenAIBatchClient)
    return client


def _anthropic(srv: FakeProviderServer) -> AnthropicBatchClient:
    provider = AnthropicProvider("claude-x", api_key="x", base_url=srv.anthropic_base_url)
    client = batch_client(provider)
    assert isinstance(client, AnthropicBatchClient)
    return client


def test_safe_custom_ids_are_valid_unique_and_stable() -> None:
    ids = [*ITEM_IDS, "a" * 200, "a" * 201, "plain_id-1", "x/y", "x_y"]
    safe = [safe_custom_id(i) for i in ids]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", s) for s in safe)
    assert len(set(safe)) == len(ids)
    assert safe_custom_id("plain_id-1") == "plain_id-1"
    assert safe == [safe_custom_id(i) for i in ids]
    assert safe[0].startswith("tau_airline-0_trial-0_3_scope_fidelity-")


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_submit_poll_collect_maps_results_to_item_ids(srv: FakeProviderServer,
                                                            make) -> None:
    srv.enqueue(None, faults.server_error(500), None, faults.bad_request("nope"),
                faults.malformed("{oops"), faults.hang())
    client = make(srv)
    batch_id = await client.submit(REQUESTS)
    assert srv.count("batch_lines") == 6
    first = await client.poll(batch_id)
    assert not first.done
    with pytest.raises(BatchNotFinished):
        await client.collect(batch_id)
    seen = []
    status = await client.wait(batch_id, base_delay=0.01, sleep=no_sleep, on_poll=seen.append)
    assert status.done and status.succeeded == 3 and status.failed == 3 and status.total == 6
    results = await client.collect(batch_id)
    assert set(results) == set(ITEM_IDS)
    ok = results[ITEM_IDS[0]]
    assert isinstance(ok, ProviderResponse) and json.loads(ok.text)["label"]
    assert isinstance(results[ITEM_IDS[2]], ProviderResponse)
    assert results[ITEM_IDS[4]].text == "{oops"  # type: ignore[union-attr]
    server_err, bad, expired = (results[ITEM_IDS[i]] for i in (1, 3, 5))
    assert isinstance(server_err, ProviderFailure) and server_err.retryable
    assert isinstance(bad, ProviderFailure) and not bad.retryable
    assert isinstance(expired, ProviderFailure) and expired.retryable


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_resume_from_stored_batch_id(srv: FakeProviderServer, make) -> None:
    batch_id = await make(srv).submit(REQUESTS[:3])
    fresh = make(srv)  # a new process: only the batch id and the item ids survived
    await fresh.wait(batch_id, sleep=no_sleep)
    extra = "never/submitted#1:scope_fidelity"
    results = await fresh.collect(batch_id, item_ids=[*ITEM_IDS[:3], extra])
    assert all(isinstance(results[i], ProviderResponse) for i in ITEM_IDS[:3])
    missing = results[extra]
    assert isinstance(missing, ProviderFailure) and missing.retryable


async def test_openai_batch_file_is_chat_completion_bodies(srv: FakeProviderServer) -> None:
    client = _openai(srv)
    await client.submit(REQUESTS[:2], metadata={"run": "r1"})
    upload = next(iter(srv.api.file_data.values())).decode().splitlines()
    line = json.loads(upload[0])
    assert line["custom_id"] == ITEM_IDS[0] and line["url"] == "/v1/chat/completions"
    assert line["body"]["response_format"]["json_schema"]["strict"] is True
    assert next(iter(srv.api.batches.values()))["metadata"] == {"run": "r1"}


async def test_anthropic_batch_uses_safe_ids_and_message_params(srv: FakeProviderServer) -> None:
    client = _anthropic(srv)
    batch_id = await client.submit(REQUESTS[:2])
    lines = [r for r in srv.requests if r.batch_id == batch_id]
    assert [r.body["tool_choice"]["name"] for r in lines] == ["verdict", "verdict"]
    assert client.custom_ids[batch_id] == {safe_custom_id(i): i for i in ITEM_IDS[:2]}


async def test_bad_batches_rejected(srv: FakeProviderServer) -> None:
    with pytest.raises(ValueError, match="unique"):
        await _openai(srv).submit([REQUESTS[0], REQUESTS[0]])
    with pytest.raises(ValueError, match="at least one"):
        await _anthropic(srv).submit([])
    with pytest.raises(ProviderFailure) as info:
        await _openai(srv).poll("batch_missing")
    assert info.value.status == 404 and not info.value.retryable
    with pytest.raises(ConfigError, match="no batch API"):
        batch_client(ScriptedProvider())


async def test_batch_client_is_whatever_the_provider_owns() -> None:
    """`batch_client` asks the provider: no list of provider types anywhere."""
    from judge.providers.batch import BatchClient, BatchStatus
    from judge.providers.heuristic import HeuristicProvider

    class OwnBatches(BatchClient):
        spec = "own"

        async def submit(self, requests: object, *, metadata: object = None) -> str:
            return "b1"

        async def poll(self, batch_id: str) -> BatchStatus:
            return BatchStatus(batch_id, "ended", done=True)

        async def _results(self, batch_id: str) -> dict:
            return {}

        def custom_id(self, item_id: str) -> str:
            return item_id

    own = OwnBatches()

    class WithBatches(ScriptedProvider):
        def batch_client(self) -> BatchClient:
            return own

    assert batch_client(WithBatches()) is own
    for provider in (HeuristicProvider(), ScriptedProvider()):
        with pytest.raises(ConfigError) as err:
            batch_client(provider)
        assert str(err.value) == (f"model '{provider.spec}' has no batch API (use "
                                  "openai:<model> or anthropic:<model>)")


def test_openai_batch_lines_are_read_by_the_live_reader() -> None:
    """One reader for OpenAI completions: a batch line's body is read into the SDK's own
    ChatCompletion, exactly as a live response is."""
    from judge.providers.openai_provider import completion_from_body, response_from_completion

    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-x",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": '{"label": "pass"}',
                                     "refusal": None}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                      "prompt_tokens_details": {"cached_tokens": 2}}}
    resp = response_from_completion(completion_from_body(body, "openai:gpt-x"), "openai:gpt-x")
    assert resp.text == '{"label": "pass"}' and resp.model == "openai:gpt-x"
    assert resp.usage == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    assert resp.raw == {"id": "chatcmpl-1", "model": "gpt-x", "finish_reason": "stop"}
    refused = {**body, "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "refusal": "I can't"}}]}
    resp = response_from_completion(completion_from_body(refused, "s"), "s")
    assert resp.text == "I can't" and resp.raw["refusal"] is True
    with pytest.raises(ProviderFailure, match="completion has no choices") as empty:
        response_from_completion(completion_from_body({**body, "choices": []}, "s"), "s")
    assert empty.value.retryable
    with pytest.raises(ProviderFailure, match=r"malformed completion .*field 'choices'") as bad:
        completion_from_body({**body, "choices": "nope"}, "s")
    assert not bad.value.retryable
