"""The fake provider server itself: HTTP behaviour, request checks, faults, modes."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

import pytest

from judge.testing import faults
from judge.testing.fakeserver import FakeProviderServer

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
    return out


def test_default_verdict_cites_largest_seq_and_fills_schema() -> None:
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
        assert verdict["label"] == "pass" and verdict["evidence_event"] == 12
        assert verdict["tags"] == [] and verdict["mode"] == "b"
        assert data["usage"]["total_tokens"] > 0
        assert srv.requests[0].body == body and srv.count("chat") == 1


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
        assert elapsed < 2.5  # concurrent, not 150 × 0.5 s
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
    assert json.loads(response.text)["evidence_event"] == 1
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
