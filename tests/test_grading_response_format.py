"""The engine with a server that refuses JSON Schema (the fake, imitating llama-cpp-python):
the mode found is in the cache key, the stored call and the verdict, so a rerun makes zero
calls; a refusal is not retried and the unscored reason quotes the server; 429, other 5xx,
timeouts and dropped connections are still retried."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.formats import Verdict
from judge.grading.cache import JsonlCache, MemoryCache
from judge.grading.engine import GradingStats, grade_items_sync
from judge.grading.keys import KeyMaker, key_format
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.prompts import Prompt, load_prompt, render
from judge.providers.base import CallCache, ModelParams
from judge.providers.registry import make_provider
from judge.settings import Settings
from judge.testing import dialects, faults
from judge.testing.fakeserver import FakeProviderServer
from judge.trace import load_traces

SCENARIO = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "refund-once"


@pytest.fixture(scope="module")
def items() -> list[Item]:
    loaded = load_scenario(SCENARIO)
    return [i for name in ("pass.json", "fail-second-refund.json", "fail-no-confirmation.json")
            for i in extract_items(loaded, load_traces([SCENARIO / name])[0])
            if i.rubric == "scope_fidelity"]


@pytest.fixture
def prompt() -> Prompt:
    return load_prompt("scope_fidelity")


@pytest.fixture
def llama() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(dialect=dialects.LLAMA_CPP_PYTHON) as srv:
        yield srv


def grade(srv: FakeProviderServer, prompt: Prompt, items: list[Item], cache: CallCache,
          stats: GradingStats | None = None, retries: int = 2, timeout: float = 5.0,
          **env: str) -> list[Verdict]:
    settings = Settings.load(environ=env, base_url=srv.openai_base_url, timeout=timeout)
    provider = make_provider("openai:gemma-270m", settings)
    return grade_items_sync(items, prompt, provider, cache, params=ModelParams(),
                            concurrency=4, rpm=None, retries=retries, retry_base_delay=0.0,
                            stats=stats if stats is not None else GradingStats())


def test_the_mode_found_is_in_the_key_the_call_and_the_verdict(
        llama: FakeProviderServer, prompt: Prompt, items: list[Item], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cache = JsonlCache(tmp_path / "calls.jsonl")
    stats = GradingStats()
    first = grade(llama, prompt, items, cache, stats)
    n = len({i.item_id for i in items})
    assert stats.provider_calls == llama.count("chat") == n + 1  # one refusal, for them all
    assert [r.response_format for r in llama.generations()].count("json_schema") == 1
    assert all(v.label == "pass" and v.metadata["response_format"] == "json_object"
               for v in first)
    assert capsys.readouterr().err.count("refused JSON Schema") == 1  # said once
    records = [cache.get(k) for k in cache._index.keys() | cache._parsed.keys()]
    assert records and all(r is not None and r.request["response_format"] == "json_object"
                           and r.request["enums"]["violated_key"] for r in records)
    # a rerun (a new process: the mode is remembered) finds every call: zero requests
    again = GradingStats()
    second = grade(llama, prompt, items, JsonlCache(tmp_path / "calls.jsonl"), again)
    assert again.provider_calls == 0 and again.cache_hits == len(items)
    assert [v.label for v in second] == [v.label for v in first]
    assert llama.count("chat") == n + 1
    assert capsys.readouterr().err == ""
    # the mode is part of the key: asked in another mode, the same items are other calls
    other = GradingStats()
    grade(llama, prompt, items, JsonlCache(tmp_path / "calls.jsonl"), other,
          JUDGE_RESPONSE_FORMAT="prompt")
    assert other.provider_calls == n and other.cache_hits == 0


def test_keys_of_a_providers_own_mode_are_unchanged(prompt: Prompt, items: list[Item],
                                                     llama: FakeProviderServer) -> None:
    request = render(prompt, items[0], ModelParams())
    settings = Settings.load(environ={}, base_url=llama.openai_base_url)
    openai = make_provider("openai:m", settings)
    assert openai.response_format == "json_schema" and key_format(openai) is None
    anthropic = make_provider("anthropic:m", Settings.load(
        environ={"ANTHROPIC_API_KEY": "k"}, base_url=llama.anthropic_base_url))
    assert anthropic.response_format == "tool" and key_format(anthropic) is None
    heuristic = make_provider("heuristic", settings)
    assert heuristic.response_format == "" and key_format(heuristic) is None
    args = (prompt.hash, "openai:m", ModelParams(), request.schema)
    plain = KeyMaker(*args, endpoint="http://h/v1").key(request)
    assert KeyMaker(*args, endpoint="http://h/v1", response_format=None).key(request) == plain
    assert KeyMaker(*args, endpoint="http://h/v1",
                    response_format="json_object").key(request) != plain


def test_the_keys_cover_the_items_enums(prompt: Prompt, items: list[Item]) -> None:
    request = render(prompt, items[0], ModelParams())
    maker = KeyMaker(prompt.hash, "m", ModelParams(), request.schema, endpoint="")
    assert request.view is not None and request.view.ledger_keys
    from dataclasses import replace

    from judge.request import ItemView

    view = request.view
    fewer = ItemView(rubric=view.rubric, kind=view.kind, seq=view.seq, turn=view.turn,
                     ledger_keys=frozenset(sorted(view.ledger_keys)[:1]),
                     slice_seqs=view.slice_seqs, parts=lambda name: None)
    assert maker.key(replace(request, view=fewer)) != maker.key(request)
    assert maker.key(replace(request, view=None)) != maker.key(request)


def test_a_refusal_is_not_retried_and_its_reason_quotes_the_server(
        prompt: Prompt, items: list[Item]) -> None:
    with FakeProviderServer(dialect=dialects.LLAMA_CPP_PYTHON) as srv:
        stats = GradingStats()
        out = grade(srv, prompt, items[:1], MemoryCache(), stats, retries=4,
                    JUDGE_RESPONSE_FORMAT="json_schema")
        (v,) = out
        assert v.label == "unscored" and srv.count("chat") == 1 and stats.failures == 1
        assert v.reason == ("provider refused the request (not retried): openai:gemma-270m: "
                            "HTTP 500: response_format.type: Input should be 'text' or "
                            "'json_object' (structured output is fixed to json_schema by "
                            "JUDGE_RESPONSE_FORMAT / judge.toml response_format; 'auto' finds "
                            "a mode this server takes)")
    bad = faults.bad_request("messages[1].content must be a string or an array")
    with FakeProviderServer(responder=lambda r: bad) as srv:
        (v,) = grade(srv, prompt, items[:1], MemoryCache(), retries=4,
                     JUDGE_RESPONSE_FORMAT="json_schema")
        assert srv.count("chat") == 1
        assert v.reason is not None and v.reason.startswith(
            "provider refused the request (not retried): openai:gemma-270m: HTTP 400: "
            "messages[1].content must be a string or an array")


@pytest.mark.parametrize(("fault", "calls"), [
    (faults.rate_limited(0), 3), (faults.server_error(500), 3), (faults.server_error(503), 3),
    (faults.hang(5.0), 3), (faults.disconnect(), 3)])
def test_load_and_outages_are_still_retried(fault: faults.Reply, calls: int, prompt: Prompt,
                                            items: list[Item]) -> None:
    with FakeProviderServer(responder=lambda r: fault) as srv:
        (v,) = grade(srv, prompt, items[:1], MemoryCache(), retries=2, timeout=0.5)
        assert v.label == "unscored" and v.reason is not None
        assert v.reason.startswith("provider failed after 3 attempts")
        assert srv.count("chat") == calls


def test_a_validation_error_dressed_as_a_500_is_not_retried() -> None:
    from judge.providers.retry import is_refusal

    assert is_refusal(500, "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                           "'response_format', 'type'), 'msg': \"Input should be 'text'\"}")
    assert is_refusal(422, "anything") and is_refusal(400, "") and is_refusal(404, "no model")
    for status, message in ((500, "The server had an error processing your request."),
                            (503, "overloaded"), (429, "rate limit"), (502, "Bad gateway"),
                            (401, "Invalid API key")):
        assert not is_refusal(status, message), (status, message)


def _meta(v: Verdict) -> dict[str, Any]:
    return dict(v.metadata)


def test_verdicts_of_local_providers_carry_no_mode(prompt: Prompt, items: list[Item]) -> None:
    provider = make_provider("heuristic", Settings.load(environ={}))
    out = grade_items_sync(items[:1], prompt, provider, MemoryCache(), params=ModelParams(),
                           concurrency=1, rpm=None, retries=0)
    assert "response_format" not in _meta(out[0])
