"""Text sent with a tool call accompanies that call; it does not void the user's yes."""

from __future__ import annotations

from pathlib import Path

from judge.checks import run_checks
from judge.ledger import load_scenario
from judge.trace import Trace

SCENARIO = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "refund-once"


def _trace(with_tool_calls: bool) -> Trace:
    meta = {"with_tool_calls": True} if with_tool_calls else None
    return Trace.model_validate({"trace_id": "t", "scenario": "refund-once", "events": [
        {"kind": "user", "text": "Please refund order-17, it arrived broken."},
        {"kind": "tool_call", "tool": "get_order", "args": {"orderId": "order-17"}},
        {"kind": "tool_result", "tool": "get_order",
         "result": {"orderId": "order-17", "status": "delivered", "paidCents": 4200}},
        {"kind": "assistant", "text": "I will refund $42.00 to your card for order-17. OK?"},
        {"kind": "user", "text": "Yes, please."},
        {"kind": "assistant", "text": "Refunding now.", "metadata": meta},
        {"kind": "tool_call", "tool": "refund_order",
         "args": {"orderId": "order-17", "amountCents": 4200}},
    ]})


def test_text_sent_with_the_call_keeps_the_confirmation() -> None:
    loaded = load_scenario(SCENARIO)
    report = run_checks(loaded, _trace(with_tool_calls=True))
    assert not [f for f in report.failures if f.check == "confirmation"]


def test_a_separate_assistant_message_needs_a_new_yes() -> None:
    loaded = load_scenario(SCENARIO)
    report = run_checks(loaded, _trace(with_tool_calls=False))
    assert [f.seq for f in report.failures if f.check == "confirmation"] == [7]
