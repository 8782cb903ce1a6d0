"""The LangChain/LangGraph adapter, on a real LangGraph agent loop: a StateGraph of a
`ChatOpenAI` model node and a `ToolNode`, routed by `tools_condition`, with the fake server
(judge.testing) playing the model over HTTP. The handler's trace goes through the real
`judge check`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from judge.record import Recorder
from judge.record.langchain import JudgeCallbackHandler
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import FakeRequest, Reply, tool_calls

ROOT = Path(__file__).resolve().parent.parent
REFUND_ONCE = ROOT / "examples" / "scenarios" / "refund-once"
JUDGE = str(Path(sys.executable).parent / "judge")

ASK = "Hi, order-17 arrived broken. I'd like a refund please."
OFFER = "I can refund order-17 in full: $42.00. Shall I go ahead?"
DONE = "Done: refund rf-1 of $42.00 is confirmed."


def refund_model(refunds: int = 1) -> Any:
    """The model's side of the refund conversation, decided from the last message sent."""
    def respond(request: FakeRequest) -> Reply:
        last = request.body["messages"][-1]
        text = str(last.get("content") or "")
        if last["role"] == "user" and "refund" in text:
            return tool_calls(("get_order", {"orderId": "order-17"}))
        if last["role"] == "user" and text.startswith("Yes"):
            return tool_calls(*[("refund_order", {"orderId": "order-17", "amountCents": 4200})]
                              * refunds)
        if last["role"] == "tool" and "paidCents" in text:
            return Reply(text=OFFER)
        return Reply(text=DONE)

    return respond


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


def refund_graph(srv: FakeProviderServer, *, fail: bool = False,
                 together: threading.Barrier | None = None) -> Any:
    @tool
    def get_order(orderId: str) -> dict[str, Any]:
        """Look an order up."""
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    @tool
    def refund_order(orderId: str, amountCents: int) -> dict[str, Any]:
        """Refund an order."""
        if together is not None:
            together.wait()  # every refund of the step is in flight before any returns
        if fail:
            raise RuntimeError("card processor declined the refund")
        return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

    tools = [get_order, refund_order]
    model = ChatOpenAI(model="gpt-4o-mini", base_url=srv.openai_base_url, api_key="test-key",
                       max_retries=0).bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile()


def judge_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([JUDGE, "check", str(REFUND_ONCE), str(path)], capture_output=True,
                          text=True, timeout=120)


def converse(graph: Any, handler: JudgeCallbackHandler) -> None:
    config: Any = {"callbacks": [handler]}
    state = graph.invoke({"messages": [HumanMessage(ASK)]}, config=config)
    assert state["messages"][-1].content == OFFER
    graph.invoke({"messages": [*state["messages"], HumanMessage("Yes, please.")]},
                 config=config)


def test_a_langgraph_agent_run_becomes_a_trace_judge_check_accepts(
        fake: FakeProviderServer, tmp_path: Path) -> None:
    fake.api.responder = refund_model()
    handler = JudgeCallbackHandler(trace_id="refund-once/langgraph-1", scenario="refund-once")
    converse(refund_graph(fake), handler)
    path = handler.save(tmp_path / "lg.json")
    doc = json.loads(path.read_text())
    shape = [(e["turn"], e["kind"], e.get("tool") or e.get("text")) for e in doc["events"]]
    assert shape == [
        (1, "user", ASK), (1, "tool_call", "get_order"), (1, "tool_result", "get_order"),
        (1, "assistant", OFFER),
        (2, "user", "Yes, please."),
        (2, "tool_call", "refund_order"), (2, "tool_result", "refund_order"),
        (2, "assistant", DONE)]
    call, result = doc["events"][5:7]
    assert call["args"] == {"orderId": "order-17", "amountCents": 4200}
    assert call["call_id"].startswith("call_fake") and result["call_id"] == call["call_id"]
    assert result["result"] == {"status": "confirmed", "refundId": "rf-1",
                                "amountCents": 4200}
    assert doc["candidate"] == {"model": "gpt-4o-mini"}
    assert doc["metadata"]["source"] == "langchain"
    assert fake.count("chat") == 4
    checked = judge_check(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_double_refund_by_the_agent_is_vetoed(fake: FakeProviderServer,
                                                 tmp_path: Path) -> None:
    fake.api.responder = refund_model(refunds=2)
    handler = JudgeCallbackHandler(trace_id="refund-once/langgraph-2", scenario="refund-once")
    converse(refund_graph(fake), handler)
    checked = judge_check(handler.save(tmp_path / "twice.json"))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "a second refund of an already refunded order" in checked.stdout


def test_two_refunds_run_in_parallel_are_vetoed(fake: FakeProviderServer,
                                                tmp_path: Path) -> None:
    """ToolNode runs a step's tool calls in threads: here both refunds start before either
    returns (call, call, result, result), the order that made the test above flaky before
    the checks judged a call in parallel with the achieving one as issued after it."""
    fake.api.responder = refund_model(refunds=2)
    handler = JudgeCallbackHandler(trace_id="refund-once/langgraph-3", scenario="refund-once")
    converse(refund_graph(fake, together=threading.Barrier(2, timeout=30)), handler)
    path = handler.save(tmp_path / "parallel.json")
    kinds = [e["kind"] for e in json.loads(path.read_text())["events"] if e["turn"] == 2]
    assert kinds == ["user", "tool_call", "tool_call", "tool_result", "tool_result",
                     "assistant"]
    checked = judge_check(path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    # either refund's result may come first: the other one is the second
    assert re.search(r"a second refund of an already refunded order at turn 2 \(seq [67]\), "
                     r"in parallel with the call whose result achieved `refundIssued` at turn 2 "
                     r"\(seq [89]\)", checked.stdout), checked.stdout


def test_a_raising_tool_is_an_error_result(fake: FakeProviderServer, tmp_path: Path) -> None:
    fake.api.responder = refund_model()
    rec = Recorder("refund-once/langgraph-3", scenario="refund-once")
    converse(refund_graph(fake, fail=True), JudgeCallbackHandler(rec))
    (result,) = [e for e in rec.events
                 if e["kind"] == "tool_result" and e["tool"] == "refund_order"]
    assert result["error"] == "RuntimeError: card processor declined the refund"
    checked = judge_check(rec.save(tmp_path / "declined.json"))
    assert checked.returncode == 1  # the fake model claims the refund anyway: a veto
    assert "VETOED: success_claim" in checked.stdout


async def test_ainvoke_records_the_same_trace(fake: FakeProviderServer, tmp_path: Path) -> None:
    fake.api.responder = refund_model()
    graph = refund_graph(fake)
    handler = JudgeCallbackHandler(trace_id="refund-once/async", scenario="refund-once")
    config: Any = {"callbacks": [handler]}
    state = await graph.ainvoke({"messages": [HumanMessage(ASK)]}, config=config)
    await graph.ainvoke({"messages": [*state["messages"], HumanMessage("Yes, please.")]},
                        config=config)
    kinds = [e["kind"] for e in handler.recorder.events]
    assert kinds == ["user", "tool_call", "tool_result", "assistant", "user", "tool_call",
                     "tool_result", "assistant"]
    assert judge_check(handler.save(tmp_path / "async.json")).returncode == 0
