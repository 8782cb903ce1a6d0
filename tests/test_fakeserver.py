"""The fake provider server itself: HTTP behaviour, request checks, faults, modes."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from judge.testing import faults
from judge.testing.anthropic_wire import validate_messages
from judge.testing.batches import read_batch_file
from judge.testing.fakeapi import parse_body
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.openai_wire import validate_chat
from judge.testing.wire import ApiError

CHAT = {"model": "m", "messages": [{"role": "user", "content": 'x {"seq": 9} y "seq": 12'}]}
MSG = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={
        "content-type": "application/json", "anthropic-version": "2023-06-01",
        **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


async def raw_exchange(port: int, payload: bytes, responses: int) -> list[bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(payload)
    out = []
    for _ in range(responses):
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        out.append(head + await reader.readexactly(length))
    writer.close()
    await writer.wait_closed()
    return out


def test_default_verdict_is_a_pass_citing_nothing_and_fills_schema() -> None:
    body = dict(CHAT, response_format={"type": "json_schema", "json_schema": {
        "name": "v", "strict": True, "schema": {
            "type": "object", "additionalProperties": False,
            "required": ["label", "evidence_event", "tags", "mode"],
            "properties": {"label": {"type": "string"}, "evidence_event": {"type": "integer"},
                           "tags": {"type": "array"},
                           "mode": {"type": "string", "enum": ["b", "a"]}}}}})
    with FakeProviderServer() as srv:
        status, data = post(srv.openai_base_url + "/chat/completions", body)
        assert status == 200 and data["object"] == "chat.completion"
        verdict = json.loads(data["choices"][0]["message"]["content"])
        assert verdict["label"] == "pass" and verdict["evidence_event"] is None
        assert verdict["tags"] == [] and verdict["mode"] == "b"
        assert data["usage"]["total_tokens"] > 0
        srv.enqueue(faults.verdict(label="fail", violated_key="k"))  # a chosen fail cites
        status, data = post(srv.openai_base_url + "/chat/completions", body)  # the largest seq
        chosen = json.loads(data["choices"][0]["message"]["content"])
        assert (chosen["label"], chosen["violated_key"], chosen["evidence_event"]) == (
            "fail", "k", 12)
        assert srv.requests[0].body == body and srv.count("chat") == 2


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/chat/completions", {"messages": CHAT["messages"]}, "model"),
    ("/v1/chat/completions", {"model": "m", "messages": []}, "messages"),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "bot", "content": "x"}]},
     "role"),
    ("/v1/chat/completions", dict(CHAT, response_format={"type": "xml"}), "response_format"),
    ("/v1/chat/completions", dict(CHAT, response_format={
        "type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": {
            "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}),
     "additionalProperties"),
    ("/v1/messages", {"model": "m", "messages": MSG["messages"]}, "max_tokens"),
    ("/v1/messages", dict(MSG, messages=[{"role": "assistant", "content": "x"}]), "first"),
    ("/v1/messages", dict(MSG, tools=[{"name": "v", "input_schema": {"type": "object"}}],
                          tool_choice={"type": "tool", "name": "w"}), "tool_choice.name"),
    ("/v1/messages", dict(MSG, tools=[{"name": "bad name", "input_schema": {}}]), "tools.0"),
])
def test_requests_checked_like_the_real_apis(path: str, body: dict[str, Any],
                                             message: str) -> None:
    with FakeProviderServer() as srv:
        status, data = post(srv.base_url + path, body)
    assert status == 400
    error = data["error"]
    assert message in error["message"]
    if path == "/v1/messages":
        assert data["type"] == "error" and error["type"] == "invalid_request_error"


def test_bad_json_unknown_route_and_auth() -> None:
    with FakeProviderServer(require_auth=True) as srv:
        assert post(srv.openai_base_url + "/chat/completions", b"{nope")[0] == 401
        status, data = post(srv.openai_base_url + "/chat/completions", b"{nope",
                            {"authorization": "Bearer k"})
        assert status == 400 and "parse" in data["error"]["message"]
        assert post(srv.base_url + "/v2/other", {})[0] == 404
        assert post(srv.base_url + "/v1/messages", MSG)[0] == 401
        assert post(srv.base_url + "/v1/messages", MSG, {"x-api-key": "k"})[0] == 200


async def test_keep_alive_pipelining_and_chunked_bodies() -> None:
    with FakeProviderServer(latency=0.05, responder=lambda r: r.body["messages"][0]["content"]) \
            as srv:
        bodies = [json.dumps(dict(CHAT, messages=[{"role": "user", "content": f"n{i}"}]))
                  .encode() for i in range(3)]
        plain = b"".join(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                         + str(len(b)).encode() + b"\r\n\r\n" + b for b in bodies[:2])
        chunked = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n"
                   + hex(len(bodies[2][:10]))[2:].encode() + b"\r\n" + bodies[2][:10] + b"\r\n"
                   + hex(len(bodies[2][10:]))[2:].encode() + b"\r\n" + bodies[2][10:] + b"\r\n"
                   + b"0\r\n\r\n")
        replies = await raw_exchange(srv.port, plain + chunked, 3)
        texts = [json.loads(r.split(b"\r\n\r\n", 1)[1])["choices"][0]["message"]["content"]
                 for r in replies]
        assert texts == ["n0", "n1", "n2"]  # in order, on one connection


async def test_many_concurrent_slow_requests() -> None:
    body = json.dumps(CHAT).encode()
    payload = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
               + str(len(body)).encode() + b"\r\n\r\n" + body)
    with FakeProviderServer(latency=0.5) as srv:
        started = time.perf_counter()
        results = await asyncio.gather(*(raw_exchange(srv.port, payload, 1) for _ in range(150)))
        elapsed = time.perf_counter() - started
        assert len(results) == 150 and all(r[0].startswith(b"HTTP/1.1 200") for r in results)
        # concurrent, not 150 × 0.5 s = 75 s: at least 10 at a time. (It takes ~0.6 s; a
        # tighter bound failed 3 runs in 40 under load, when a collection of the test
        # process's large heap paused the client and the in-thread server together.)
        assert elapsed < 150 * 0.5 / 10
        assert srv.count("chat") == 150


def test_fault_replies_on_the_wire() -> None:
    with FakeProviderServer() as srv:
        srv.enqueue(faults.rate_limited(3), faults.server_error(503),
                    faults.unknown_key_verdict("ghost"), "free text", {"confidence": 0.1})
        url = srv.openai_base_url + "/chat/completions"
        req = urllib.request.Request(url, data=json.dumps(CHAT).encode(), method="POST",
                                     headers={"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=5)
        assert info.value.code == 429 and info.value.headers["retry-after"] == "3"
        info.value.close()
        assert post(url, CHAT)[0] == 503
        content = [post(url, CHAT)[1]["choices"][0]["message"]["content"] for _ in range(3)]
        assert json.loads(content[0])["violated_key"] == "ghost"
        assert content[1] == "free text"
        assert json.loads(content[2])["confidence"] == 0.1
        assert json.loads(post(url, CHAT)[1]["choices"][0]["message"]["content"])["label"] \
            == "pass"


def test_anthropic_error_shapes_and_text_fallback() -> None:
    with FakeProviderServer() as srv:
        srv.enqueue(faults.server_error(529), faults.malformed("{x"))
        status, data = post(srv.base_url + "/v1/messages", MSG)
        assert status == 529 and data["error"]["type"] == "overloaded_error"
        tools = {"tools": [{"name": "v", "input_schema": {"type": "object"}}],
                 "tool_choice": {"type": "tool", "name": "v"}}
        status, data = post(srv.base_url + "/v1/messages", dict(MSG, **tools))
        assert data["content"] == [{"type": "text", "text": "{x"}]
        status, data = post(srv.base_url + "/v1/messages", dict(MSG, **tools))
        assert data["content"][0]["type"] == "tool_use" and data["stop_reason"] == "tool_use"


def test_flaky_fails_the_asked_share_with_a_mix() -> None:
    respond = faults.flaky(0.2, seed=1, timeout_hold=0.01)
    request = faults.FakeRequest("openai", "POST", "/v1/chat/completions", {}, CHAT, 0)
    replies = [respond(request) for _ in range(5000)]
    failed = [r for r in replies if r is not None]
    assert 0.17 < len(failed) / len(replies) < 0.23
    kinds = Counter((r.status, r.text is not None, r.hold > 0, bool(r.verdict))
                    for r in failed if isinstance(r, faults.Reply))
    assert len(kinds) >= 6  # 429, 500, 503, hang, malformed, invalid verdicts
    again = faults.flaky(0.2, seed=1, timeout_hold=0.01)
    assert [again(request) for _ in range(50)] == replies[:50]
    seq = faults.sequence("a", None)
    assert [seq(request), seq(request), seq(request)] == ["a", None, None]
    with pytest.raises(ValueError):
        faults.flaky(1.5)


def test_stop_does_not_wait_for_hanging_requests() -> None:
    srv = FakeProviderServer(responder=lambda r: faults.hang(60)).start()
    url = srv.openai_base_url + "/chat/completions"
    req = urllib.request.Request(url, data=json.dumps(CHAT).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    with pytest.raises(TimeoutError):
        urllib.request.urlopen(req, timeout=0.3)
    started = time.perf_counter()
    srv.stop()
    assert time.perf_counter() - started < 3


def test_process_mode_serves_and_reports_stats() -> None:
    with FakeProviderServer(process=True) as srv:
        for _ in range(3):
            assert post(srv.openai_base_url + "/chat/completions", CHAT)[0] == 200
        assert srv.count("chat") == 3 and srv.generation_count == 3
        assert srv.counts == {"chat": 3}
        with pytest.raises(RuntimeError):
            srv.enqueue("x")


pytest_plugins = ["judge.testing.fixtures"]


async def test_shipped_fixture_points_openai_specs_at_the_server(fake_openai_env) -> None:
    from judge.providers.base import JudgeRequest
    from judge.providers.registry import default_model_spec, make_provider
    from judge.settings import Settings

    settings = Settings.load()
    provider = make_provider(default_model_spec(settings), settings)
    request = JudgeRequest(item_id="t#1:r", system="s",
                           messages=({"role": "user", "content": "seq 1"},), schema={})
    response = await provider.generate(request)
    await provider.aclose()
    assert json.loads(response.text)["label"] == "pass"
    assert response.usage["total_tokens"] > 0 and response.raw["finish_reason"] == "stop"
    assert fake_openai_env.generation_count == 1


def test_standalone_command_serves_until_stopped() -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "judge.testing.fakeserver", "--port", "0",
                             "--latency", "0", "--fail-rate", "0.5", "--hang", "0.01"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        base = line.split()[4]
        assert base.startswith("http://127.0.0.1:")
        statuses = [post(base + "/v1/chat/completions", CHAT)[0] for _ in range(40)]
        assert 200 in statuses and any(s != 200 for s in statuses)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()


# -- the wire shape is the SDKs' own types ---------------------------------------------------
M = TypeVar("M", bound=BaseModel)


def sdk_shape(model_type: type[M], data: Any) -> M:
    """`data` parsed by the SDK type, with no field the type does not know at any depth, and
    dumped back unchanged."""
    obj = model_type.model_validate(data)

    def walk(model: BaseModel, where: str) -> None:
        assert not model.model_extra, f"{where}: unknown to the SDK: {sorted(model.model_extra)}"
        for name in model.model_fields_set:
            value = getattr(model, name)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, BaseModel):
                    walk(item, f"{where}.{name}")

    walk(obj, model_type.__name__)
    assert obj.model_dump(mode="json", exclude_unset=True) == data
    return obj


def test_every_answer_is_an_sdk_type_with_nothing_extra() -> None:
    import anthropic
    import openai
    from anthropic.types import ErrorResponse, Message
    from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
    from openai.types import Batch, FileObject
    from openai.types.chat import ChatCompletion
    from openai.types.shared import ErrorObject

    tools = {"tools": [{"name": "v", "input_schema": {"type": "object"}}],
             "tool_choice": {"type": "tool", "name": "v"}}
    with FakeProviderServer() as srv, \
            openai.OpenAI(base_url=srv.openai_base_url, api_key="k", max_retries=0) as oa, \
            anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="k",
                                max_retries=0) as an:
        chat = oa.chat.completions.with_raw_response.create(**CHAT)  # type: ignore[call-overload]
        sdk_shape(ChatCompletion, chat.http_response.json())
        for extra in ({}, tools):
            raw = an.messages.with_raw_response.create(  # type: ignore[call-overload]
                **MSG, **extra)
            sdk_shape(Message, raw.http_response.json())
        srv.enqueue(faults.server_error(529), faults.rate_limited(1))
        status, data = post(srv.base_url + "/v1/messages", MSG)
        assert status == 529 and sdk_shape(ErrorResponse, data)
        status, data = post(srv.openai_base_url + "/chat/completions", CHAT)
        assert status == 429 and sdk_shape(ErrorObject, data["error"])

        srv.enqueue(None, faults.server_error(500), faults.hang())
        lines = b"".join(json.dumps({"custom_id": f"c{i}", "method": "POST",
                                     "url": "/v1/chat/completions", "body": CHAT}).encode()
                         + b"\n" for i in range(3))
        upload = oa.files.with_raw_response.create(file=("in.jsonl", lines), purpose="batch")
        file = sdk_shape(FileObject, upload.http_response.json())
        created = oa.batches.with_raw_response.create(
            input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
        batch = sdk_shape(Batch, created.http_response.json())
        for _ in range(2):
            polled = oa.batches.with_raw_response.retrieve(batch.id)
            batch = sdk_shape(Batch, polled.http_response.json())
        assert batch.status == "completed" and batch.output_file_id and batch.error_file_id
        output = oa.files.content(batch.output_file_id).text.splitlines()
        sdk_shape(ChatCompletion, json.loads(output[0])["response"]["body"])
        errors = [json.loads(line) for line in oa.files.content(batch.error_file_id).text
                  .splitlines()]
        assert {e["error"]["code"] if e["error"] else e["response"]["status_code"]
                for e in errors} == {"batch_expired", 500}

        srv.enqueue(None, faults.server_error(529), faults.disconnect())
        params = dict(MSG, **tools)
        mb = an.messages.batches.with_raw_response.create(requests=[
            {"custom_id": f"c{i}", "params": params} for i in range(3)])  # type: ignore[typeddict-item]
        message_batch = sdk_shape(MessageBatch, mb.http_response.json())
        for _ in range(2):
            mb = an.messages.batches.with_raw_response.retrieve(message_batch.id)
            message_batch = sdk_shape(MessageBatch, mb.http_response.json())
        assert message_batch.processing_status == "ended"
        assert message_batch.results_url is not None
        with urllib.request.urlopen(urllib.request.Request(
                message_batch.results_url, headers={"anthropic-version": "2023-06-01"})) as r:
            rows = [sdk_shape(MessageBatchIndividualResponse, json.loads(line))
                    for line in r.read().splitlines()]
        kinds = {row.custom_id: row.result.type for row in rows}
        assert kinds == {"c0": "succeeded", "c1": "errored", "c2": "expired"}


def test_live_and_batch_requests_share_one_reply_queue_and_count() -> None:
    with FakeProviderServer() as srv:
        srv.enqueue("first", "second", "third")
        assert post(srv.openai_base_url + "/chat/completions", CHAT)[1]["choices"][0][
            "message"]["content"] == "first"
        assert post(srv.base_url + "/v1/messages", MSG)[1]["content"][0]["text"] == "second"
        status, batch = post(srv.base_url + "/v1/messages/batches", {
            "requests": [{"custom_id": "only", "params": MSG}]})
        assert status == 200
        assert [r.index for r in srv.requests] == [0, 1, 2]
        assert [r.api for r in srv.requests] == ["openai", "anthropic", "anthropic"]
        assert srv.requests[2].batch_id == batch["id"]
        assert srv.counts == {"chat": 1, "messages": 1, "message_batches": 1, "batch_lines": 1}
        assert srv.stats()["queued"] == 0


async def test_dropped_connection_sends_no_byte() -> None:
    body = json.dumps(CHAT).encode()
    with FakeProviderServer() as srv:
        srv.enqueue(faults.disconnect())
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        await writer.wait_closed()
        assert srv.count("chat") == 1


def test_without_aiohttp_the_import_names_the_extra() -> None:
    import subprocess
    import sys

    code = "import sys; sys.modules['aiohttp'] = None; import judge.testing.fakeserver"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert "ModuleNotFoundError" in done.stderr and "judge[testing]" in done.stderr


# -- the server's parsers refuse bad input with a 400, never crash ------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                 max_size=5),
    max_leaves=20)


def maybe(value: Any) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes any JSON value, so checks past the first run."""
    return st.just(value) | json_values


schemas = st.recursive(
    st.fixed_dictionaries({}, optional={"type": st.sampled_from(["string", "object", "array"])
                                        | json_values}),
    lambda inner: st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", ["object", "null"]]) | json_values,
        "properties": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
        | json_values,
        "required": st.lists(st.sampled_from(["a", "b"]), max_size=2) | json_values,
        "additionalProperties": st.booleans() | json_values,
        "items": inner, "anyOf": st.lists(inner, max_size=2) | json_values,
        "$defs": st.dictionaries(st.text(max_size=3), inner, max_size=2) | json_values}),
    max_leaves=8)
messages = st.lists(st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["user", "assistant", "system", "tool", "bot"]) | json_values,
    "content": st.text(max_size=10) | st.none() | json_values}) | json_values, max_size=3)
request_bodies = st.fixed_dictionaries({}, optional={
    "model": maybe("m"), "max_tokens": maybe(10), "messages": messages | json_values,
    "temperature": st.floats(-1, 3) | json_values, "seed": maybe(1),
    "max_completion_tokens": maybe(5), "system": st.text(max_size=5) | json_values,
    "response_format": st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["text", "json_object", "json_schema"]) | json_values,
        "json_schema": st.fixed_dictionaries({}, optional={
            "name": maybe("v"), "strict": st.booleans(), "schema": schemas})
        | json_values}) | json_values,
    "tools": st.lists(st.fixed_dictionaries({}, optional={
        "name": maybe("v"), "input_schema": maybe({"type": "object"})}) | json_values,
        max_size=2) | json_values,
    "tool_choice": st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["auto", "any", "tool", "none"]) | json_values,
        "name": maybe("v")}) | json_values})


def refused_or_fine(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except ApiError as exc:
        assert exc.status == 400 and exc.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_body_parser_refuses_anything_but_an_object(raw: bytes) -> None:
    refused_or_fine(parse_body, raw)


@settings(max_examples=300, deadline=None)
@given(request_bodies)
def test_request_checks_refuse_or_pass_any_json(body: dict[str, Any]) -> None:
    refused_or_fine(validate_chat, body)
    refused_or_fine(validate_messages, body)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40) | (st.fixed_dictionaries({}, optional={
    "custom_id": maybe("c"), "method": maybe("POST"), "url": maybe("/v1/chat/completions"),
    "body": json_values,
}) | json_values).map(lambda v: json.dumps(v).encode()), max_size=4))
def test_batch_file_reader_refuses_or_reads_any_bytes(lines: list[bytes]) -> None:
    refused_or_fine(read_batch_file, b"\n".join(lines), "/v1/chat/completions")


SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {
    "name": "verdict", "strict": True,
    "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
               "additionalProperties": False}}}


def test_dialects_refuse_structured_output_as_those_servers_do() -> None:
    from judge.testing import dialects

    with FakeProviderServer(dialect="llama-cpp-python") as srv:
        url = srv.openai_base_url + "/chat/completions"
        status, body = post(url, {**CHAT, "response_format": SCHEMA_FORMAT})
        assert status == 500 and set(body) == {"error"}
        assert body["error"]["type"] == "internal_server_error"
        assert body["error"]["param"] is None and body["error"]["code"] is None
        assert body["error"]["message"] == dialects.LLAMA_CPP_PYTHON_MESSAGE.format(
            input="json_schema")
        # as captured from llama-cpp-python 0.3.36's server
        assert body["error"]["message"].startswith(
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
            "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
            "'input': 'json_schema'")
        schema = SCHEMA_FORMAT["json_schema"]["schema"]  # type: ignore[index]
        ok_body = {**CHAT, "response_format": {"type": "json_object", "schema": schema}}
        assert post(url, ok_body)[0] == 200
        assert post(url, {**CHAT, "guided_json": schema})[0] == 200  # ignored, as it does
        assert [r.response_format for r in srv.generations()] == \
            ["json_schema", "json_object", "guided_json"]
        assert srv.generations()[1].schema == schema == srv.generations()[2].schema
    with FakeProviderServer(dialect="lm-studio") as srv:
        url = srv.openai_base_url + "/chat/completions"
        assert post(url, {**CHAT, "response_format": {"type": "json_object"}}) == (
            400, {"error": "'response_format.type' must be 'json_schema' or 'text'"})
        assert post(url, {**CHAT, "response_format": SCHEMA_FORMAT})[0] == 200
    with FakeProviderServer(dialect="no-response-format") as srv:
        url = srv.openai_base_url + "/chat/completions"
        status, body = post(url, {**CHAT, "response_format": {"type": "text"}})
        assert status == 400 and body["error"]["param"] == "response_format"
        assert post(url, CHAT)[0] == 200
    with pytest.raises(ValueError, match="unknown dialect 'vllm-9'"):
        FakeProviderServer(dialect="vllm-9")


def test_the_raw_body_is_kept_as_sent() -> None:
    with FakeProviderServer() as srv:
        raw = b'{"model": "m",  "messages": [{"role": "user", "content": "x"}]}'
        assert post(srv.openai_base_url + "/chat/completions", raw)[0] == 200
        assert srv.generations()[0].raw == raw


def test_strict_mode_limits_like_openai() -> None:
    from judge.testing.openai_wire import strict_limits_problem

    many = {"type": "object", "properties": {"k": {"type": "string", "enum": [
        f"value-{i:04d}-" + "x" * 60 for i in range(300)]}}}
    assert "a string enum of 300 values" in (strict_limits_problem(many) or "")
    wide = {"type": "object", "properties": {"k": {"type": "integer",
                                                   "enum": list(range(1001))}}}
    assert "1001 enum values" in (strict_limits_problem(wide) or "")
    with FakeProviderServer() as srv:
        fmt = {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": {
            **wide, "required": ["k"], "additionalProperties": False}}}
        status, body = post(srv.openai_base_url + "/chat/completions",
                            {**CHAT, "response_format": fmt})
        assert status == 400 and "Invalid schema for response_format 'v'" in \
            body["error"]["message"]
        root_any = {"type": "json_schema", "json_schema": {"name": "v", "strict": True,
                                                           "schema": {"anyOf": []}}}
        status, body = post(srv.openai_base_url + "/chat/completions",
                            {**CHAT, "response_format": root_any})
        assert status == 400 and "anyOf" in body["error"]["message"]


def test_anthropic_strict_tools_count_union_parameters() -> None:
    props = {f"p{i}": {"type": ["string", "null"]} for i in range(17)}
    tool = {"name": "verdict", "strict": True, "input_schema": {
        "type": "object", "properties": props, "required": list(props),
        "additionalProperties": False}}
    with FakeProviderServer() as srv:
        status, body = post(srv.anthropic_base_url + "/v1/messages", {**MSG, "tools": [tool]})
        assert status == 400 and "too many parameters with union types (17" in \
            body["error"]["message"]
        assert post(srv.anthropic_base_url + "/v1/messages",
                    {**MSG, "tools": [{**tool, "strict": False}]})[0] == 200
