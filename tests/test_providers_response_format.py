"""The structured-output ladder, through the real openai SDK against the fake server
imitating each kind of OpenAI-compatible server (judge.testing.dialects): the mode is found
from the first refusal, once per endpoint and model, remembered (a mode that answered at once
too, quietly), said once, and fixed by the setting; a remembered mode goes out at once, and
found again when the server now refuses it; a refusal no mode cures fails fast."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.providers.base import JudgeRequest, ModelParams, ProviderFailure
from judge.providers.openai_provider import OpenAIProvider
from judge.providers.response_format import (
    FormatMemory,
    memory_path,
)
from judge.providers.retry import generate_with_retries
from judge.testing import dialects, faults
from judge.testing.fakeserver import FakeProviderServer
from judge.verdicts.schema import verdict_schema

REQ = JudgeRequest(item_id="refund/run-1#4:scope_fidelity", system="You grade one action.",
                   messages=({"role": "user", "content": 'events: {"seq": 3} {"seq": 4}'},),
                   schema=verdict_schema(), params=ModelParams(seed=7, max_tokens=300))


@pytest.fixture
def notices() -> list[str]:
    return []


@pytest.fixture
def memory(tmp_path: Path) -> FormatMemory:
    return FormatMemory(tmp_path / "formats.json")


def serve(dialect: str, **kwargs: object) -> FakeProviderServer:
    return FakeProviderServer(dialect=dialect, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def llama() -> Iterator[FakeProviderServer]:
    with serve(dialects.LLAMA_CPP_PYTHON) as srv:
        yield srv


def judge_at(srv: FakeProviderServer, memory: FormatMemory, notices: list[str], *,
             model: str = "gemma-270m", response_format: str = "auto") -> OpenAIProvider:
    return OpenAIProvider(model, api_key="not-needed", base_url=srv.openai_base_url,
                          timeout=5.0, response_format=response_format, memory=memory,
                          on_notice=notices.append)


def modes(srv: FakeProviderServer) -> list[str | None]:
    return [r.response_format for r in srv.generations("openai")]


async def test_llama_cpp_python_refusal_finds_json_mode_once_and_remembers_it(
        llama: FakeProviderServer, memory: FormatMemory, notices: list[str]) -> None:
    judge = judge_at(llama, memory, notices)
    first = await judge.generate(REQ)
    assert first.calls == 2 and first.raw["response_format"] == "json_object"
    assert judge.response_format == "json_object" and judge.ladder.settled
    assert modes(llama) == ["json_schema", "json_object"]
    assert json.loads(first.text)["label"] == "pass"
    # said once, with the server's one-line message
    (notice,) = notices
    assert "refused JSON Schema" in notice and "JSON mode with the schema" in notice
    assert "response_format.type: Input should be 'text' or 'json_object'" in notice
    assert str(memory.path) in notice and "JUDGE_RESPONSE_FORMAT" in notice
    # the schema went along, as llama-cpp-python takes it
    sent = llama.generations("openai")[1].body["response_format"]
    assert sent["type"] == "json_object" and "anyOf" in sent["schema"]
    # the next calls go straight out in it, and nothing more is said
    again = await judge.generate(REQ)
    assert again.calls == 1 and modes(llama)[2:] == ["json_object"] and len(notices) == 1
    await judge.aclose()
    # remembered for this endpoint and model: a new provider (a later run) starts there
    assert memory.get(judge.endpoint, "gemma-270m") == "json_object"
    later = judge_at(llama, memory, notices)
    assert later.response_format == "json_object" and later.ladder.settled
    assert (await later.generate(REQ)).calls == 1
    assert modes(llama)[3:] == ["json_object"] and len(notices) == 1
    await later.aclose()
    # keyed by base URL and model: another model on the same server is found afresh
    other = judge_at(llama, memory, notices, model="qwen-0.5b")
    assert other.response_format == "json_schema" and not other.ladder.settled
    await other.aclose()


async def test_concurrent_calls_wait_for_one_discovery(llama: FakeProviderServer,
                                                       memory: FormatMemory,
                                                       notices: list[str]) -> None:
    judge = judge_at(llama, memory, notices)
    answers = await asyncio.gather(*(judge.generate(REQ) for _ in range(8)))
    assert sorted(a.calls for a in answers) == [1] * 7 + [2]
    assert modes(llama).count("json_schema") == 1 and modes(llama).count("json_object") == 8
    assert len(notices) == 1
    await judge.aclose()


async def test_lm_studio_and_openai_take_json_schema_at_once(memory: FormatMemory,
                                                             notices: list[str]) -> None:
    for dialect in (dialects.LM_STUDIO, dialects.OPENAI):
        with serve(dialect) as srv:
            judge = judge_at(srv, memory, notices)
            assert not judge.ladder.settled  # a server never met: found by its first reply
            response = await judge.generate(REQ)
            assert response.calls == 1 and modes(srv) == ["json_schema"]
            assert judge.response_format == "json_schema" and judge.ladder.settled
            # remembered, quietly, so that the next run sends in it at once
            assert memory.get(judge.endpoint, "gemma-270m") == "json_schema"
            assert judge_at(srv, memory, notices).ladder.settled
            await judge.aclose()
    assert notices == []


@pytest.mark.parametrize("base_url", [None, "https://api.openai.com/v1"])
def test_openai_itself_starts_settled_on_json_schema(base_url: str | None,
                                                     memory: FormatMemory) -> None:
    judge = OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=base_url,
                           memory=memory, on_notice=[].append)
    assert judge.ladder.settled and not judge.ladder.confirmed
    assert judge.response_format == "json_schema"
    # a mode kept for it comes first (found there by a refusal before)
    memory.put(judge.endpoint, "gpt-4o-mini", "json_object", "json_schema refused: x")
    again = OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=base_url,
                           memory=memory, on_notice=[].append)
    assert again.ladder.settled and again.response_format == "json_object"


async def test_a_remembered_mode_goes_out_concurrently(memory: FormatMemory,
                                                       notices: list[str]) -> None:
    """A later run (a new provider) in a remembered mode: N requests are all sent before
    the first answer comes back (no wave of its own for the first request)."""
    with serve(dialects.LLAMA_CPP_PYTHON, latency=0.3) as srv:
        memory.put(srv.openai_base_url, "gemma-270m", "json_object", "json_schema refused")
        judge = judge_at(srv, memory, notices)
        assert judge.ladder.settled and judge.response_format == "json_object"
        sent_at_first_answer: list[int] = []

        async def one() -> int:
            response = await judge.generate(REQ)
            if not sent_at_first_answer:
                sent_at_first_answer.append(srv.count("chat"))
            return response.calls

        calls = await asyncio.gather(*(one() for _ in range(8)))
        assert sent_at_first_answer == [8] and calls == [1] * 8
        assert modes(srv) == ["json_object"] * 8 and notices == []
        assert judge.ladder.confirmed
        await judge.aclose()


async def test_a_remembered_mode_the_server_now_refuses_is_found_again(
        llama: FakeProviderServer, memory: FormatMemory, notices: list[str]) -> None:
    """The server changed since (json_schema was kept; it is llama-cpp-python now): the
    requests sent at once in it are refused, one walk from the rung below finds json_object,
    and every item is answered in at most 2 calls."""
    memory.put(llama.openai_base_url, "gemma-270m", "json_schema", "answered")
    judge = judge_at(llama, memory, notices)
    assert judge.ladder.settled
    answers = await asyncio.gather(*(judge.generate(REQ) for _ in range(6)))
    assert [a.calls for a in answers] == [2] * 6
    assert {a.raw["response_format"] for a in answers} == {"json_object"}
    assert modes(llama).count("json_schema") == 6 and modes(llama).count("json_object") == 6
    assert judge.response_format == "json_object" and judge.ladder.confirmed
    (notice,) = notices
    assert "refused JSON Schema" in notice and "JSON mode with the schema" in notice
    assert memory.get(judge.endpoint, "gemma-270m") == "json_object"
    # from now on: one call each
    assert (await judge.generate(REQ)).calls == 1 and modes(llama)[-1] == "json_object"
    await judge.aclose()


async def test_a_confirmed_mode_refusing_a_request_fails_it_without_a_walk(
        memory: FormatMemory, notices: list[str]) -> None:
    """Once its mode has answered, a refusal is the request's own: one call, no walk."""
    too_long = faults.Reply(status=400, message="maximum context length is 2048 tokens")
    with serve(dialects.OPENAI, responder=lambda r: too_long if "LONG" in r.text else None
               ) as srv:
        memory.put(srv.openai_base_url, "gemma-270m", "json_schema", "answered")
        judge = judge_at(srv, memory, notices)
        assert (await judge.generate(REQ)).calls == 1 and judge.ladder.confirmed
        long = JudgeRequest(item_id="y", system="LONG", messages=REQ.messages,
                            schema=verdict_schema())
        with pytest.raises(ProviderFailure, match="maximum context length"):
            await judge.generate(long)
        assert modes(srv) == ["json_schema", "json_schema"]
        assert judge.response_format == "json_schema" and notices == []
        await judge.aclose()


async def test_a_server_without_response_format_gets_the_schema_in_the_prompt(
        memory: FormatMemory, notices: list[str]) -> None:
    with serve(dialects.NO_RESPONSE_FORMAT) as srv:
        judge = judge_at(srv, memory, notices)
        response = await judge.generate(REQ)
        assert response.calls == 3 and modes(srv) == ["json_schema", "json_object", None]
        assert judge.response_format == "prompt"
        body = srv.generations("openai")[2].body
        assert "response_format" not in body and "guided_json" not in body
        system = body["messages"][0]["content"]
        assert system.startswith("You grade one action.")
        assert "follows this JSON Schema:" in system and '"violated_key"' in system
        assert body["messages"][1:] == list(REQ.messages)
        (notice,) = notices
        assert "plain JSON asked for in the prompt" in notice
        assert "response_format is not supported" in notice
        await judge.aclose()
    assert memory.get(judge.endpoint, "gemma-270m") == "prompt"


@pytest.mark.parametrize(("setting", "field"), [("json_object", "response_format"),
                                                ("guided_json", "guided_json"),
                                                ("prompt", None)])
async def test_the_setting_fixes_the_mode(setting: str, field: str | None,
                                          memory: FormatMemory, notices: list[str]) -> None:
    with serve(dialects.OPENAI) as srv:
        judge = judge_at(srv, memory, notices, response_format=setting)
        assert judge.ladder.settled and judge.response_format == setting
        await judge.generate(REQ)
        (sent,) = srv.generations("openai")
        assert sent.response_format == (setting if setting != "prompt" else None)
        if field is not None:
            assert field in sent.body
        await judge.aclose()
    assert notices == [] and not memory.path.exists()  # type: ignore[union-attr]


async def test_a_fixed_mode_the_server_refuses_fails_fast_with_a_hint(
        llama: FakeProviderServer, memory: FormatMemory, notices: list[str]) -> None:
    judge = judge_at(llama, memory, notices, response_format="json_schema")
    with pytest.raises(ProviderFailure) as info:
        await generate_with_retries(judge, REQ, retries=4, base_delay=0)
    failure = info.value
    assert failure.refused and not failure.retryable and failure.attempts == 1
    assert llama.count("chat") == 1  # not five calls
    assert "HTTP 500: response_format.type: Input should be 'text' or 'json_object'" \
        in str(failure)
    assert "fixed to json_schema" in str(failure) and "'auto'" in str(failure)
    assert notices == []
    await judge.aclose()


async def test_a_fixed_mode_fails_fast_even_when_another_is_remembered(
        llama: FakeProviderServer, memory: FormatMemory, notices: list[str]) -> None:
    """The setting wins over the memory, and its refusals never re-open the walk, even sent
    concurrently."""
    memory.put(llama.openai_base_url, "gemma-270m", "json_object", "json_schema refused")
    judge = judge_at(llama, memory, notices, response_format="json_schema")
    assert judge.response_format == "json_schema" and judge.ladder.forced
    failures = await asyncio.gather(*(judge.generate(REQ) for _ in range(4)),
                                    return_exceptions=True)
    assert all(isinstance(f, ProviderFailure) and f.refused and "fixed to json_schema"
               in str(f) for f in failures)
    assert modes(llama) == ["json_schema"] * 4 and notices == []
    assert memory.get(judge.endpoint, "gemma-270m") == "json_object"  # left as it was
    await judge.aclose()


async def test_a_refusal_no_mode_cures_is_the_requests_own(memory: FormatMemory,
                                                           notices: list[str]) -> None:
    missing = faults.Reply(status=404, message="The model `gemma-7b` does not exist")
    with serve(dialects.OPENAI, responder=lambda r: missing) as srv:
        judge = judge_at(srv, memory, notices)
        with pytest.raises(ProviderFailure) as info:
            await generate_with_retries(judge, REQ, retries=4, base_delay=0)
        assert info.value.refused and info.value.calls == 3
        assert "HTTP 404: The model `gemma-7b` does not exist" in str(info.value)
        # the format was never the problem: the mode stays, settled, and nothing is kept
        assert judge.response_format == "json_schema" and judge.ladder.settled
        assert notices == [] and memory.get(judge.endpoint, "gemma-270m") is None
        with pytest.raises(ProviderFailure):
            await judge.generate(REQ)
        assert srv.count("chat") == 4  # the next item: one call, failing fast
        await judge.aclose()


async def test_a_request_refused_after_its_mode_was_refused_settles_that_mode(
        memory: FormatMemory, notices: list[str]) -> None:
    too_long = faults.Reply(status=400, message="This model's maximum context length is "
                                                "2048 tokens")
    with serve(dialects.LLAMA_CPP_PYTHON, responder=lambda r: too_long) as srv:
        judge = judge_at(srv, memory, notices)
        with pytest.raises(ProviderFailure, match="maximum context length"):
            await judge.generate(REQ)
        assert modes(srv) == ["json_schema", "json_object", None]
        assert judge.response_format == "json_object" and judge.ladder.settled
        assert len(notices) == 1 and memory.get(judge.endpoint, "gemma-270m") == "json_object"
        await judge.aclose()


async def test_load_during_discovery_is_retried_from_the_rung_reached(
        llama: FakeProviderServer, memory: FormatMemory, notices: list[str]) -> None:
    llama.enqueue(faults.server_error(503))  # for json_object: json_schema is refused first
    judge = judge_at(llama, memory, notices)
    response, attempts = await generate_with_retries(judge, REQ, retries=2, base_delay=0)
    assert attempts == 2 and response.raw["response_format"] == "json_object"
    assert modes(llama) == ["json_schema", "json_object", "json_object"]
    # found across the two attempts: said and remembered all the same
    assert len(notices) == 1 and "refused JSON Schema" in notices[0]
    assert memory.get(judge.endpoint, "gemma-270m") == "json_object"
    await judge.aclose()


async def test_an_invalid_schema_is_not_a_mode_to_leave(memory: FormatMemory,
                                                        notices: list[str]) -> None:
    loose = dict(verdict_schema(), required=["label"])
    request = JudgeRequest(item_id="x", system="s", messages=REQ.messages, schema=loose)
    with serve(dialects.OPENAI) as srv:
        judge = judge_at(srv, memory, notices)
        with pytest.raises(ProviderFailure, match="Invalid schema"):
            await judge.generate(request)
        assert modes(srv) == ["json_schema"] and judge.response_format == "json_schema"
        await judge.aclose()


def test_the_memory_survives_bad_files_and_says_when_it_cannot_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "formats.json"
    memory = FormatMemory(path)
    for junk in ("{not json", "[]", '{"version": 99, "endpoints": {}}',
                 '{"version": 1, "endpoints": {"http://h/v1 m": {"response_format": "xml"}}}'):
        path.write_text(junk)
        assert memory.get("http://h/v1", "m") is None
    assert memory.put("http://H:80/v1/", "m", "prompt", "why")  # overwrites the junk
    assert memory.get("http://h/v1", "m") == "prompt"  # the same endpoint, normalized
    assert memory.get("http://h/v1", "other") is None
    blocked = FormatMemory(tmp_path / "file" / "formats.json")
    (tmp_path / "file").write_text("a file where the directory should be")
    assert not blocked.put("http://h/v1", "m", "prompt", "why")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert memory_path() == tmp_path / "xdg" / "judge" / "response-formats.json"


async def test_unwritable_memory_is_said_in_the_notice(llama: FakeProviderServer,
                                                       tmp_path: Path,
                                                       notices: list[str]) -> None:
    (tmp_path / "file").write_text("x")
    judge = judge_at(llama, FormatMemory(tmp_path / "file" / "formats.json"), notices)
    await judge.generate(REQ)
    assert "not remembered" in notices[0]
    await judge.aclose()
