"""Judge items: extraction per the scenario's rubric mapping, and the minimal slice."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.errors import ConfigError
from judge.items import Item, extract_items
from judge.items.slice import build_slice, contains_value, estimate_tokens, truncate_text
from judge.ledger import load_scenario
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import RubricUse, Scenario
from judge.trace import Trace, load_traces

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"


def _trace(events: list[dict], **kw) -> Trace:
    return Trace.model_validate({"trace_id": kw.get("trace_id", "t/1"), "events": events,
                                 "candidate": kw.get("candidate", {"model": "m-secret"}),
                                 "metadata": kw.get("metadata", {})})


def _loaded(judge: list[RubricUse] | None = None, goal: str = "Do the task.") -> LoadedScenario:
    sc = Scenario(id="s", goal=goal, judge=judge or [RubricUse(rubric="scope_fidelity",
                                                                on="tool_call")])
    return LoadedScenario(sc, Ledger.reduce(sc.ledger), "<test>")


def test_refund_second_call_item_has_ledger_slice_and_ids() -> None:
    loaded = load_scenario(SCENARIOS / "refund-once")
    trace = load_traces([SCENARIOS / "refund-once" / "fail-second-refund.json"])[0]
    items = extract_items(loaded, trace)
    # the scenario maps scope_fidelity to refund_order calls only
    assert [i.item_id for i in items] == [
        "refund-once/fail-second-refund#6:scope_fidelity",
        "refund-once/fail-second-refund#10:scope_fidelity",
    ]
    second = items[1]
    assert second.seq == 10 and second.turn == 3 and second.kind == "tool_call"
    assert second.target["tool"] == "refund_order" and second.target["seq"] == 10
    # the slice opens with the user turn (seq 9) and holds the target
    assert {9, 10} <= second.slice_seqs
    assert second.events[-1]["seq"] == 10
    # the earlier refund (the repeat) and its confirmation are shown
    assert {6, 7} <= second.slice_seqs
    # never the whole transcript: the first turn's chit-chat is left out
    assert 4 not in second.slice_seqs and 1 not in second.slice_seqs
    # ledger snapshot at turn 3: refundIssued completed, refundOnce active & safety-critical
    completed = {e["key"] for e in second.ledger["completed"]}
    active = {e["key"]: e for e in second.ledger["active"]}
    assert "refundIssued" in completed
    assert active["refundOnce"]["sensitivity"] == "safety_critical"
    assert {"refundIssued", "refundOnce", "refundOrder"} <= second.ledger_keys
    assert second.safety_critical and second.mutating
    assert second.candidate == {"model": "example-model", "agent": "example-agent"}
    assert second.goal.startswith("Refund order-17")


def test_dependency_result_is_pulled_in_from_an_earlier_turn() -> None:
    events = [
        {"kind": "user", "text": "Find my booking please"},
        {"kind": "tool_call", "tool": "find", "args": {"user": "mia"}, "call_id": "a"},
        {"kind": "tool_result", "tool": "find", "call_id": "a",
         "result": {"reservations": ["ZX81QW", "AB12CD"]}},
        {"kind": "tool_result", "tool": "other", "result": "noise ZX81QWE not it"},
        {"kind": "assistant", "text": "Which one?"},
        {"kind": "user", "text": "The first one, cancel it."},
        {"kind": "assistant", "text": "Cancelling."},
        {"kind": "tool_call", "tool": "cancel", "args": {"reservation_id": "ZX81QW"}},
    ]
    items = extract_items(_loaded(), _trace(events))
    cancel = items[-1]
    assert cancel.seq == 8
    # user turn (6), what follows (7), target (8) and the lookup result holding the id (3)
    assert cancel.slice_seqs == frozenset({3, 6, 7, 8})
    # the lookup before it (seq 2) made a different call; seq 4 only has a longer token
    assert 4 not in cancel.slice_seqs


def test_long_results_are_truncated_with_a_visible_marker_within_budget() -> None:
    big = {"rows": [{"id": f"row-{i}", "payload": "x" * 50} for i in range(400)]}
    events = [
        {"kind": "user", "text": "update row-377 please"},
        {"kind": "tool_call", "tool": "list", "args": {}},
        {"kind": "tool_result", "tool": "list", "result": big},
        {"kind": "tool_call", "tool": "update", "args": {"id": "row-377"}},
    ]
    item = extract_items(_loaded(), _trace(events), token_budget=500)[-1]
    assert item.slice_seqs == frozenset({1, 2, 3, 4})
    shown = next(d for d in item.events if d["seq"] == 3)["result"]
    assert isinstance(shown, str) and "…[truncated " in shown
    assert "row-377" in shown  # the excerpt keeps the value the action depends on
    assert estimate_tokens(list(item.events)) <= 500 * 1.1
    assert estimate_tokens(big) > 5000


def test_truncate_text_reports_cut_size() -> None:
    text = "a" * 1000
    out = truncate_text(text, 100)
    assert out == "a" * 100 + "…[truncated 900 chars]"
    assert truncate_text("short", 100) == "short"


def test_contains_value_respects_word_edges() -> None:
    assert contains_value('{"id":"AB12"}', "AB12")
    assert not contains_value("AB123", "AB12")
    assert contains_value("x AB12CD AB12.", "AB12")


def test_budget_drops_old_turn_events_but_keeps_target_and_user() -> None:
    events = [{"kind": "user", "text": "go"}]
    events += [{"kind": "assistant", "text": "thinking " * 100} for _ in range(30)]
    events += [{"kind": "tool_call", "tool": "act", "args": {"n": 1}}]
    item = extract_items(_loaded(), _trace(events), token_budget=300)[-1]
    assert 1 in item.slice_seqs and 32 in item.slice_seqs
    assert len(item.slice_seqs) < 10
    # the kept events are the nearest to the target
    assert 31 in item.slice_seqs


def test_goal_includes_task_instruction_from_metadata() -> None:
    events = [{"kind": "user", "text": "hi"}, {"kind": "tool_call", "tool": "t", "args": {}}]
    trace = _trace(events, metadata={"task": {"instruction": "You want to fly to SEA."}})
    item = extract_items(_loaded(goal="Help the customer."), trace)[0]
    assert item.goal.startswith("Help the customer.")
    assert "You want to fly to SEA." in item.goal


def test_rubric_mapping_tools_glob_and_summaries() -> None:
    uses = [RubricUse(rubric="scope_fidelity", on="tool_call", tools=["update_*"]),
            RubricUse(rubric="summary_fidelity", on="summary")]
    events = [{"kind": "user", "text": "hi"},
              {"kind": "tool_call", "tool": "get_x", "args": {}},
              {"kind": "tool_call", "tool": "update_x", "args": {"v": 1}},
              {"kind": "summary", "text": "did x", "reason": "compaction"}]
    items = extract_items(_loaded(uses), _trace(events))
    assert [(i.seq, i.rubric, i.kind) for i in items] == [
        (3, "scope_fidelity", "tool_call"), (4, "summary_fidelity", "summary")]
    only = extract_items(_loaded(uses), _trace(events), ["summary_fidelity"])
    assert [i.rubric for i in only] == ["summary_fidelity"]


def test_unmapped_known_rubric_uses_its_default_and_unknown_is_config_error() -> None:
    events = [{"kind": "user", "text": "hi"}, {"kind": "summary", "text": "s"}]
    loaded = _loaded([RubricUse(rubric="scope_fidelity", on="tool_call")])
    items = extract_items(loaded, _trace(events), ["summary_fidelity"])
    assert [i.item_id for i in items] == ["t/1#2:summary_fidelity"]
    with pytest.raises(ConfigError, match="no_such_rubric"):
        extract_items(loaded, _trace(events), ["no_such_rubric"])


def test_item_round_trips_through_dict() -> None:
    loaded = load_scenario(SCENARIOS / "refund-once")
    trace = load_traces([SCENARIOS / "refund-once" / "pass.json"])[0]
    for item in extract_items(loaded, trace):
        again = Item.from_dict(item.to_dict())
        assert again == item
        assert again.to_dict() == item.to_dict()


def test_build_slice_event_metadata_is_never_included() -> None:
    trace = _trace([{"kind": "user", "text": "hi", "metadata": {"model": "leaky"}},
                    {"kind": "tool_call", "tool": "t", "args": {}}])
    sl = build_slice(trace.events, 1)
    assert all("metadata" not in d for d in sl)
