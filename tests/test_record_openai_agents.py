"""The OpenAI Agents SDK adapter, on the real SDK's agent loop: `Runner.run` with function
tools, the fake server (judge.testing) playing the model over HTTP, on both of the SDK's
OpenAI models (Responses, the default, and Chat Completions). The trace the processor writes
goes through the real `judge check`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
    trace,
)
from openai import AsyncOpenAI  # noqa: E402

from judge.record.openai_agents import JudgeTracingProcessor  # noqa: E402
from judge.testing.fakeserver import FakeProviderServer  # noqa: E402
from judge.testing.faults import FakeRequest, Reply, tool_calls  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REFUND_ONCE = ROOT / "examples" / "scenarios" / "refund-once"
JUDGE = str(Path(sys.executable).parent / "judge")

OFFER = "I can refund order-17 in full: $42.00. Shall I go ahead?"
DONE = "Done: refund rf-1 of $42.00 is confirmed."


def last_item(body: dict[str, Any]) -> tuple[str, str]:
    """(what, text) of the last message a request sends, in either wire format: a user
    message, or a tool result."""
    items = body.get("messages") or body.get("input")
    if isinstance(items, str):
        return "user", items
    last = items[-1]
    if last.get("role") == "tool" or last.get("type") == "function_call_output":
        return "tool", str(last.get("content") or last.get("output"))
    content = last.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content)
    return str(last.get("role")), str(content)


def refund_model(refunds: int = 1) -> Any:
    """The model's side of the refund conversation, decided from what the agent sends."""
    def respond(request: FakeRequest) -> Reply:
        what, text = last_item(request.body)
        if what == "user" and "refund" in text:
            return tool_calls(("get_order", {"orderId": "order-17"}))
        if what == "user" and text.startswith("Yes"):
            return tool_calls(*[("refund_order", {"orderId": "order-17", "amountCents": 4200})]
                              * refunds)
        if what == "tool" and "paidCents" in text:
            return Reply(text=OFFER)
        return Reply(text=DONE)

    return respond


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.fixture
def processor(tmp_path: Path) -> Iterator[JudgeTracingProcessor]:
    found = JudgeTracingProcessor(tmp_path / "traces", scenario="refund-once",
                                  trace_id=lambda t: f"refund-once/{t.name}")
    set_trace_processors([found])  # nothing goes to OpenAI's trace backend
    yield found
    set_trace_processors([])


def support_agent(srv: FakeProviderServer, api: str, *, fail: bool = False) -> Agent[Any]:
    @function_tool
    def get_order(orderId: str) -> dict[str, Any]:
        """Look an order up."""
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    @function_tool
    def refund_order(orderId: str, amountCents: int) -> dict[str, Any]:
        """Refund an order."""
        if fail:
            raise RuntimeError("card processor declined the refund")
        return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

    client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test-key", max_retries=0)
    model = (OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client) if api ==
             "responses" else OpenAIChatCompletionsModel(model="gpt-4o-mini",
                                                         openai_client=client))
    return Agent(name="support-bot", instructions="You are a careful support agent.",
                 tools=[get_order, refund_order], model=model)


async def conversation(agent: Agent[Any], name: str) -> None:
    """Two user turns, one SDK trace (`with trace(...)`): the customer asks, then says yes."""
    with trace(name):
        first = await Runner.run(agent, "Hi, order-17 arrived broken. I'd like a refund "
                                        "please.", run_config=RunConfig())
        assert first.final_output == OFFER
        history = [*first.to_input_list(), {"role": "user", "content": "Yes, please."}]
        await Runner.run(agent, history)


def judge_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([JUDGE, "check", str(REFUND_ONCE), str(path)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_an_agent_run_becomes_a_trace_judge_check_accepts(
        api: str, fake: FakeProviderServer, processor: JudgeTracingProcessor) -> None:
    fake.api.responder = refund_model()
    await conversation(support_agent(fake, api), f"live-{api}")
    assert processor.errors == []
    (path,) = processor.saved
    assert path.name == f"refund-once_live-{api}.json"
    doc = json.loads(path.read_text())
    assert doc["trace_id"] == f"refund-once/live-{api}" and doc["scenario"] == "refund-once"
    assert doc["candidate"] == {"agent": "support-bot", "model": "gpt-4o-mini"}
    shape = [(e["turn"], e["kind"], e.get("tool") or e.get("text")) for e in doc["events"]]
    assert shape == [
        (1, "user", "Hi, order-17 arrived broken. I'd like a refund please."),
        (1, "tool_call", "get_order"), (1, "tool_result", "get_order"),
        (1, "assistant", OFFER),
        (2, "user", "Yes, please."),
        (2, "tool_call", "refund_order"), (2, "tool_result", "refund_order"),
        (2, "assistant", DONE)]
    assert doc["events"][5]["args"] == {"orderId": "order-17", "amountCents": 4200}
    assert doc["events"][6]["result"] == {"status": "confirmed", "refundId": "rf-1",
                                          "amountCents": 4200}  # exact, not its str()
    assert fake.count("responses" if api == "responses" else "chat") == 4
    checked = judge_check(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no divergence from the reviewed ledger and rules" in checked.stdout


async def test_a_double_refund_by_the_agent_is_vetoed(
        fake: FakeProviderServer, processor: JudgeTracingProcessor) -> None:
    fake.api.responder = refund_model(refunds=2)
    await conversation(support_agent(fake, "responses"), "twice")
    checked = judge_check(processor.saved[0])
    assert checked.returncode == 1
    assert "a second refund of an already refunded order" in checked.stdout


async def test_a_raising_tool_is_an_error_result_and_claiming_success_after_it_is_vetoed(
        fake: FakeProviderServer, processor: JudgeTracingProcessor) -> None:
    fake.api.responder = refund_model()
    await conversation(support_agent(fake, "chat", fail=True), "declined")
    doc = json.loads(processor.saved[0].read_text())
    (result,) = [e for e in doc["events"]
                 if e["kind"] == "tool_result" and e["tool"] == "refund_order"]
    # the SDK's own words (its default error function keeps the details from the trace)
    assert result["error"].startswith("Error running tool")
    assert result["result"].startswith("An error occurred while running the tool")
    # the fake model claims the refund anyway: recorded as an error, that claim is a veto
    checked = judge_check(processor.saved[0])
    assert checked.returncode == 1
    assert "VETOED: success_claim (seq 8)" in checked.stdout


async def test_each_run_without_an_enclosing_trace_is_its_own_judge_trace(
        fake: FakeProviderServer, tmp_path: Path) -> None:
    fake.api.responder = refund_model()
    found = JudgeTracingProcessor(tmp_path / "runs")
    set_trace_processors([found])
    try:
        agent = support_agent(fake, "responses")
        await Runner.run(agent, "Hi, order-17 arrived broken. I'd like a refund please.")
        await Runner.run(agent, "Hi, order-17 arrived broken. I'd like a refund please.")
    finally:
        set_trace_processors([])
    assert len(found.saved) == 2 and found.errors == []
    doc = json.loads(found.saved[0].read_text())
    assert doc["trace_id"].startswith("Agent workflow/trace_") and "scenario" not in doc
    assert doc["metadata"]["source"] == "openai-agents"


async def test_without_sensitive_data_the_trace_says_what_is_missing(
        fake: FakeProviderServer, processor: JudgeTracingProcessor) -> None:
    fake.api.responder = refund_model()
    agent = support_agent(fake, "responses")
    with trace("blind"):
        await Runner.run(agent, "Hi, order-17 arrived broken. I'd like a refund please.",
                         run_config=RunConfig(trace_include_sensitive_data=False))
    doc = json.loads(processor.saved[0].read_text())
    assert doc["metadata"]["sensitive_data_missing"] is True
    assert [e["kind"] for e in doc["events"]] == ["tool_call", "tool_result"]
