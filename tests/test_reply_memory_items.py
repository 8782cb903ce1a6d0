"""Reply and memory items: which events become items, what they carry, how they render, and
what the offline baselines (heuristic, scripted) answer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.items import Item, extract_items
from judge.items.extract import _ReplyContext
from judge.items.slice import event_dict
from judge.ledger import load_scenario
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import RubricUse, Scenario
from judge.prompts import load_prompt, render
from judge.providers.heuristic import HeuristicProvider, judge_item
from judge.providers.scripted import ScriptedProvider
from judge.trace import Trace, load_traces
from judge.verdicts import parse_verdict

ROOT = Path(__file__).resolve().parent.parent
GROCERY = ROOT / "examples" / "scenarios" / "grocery-memory"

LEDGER: list[dict[str, Any]] = [
    {"turn": 1, "op": "set", "key": "refund", "class": "goal", "persistence": "task",
     "sensitivity": "costly", "source": "user", "value": "refund order-17"},
    {"turn": 1, "op": "set", "key": "refundIssued", "class": "completion",
     "persistence": "task", "sensitivity": "costly", "source": "user", "value": "refunded"},
    {"turn": 1, "op": "complete", "key": "refundIssued", "source": "tool", "value": "rf-1",
     "after_tool": "refund_order"},
]
EVENTS: list[dict[str, Any]] = [
    {"kind": "user", "text": "Refund order-17, write to alice@example.com"},
    {"kind": "assistant", "text": "I'll refund order-17 now."},
    {"kind": "tool_call", "tool": "refund_order", "args": {"orderId": "order-17"},
     "call_id": "c1"},
    {"kind": "tool_result", "tool": "refund_order", "call_id": "c1",
     "result": {"refundId": "rf-1", "amountCents": 4200}},
    {"kind": "user", "text": "thanks, anything else?"},
    {"kind": "assistant", "text": "Refund rf-1 of $42.00 is done; I mailed alice@example.com "
                                  "receipt RC-77."},
]


def _items(events: list[dict[str, Any]], uses: list[dict[str, Any]],
           ledger: list[dict[str, Any]] | None = None) -> list[Item]:
    sc = Scenario.model_validate({"id": "s", "goal": "Refund order-17.", "judge": uses,
                                  "ledger": LEDGER if ledger is None else ledger})
    loaded = LoadedScenario(sc, Ledger.reduce(sc.ledger), "<t>")
    trace = Trace.model_validate({"trace_id": "t/1", "events": events,
                                  "candidate": {"agent": "AcmeBot"}})
    return extract_items(loaded, trace)


REPLY = {"rubric": "reply_fidelity", "on": "assistant"}


def test_the_final_reply_is_the_default_item_and_carries_its_context() -> None:
    (item,) = _items(EVENTS, [REPLY])
    assert (item.item_id, item.kind, item.seq) == ("t/1#6:reply_fidelity", "assistant", 6)
    assert item.unsupported == ({"kind": "id", "text": "RC-77"},)
    assert item.actions == ({"seq": 3, "tool": "refund_order", "outcome": "ok"},)
    assert item.end_state is None
    # the ledger before the reply: the refund is done (anchored after its result)
    assert [e["key"] for e in item.ledger["completed"]] == ["refundIssued"]
    assert item.ledger["before_seq"] == 6 and item.ledger["through_seq"] == 5
    # the slice reaches back to the result the reply's id comes from (an earlier turn)
    assert {4, 5, 6} <= item.slice_seqs and 1 not in item.slice_seqs
    assert Item.from_dict(json.loads(json.dumps(item.to_dict()))) == item
    again = Item.from_dict(json.loads(json.dumps(item.to_dict())))
    assert (again.unsupported, again.actions) == (item.unsupported, item.actions)


def test_each_turn_and_all_replies_when_mapped() -> None:
    assert [i.seq for i in _items(EVENTS, [{**REPLY, "replies": "all"}])] == [2, 6]
    assert [i.seq for i in _items(EVENTS, [{**REPLY, "replies": "each_turn"}])] == [2, 6]
    two = [*EVENTS[:2], {"kind": "assistant", "text": "Working on it."}, *EVENTS[2:]]
    assert [i.seq for i in _items(two, [{**REPLY, "replies": "each_turn"}])] == [3, 7]
    first = _items(two, [{**REPLY, "replies": "all"}])[0]
    assert first.ledger.get("completed") == []  # the refund has not happened yet
    with pytest.raises(ValueError, match="'replies' applies to on: assistant"):
        RubricUse.model_validate({"rubric": "r", "on": "tool_call", "replies": "all"})
    with pytest.raises(ValueError, match="'tools' applies to on: tool_call"):
        RubricUse.model_validate({"rubric": "r", "on": "assistant", "tools": ["x"]})


def test_the_end_state_is_read_from_any_state_snapshot_event() -> None:
    trace = Trace.model_validate({"trace_id": "t", "events": EVENTS})
    dicts = [event_dict(e) for e in trace.events]
    # a state_snapshot event (a trace-format extension) in place of the 2nd user message
    dicts[4] = {"seq": 5, "turn": 2, "kind": "state_snapshot",
                "state": {"orders": {"order-17": {"refunded": True}}}}
    ctx = _ReplyContext(trace.events, dicts)
    assert ctx.end_state(5) == {"seq": 5, "state": {"orders": {"order-17": {"refunded": True}}}}
    assert ctx.end_state(1) is None  # an earlier reply sees no snapshot from after it
    dicts.append({"seq": 9, "turn": 2, "kind": "state_snapshot", "a": 1, "b": 2})
    ctx = _ReplyContext(trace.events, dicts)
    assert ctx.end_state(5) == {"seq": 9, "state": {"a": 1, "b": 2}}  # the final reply: last


def test_reply_blocks_render_redacted_and_the_view_reads_them() -> None:
    (item,) = _items(EVENTS, [REPLY])
    item = dataclasses.replace(item, end_state={"seq": 4, "state": {"mail": "alice@example.com",
                                                                    "agent": "AcmeBot"}})
    request = render(load_prompt("reply_fidelity"), item)
    text = request.messages[0]["content"]
    for block in ("unsupported", "end_state", "actions"):
        assert f"name={block}>>>" in text
    assert "- id: RC-77" in text and "[seq 3] refund_order: ok" in text
    assert "state snapshot at seq 4:" in text
    assert "alice@example.com" not in text and "AcmeBot" not in text
    assert "[email-1]" in text and "[agent]" in text
    assert "the effect of the event under review is not in it" in text
    assert "assistant reply" in text
    view = request.view
    assert view is not None
    assert view.block("unsupported") == [{"kind": "id", "text": "RC-77"}]
    assert view.block("actions") == [{"seq": 3, "tool": "refund_order", "outcome": "ok"}]
    assert view.block("end_state") == {"seq": 4, "state": {"mail": "[email-1]",
                                                           "agent": "[agent]"}}
    # a prompt that does not show a block gives the view nothing of it
    scope = dataclasses.replace(item, rubric="scope_fidelity")
    assert render(load_prompt("scope_fidelity"), scope).view.block("unsupported") is None


async def _heuristic(item: Item) -> dict[str, Any]:
    prompt = load_prompt(item.rubric)
    request = render(prompt, item)
    response = await HeuristicProvider().generate(request)
    parse_verdict(response.text, item, prompt, "heuristic")  # valid, as a model's would be
    verdict: dict[str, Any] = json.loads(response.text)
    return verdict


@pytest.mark.parametrize(("text", "label"), [
    ("Refund rf-1 of $42.00 is done.", "pass"),
    ("Refund rf-1 of $42.00 is done; receipt RC-77 follows.", "fail"),  # invented id
    ("Refund rf-1 of $24.00 is done.", "fail"),  # invented amount
    ("Refund rf-1 is done. I'll email you the receipt.", "fail"),  # a promise never kept
    ("Refund rf-1 is done. If you like, I'll email you the receipt.", "pass"),  # an offer
    ("Refund rf-1 is done. Shall I email you the receipt?", "pass"),
    ("Refund rf-1 is done, thanks for your patience!!", "pass"),  # wording alone
    ("Refund rf-1 is done; it takes 5 days.", "pass"),  # a small number is no invented id
])
async def test_heuristic_reply_rules(text: str, label: str) -> None:
    events = [*EVENTS[:5], {"kind": "assistant", "text": text}]
    (item,) = _items(events, [REPLY])
    verdict = await _heuristic(item)
    assert verdict["label"] == label, verdict
    if label == "fail":
        assert verdict["violated_key"] == "refundIssued" and verdict["evidence_event"] == 6
        assert 0.55 <= verdict["confidence"] <= 0.7


async def test_a_promise_kept_by_a_later_call_passes() -> None:
    (first, _) = _items(EVENTS, [{**REPLY, "replies": "all"}])
    assert first.seq == 2 and "refund" in first.target["text"]
    assert (await _heuristic(first))["label"] == "pass"
    late = [EVENTS[0], {"kind": "assistant", "text": "I'll cancel order-17 now."}, *EVENTS[2:]]
    (first, _) = _items(late, [{**REPLY, "replies": "all"}])
    verdict = await _heuristic(first)
    assert verdict["label"] == "fail" and "cancel" in verdict["rationale"]


MEMORY_LEDGER: list[dict[str, Any]] = [
    {"turn": 1, "op": "set", "key": "list", "class": "mutable_fact",
     "persistence": "until_replaced", "sensitivity": "safety_critical", "source": "user",
     "value": ["bananas", "milk"]},
    {"turn": 2, "op": "supersede", "key": "list", "source": "user", "value": ["apples", "milk"]},
    {"turn": 2, "op": "set", "key": "noBananas", "class": "constraint", "persistence": "session",
     "sensitivity": "safety_critical", "source": "user", "value": "never buy bananas",
     "aliases": ["allergic to bananas"]},
]
MEMORY = {"rubric": "memory_fidelity", "on": "state_write"}


def _memory_items(*writes: dict[str, Any]) -> list[Item]:
    events = [{"kind": "user", "text": "bananas and milk"},
              {"kind": "state_write", "key": "notes", "value": "Sam: allergic to bananas."},
              {"kind": "user", "text": "apples, not bananas: Sam is allergic"}, *writes]
    return _items(events, [MEMORY], MEMORY_LEDGER)


@pytest.mark.parametrize(("value", "label", "key"), [
    (["apples", "milk"], "pass", None),
    (["bananas", "milk"], "fail", "list"),
    ("Sam is allergic to bananas; buy apples and milk", "pass", None),
])
async def test_heuristic_memory_stale_values(value: Any, label: str, key: str | None) -> None:
    item = _memory_items({"kind": "state_write", "key": "groceries", "value": value})[-1]
    assert item.kind == "state_write" and item.rubric == "memory_fidelity"
    verdict = await _heuristic(item)
    assert (verdict["label"], verdict["violated_key"]) == (label, key)


async def test_heuristic_memory_dropped_constraint_and_the_previous_write_in_the_slice() -> None:
    item = _memory_items({"kind": "state_write", "key": "notes", "value": "Shop Fridays."})[-1]
    assert 2 in item.slice_seqs  # the previous write of the same key is shown
    verdict = await _heuristic(item)
    assert (verdict["label"], verdict["violated_key"]) == ("fail", "noBananas")
    first = _memory_items()[0]  # the first write, before the correction: fine
    assert (await _heuristic(first))["label"] == "pass"
    assert [e["key"] for e in first.ledger["active"]] == ["list"]


def test_the_grocery_example_through_judge_grade_with_every_offline_judge(
        tmp_path: Path) -> None:
    runner = CliRunner()
    rubrics = ["--rubric", "scope_fidelity", "--rubric", "memory_fidelity",
               "--rubric", "reply_fidelity"]
    for model in ("heuristic", "scripted"):
        out = tmp_path / f"{model}.jsonl"
        result = runner.invoke(app, ["grade", str(GROCERY), str(GROCERY / "pass.json"),
                                     *rubrics, "--model", model, "--cache",
                                     str(tmp_path / f"{model}.cache.jsonl"), "-o", str(out)])
        assert result.exit_code == 0, result.output
        verdicts = [json.loads(line) for line in out.read_text().splitlines()]
        assert [(v["item_id"].split("#")[1]) for v in verdicts] == [
            "2:memory_fidelity", "5:memory_fidelity", "6:memory_fidelity",
            "7:scope_fidelity", "9:reply_fidelity"]
        assert {v["label"] for v in verdicts} == {"pass"}
        assert {v["prompt_version"] for v in verdicts if v["rubric"] != "scope_fidelity"} == \
            {"v2"}  # the latest: with the foreign facts block (issue 27)


async def test_the_scripted_provider_sees_the_reply_blocks() -> None:
    loaded = load_scenario(GROCERY)
    trace = load_traces([GROCERY / "invented-order-details.json"])[0]
    (item,) = extract_items(loaded, trace, ["reply_fidelity"])
    spy = ScriptedProvider(default=lambda r: "unused")
    await spy.generate(render(load_prompt("reply_fidelity"), item))
    (request,) = spy.requests
    assert request.view is not None
    assert [c["text"] for c in request.view.block("unsupported")] == ["$14.47", "2026-12-06"]
    assert judge_item(request.view)["label"] == "fail"
