"""The fake server as an agent's model: replies that call tools, on OpenAI chat completions
and on the Responses API, read back by the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import ToolCall, tool_calls


@pytest.fixture
def srv() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


def test_chat_completions_answer_tool_calls(srv: FakeProviderServer) -> None:
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0)
    srv.api.enqueue(tool_calls(("get_order", {"orderId": "o-1"}),
                               ToolCall("refund_order", {"amountCents": 4200}, id="call_9")))
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "refund o-1"}])
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = [(c.id, c.function.name, json.loads(c.function.arguments))
             for c in choice.message.tool_calls or [] if c.type == "function"]
    assert calls == [("call_fake000001", "get_order", {"orderId": "o-1"}),
                     ("call_9", "refund_order", {"amountCents": 4200})]
    # a tool result goes back, the next reply is text
    srv.api.enqueue("done")
    reply = client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "refund o-1"},
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_9", "content": '{"ok": true}'}])
    assert reply.choices[0].message.content == "done"
    assert '{"ok": true}' in srv.generations()[-1].text


def test_the_responses_api_answers_text_and_function_calls(srv: FakeProviderServer) -> None:
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0)
    srv.api.enqueue("hello", tool_calls(("get_order", {"orderId": "o-1"}), text="looking"))
    assert client.responses.create(model="m", input="hi").output_text == "hello"
    got = client.responses.create(model="m", instructions="be brief",
                                  input=[{"role": "user", "content": "where is o-1?"}])
    kinds = [item.type for item in got.output]
    assert kinds == ["message", "function_call"] and got.output_text == "looking"
    call = got.output[1]
    assert call.type == "function_call" and json.loads(call.arguments) == {"orderId": "o-1"}
    request = srv.generations("openai-responses")[-1]
    assert request.text == "be brief\nwhere is o-1?"
    assert srv.count("responses") == 2 and srv.generation_count == 2


def test_the_responses_api_refuses_what_the_real_one_refuses(srv: FakeProviderServer) -> None:
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="'input' must be a string"):
        client.responses.create(model="m", input=7)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="does not stream"):
        client.responses.create(model="m", input="hi", stream=True)
