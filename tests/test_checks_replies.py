"""Unsupported claims of a reply: what it states that no tool result or user message holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from judge.checks import run_checks
from judge.checks.replies import Claim, SourceIndex, claims_in
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import Scenario
from judge.textview import plain
from judge.trace import Trace


def test_claims_are_ids_amounts_dates_and_numbers() -> None:
    text = ("Refund rf-1 of $1,042.50 for order-17 (HAT170) arrives 2026-12-05 or 12/5/2026, "
            "in 5 business days, 10 at most; step 2 of 3 at 3pm, 10:30 on the 21st, 42 EUR.")
    got = [(c.kind, c.text) for c in claims_in(text)]
    assert got == [("id", "rf-1"), ("amount", "$1,042.50"), ("id", "order-17"),
                   ("id", "HAT170"), ("date", "2026-12-05"), ("date", "12/5/2026"),
                   ("number", "10"), ("amount", "42 EUR")]


def test_claims_are_listed_once_in_order() -> None:
    assert claims_in("rf-1, RF-1 and rf-1 again; 42 and 42") == [Claim("id", "rf-1"),
                                                                 Claim("number", "42")]
    assert claims_in("") == [] and claims_in("no numbers here at all") == []


def test_claims_are_read_as_a_reader_sees_them() -> None:
    """Invisible characters, terminal escapes and full-width digits neither split a claim in
    two nor hide it; a source written so still supports it."""
    assert claims_in("order 88\u200b412, ref \x1b[31mrf-9\x1b[0m, ＄４２.００") == [
        Claim("number", "88412"), Claim("id", "rf-9"), Claim("amount", "$42.00")]
    idx = SourceIndex()
    idx.add_value({"order": "88\u2060412", "paidCents": 4200})
    assert idx.unsupported("order 88412 of $42.00") == []
    assert idx.unsupported("order ８８４１２") == []


def test_support_comes_from_results_and_user_messages_cents_included() -> None:
    idx = SourceIndex()
    idx.add_value({"refundId": "rf-1", "paidCents": 4200, "eta_days": 3, "ok": True,
                   "card_4242": {"exp": "2027-01-31"}, "ratio": 0.5})
    idx.add_text("my order is ORDER-17 and I paid 19.99")
    assert idx.unsupported("Refund RF-1 of $42.00 is confirmed; $42 too.") == []
    assert idx.unsupported("order-17 cost $19.99, card 4242 expires 2027-01-31") == []
    assert idx.unsupported("0.5 of it") == []
    assert [c.text for c in idx.unsupported("refund rf-2 of $42.01 on 2027-02-01, 23 days")] \
        == ["rf-2", "$42.01", "2027-02-01", "23"]
    assert idx.unsupported("order 17") == []  # a number inside a source id supports it
    # a boolean is not the number 1, and null is nothing
    other = SourceIndex()
    other.add_value({"ok": True, "none": None})
    assert other.nums == set()
    assert [c.text for c in other.unsupported("ticket T1, 1.0 units")] == ["T1", "1.0"]


_SCENARIO = {
    "id": "s", "goal": "Refund order-17.",
    "judge": [{"rubric": "reply_fidelity", "on": "assistant"}],
}
_EVENTS: list[dict[str, Any]] = [
    {"kind": "user", "text": "Refund order-17 please"},
    {"kind": "assistant", "text": "Refund rf-9 is on its way."},  # not the final reply
    {"kind": "tool_call", "tool": "refund_order", "args": {"orderId": "order-17"}},
    {"kind": "tool_result", "tool": "refund_order",
     "result": {"refundId": "rf-1", "amountCents": 4200}},
    {"kind": "user", "text": "thanks"},
    {"kind": "assistant", "text": "Refund rf-1 of $42.00 is done; receipt RC-77 follows."},
]


def _report(events: list[dict[str, Any]], **judge: Any) -> dict[str, Any]:
    data = dict(_SCENARIO)
    if judge:
        data["judge"] = [{"rubric": "reply_fidelity", "on": "assistant", **judge}]
    sc = Scenario.model_validate(data)
    loaded = LoadedScenario(sc, Ledger.reduce(sc.ledger), "<t>")
    return run_checks(loaded, Trace.model_validate({"trace_id": "t", "events": events})
                      ).to_dict()


def _reply_findings(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["check"] == "reply_support"]


def test_the_final_reply_by_default_informational_never_a_veto() -> None:
    doc = _report(_EVENTS)
    (f,) = _reply_findings(doc)
    assert (f["seq"], f["severity"], f["safety_critical"]) == (6, "informational", False)
    assert "id `RC-77`" in f["message"] and "rf-1" not in f["message"]
    assert doc["eligible"] and doc["quality_score"] == 1.0


def test_all_or_each_turn_replies_when_the_scenario_maps_them() -> None:
    doc = _report(_EVENTS, replies="all")
    assert [f["seq"] for f in _reply_findings(doc)] == [2, 6]
    # rf-9 came before any result: unsupported then, even though nothing later names it
    assert "rf-9" in _reply_findings(doc)[0]["message"]
    doc = _report(_EVENTS, replies="each_turn")
    assert [f["seq"] for f in _reply_findings(doc)] == [2, 6]
    fixed = [*_EVENTS[:5], {"kind": "assistant", "text": "Refund rf-1 of $42.00 is done."}]
    doc = _report(fixed)
    (f,) = _reply_findings(doc)
    assert f["passed"] and doc["passed"]["reply_support"] == 1


def test_no_mapping_no_check() -> None:
    sc = Scenario.model_validate({"id": "s", "goal": "g"})
    loaded = LoadedScenario(sc, Ledger.reduce(sc.ledger), "<t>")
    doc = run_checks(loaded, Trace.model_validate({"trace_id": "t", "events": _EVENTS})
                     ).to_dict()
    assert "reply_support" not in doc["passed"] and not _reply_findings(doc)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.lists(st.text(max_size=60), max_size=4))
def test_a_reply_made_of_its_sources_has_nothing_unsupported(reply: str,
                                                             others: list[str]) -> None:
    idx = SourceIndex()
    for o in others:
        idx.add_text(o)
    idx.add_text(reply)
    assert idx.unsupported(reply) == []
    for c in claims_in(reply):  # every claim is a substring of what a reader sees
        assert c.text in plain(reply)
