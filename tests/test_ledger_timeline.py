"""The ledger before the event: deltas take effect at their anchors in each trace, and an
item never sees the effect of the event it judges."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import test_properties as reducer_cases  # its delta-list strategies
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.checks import run_checks
from judge.checks.anchors import trace_effects, trace_timeline
from judge.cli.main import app
from judge.errors import LedgerError
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import Delta, Scenario
from judge.ledger.timeline import NEVER, Effect, LedgerTimeline
from judge.prompts import load_prompt, render
from judge.trace import Trace, load_traces

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"


def _items(scenario: str, trace: str, rubrics: list[str] | None = None) -> list[Item]:
    loaded = load_scenario(SCENARIOS / scenario)
    return extract_items(loaded, load_traces([SCENARIOS / scenario / trace])[0], rubrics)


def _status(item: Item, key: str) -> str | None:
    for status in ("active", "completed", "revoked", "failed", "expired"):
        if any(e["key"] == key for e in item.ledger.get(status, [])):
            return status
    return None


# -- refund-once: the first refund is judged before it happened -----------------------------

def test_first_refund_does_not_see_its_own_completion_and_the_second_does() -> None:
    first, second = _items("refund-once", "fail-second-refund.json")
    assert (first.seq, second.seq) == (6, 10)
    assert _status(first, "refundIssued") == "active"  # pending: this call is what does it
    assert "rf-1" not in json.dumps(first.ledger)
    assert first.ledger["before_seq"] == 6 and first.ledger["through_seq"] == 5
    assert _status(second, "refundIssued") == "completed"
    done = next(e for e in second.ledger["completed"] if e["key"] == "refundIssued")
    assert done["value"] == "rf-1" and done["since_turn"] == 2
    # the pass trace's only refund is judged against a pending refund too
    (only,) = _items("refund-once", "pass.json")
    assert _status(only, "refundIssued") == "active"


def test_a_fact_from_a_lookup_is_not_shown_before_the_lookup() -> None:
    loaded = load_scenario(SCENARIOS / "refund-once")
    trace = load_traces([SCENARIOS / "refund-once" / "pass.json"])[0]
    timeline = trace_timeline(loaded, trace.events)
    # orderPaidCents is anchored after get_order (seq 3): not at seq 2 (the lookup call)
    assert "orderPaidCents" not in timeline.before(2, 1).entries
    assert timeline.before(4, 1).entries["orderPaidCents"].value == 4200
    # the reviewed ledger for the checks still places it at its turn
    assert loaded.ledger.at(1).entries["orderPaidCents"].value == 4200
    # the test account is not shown to the call that creates it
    (create, *_) = _items("test-account-compaction", "pass.json")
    assert create.target["tool"] == "create_account"
    assert _status(create, "testAccountId") is None
    assert _status(create, "accountCreated") == "active"


def test_the_prompt_says_which_events_the_ledger_reflects() -> None:
    first, second = _items("refund-once", "fail-second-refund.json")
    text = render(load_prompt("scope_fidelity"), first).messages[0]["content"]
    assert load_prompt("scope_fidelity").version == "v3"
    assert ("The reviewed ledger, as it stood just before seq 6, the event under review: it "
            "reflects the events up to seq 5 and nothing from seq 6 on") in text
    assert "seq 10, the event under review: it reflects the events up to seq 9" in \
        render(load_prompt("scope_fidelity"), second).messages[0]["content"]
    # v2 is released and unchanged: it renders the new snapshot but says nothing of it
    old = render(load_prompt("scope_fidelity", "v2"), first).messages[0]["content"]
    assert "as it stood just before" not in old and "refundIssued" in old


def test_summary_prompt_v3_says_it_too() -> None:
    items = _items("test-account-compaction", "pass.json", ["summary_fidelity"])
    (summary,) = items
    text = render(load_prompt("summary_fidelity"), summary).messages[0]["content"]
    assert load_prompt("summary_fidelity").version == "v3"
    assert f"just before seq {summary.seq}, the event under review" in text


# -- anchors, one rule at a time -------------------------------------------------------------

def _loaded(deltas: list[dict[str, Any]], completion: dict[str, Any] | None = None,
            ) -> LoadedScenario:
    rules: dict[str, Any] = {"completion": completion} if completion else {}
    sc = Scenario.model_validate({"id": "s", "goal": "g", "ledger": deltas, "rules": rules})
    return LoadedScenario(sc, Ledger.reduce(sc.ledger), "<test>")


def _trace(events: list[dict[str, Any]]) -> Trace:
    return Trace.model_validate({"trace_id": "t", "events": events})


_FACT = {"class": "mutable_fact", "persistence": "task", "sensitivity": "normal"}
EVENTS = [
    {"seq": 1, "turn": 1, "kind": "user", "text": "look up order-1"},
    {"seq": 2, "turn": 1, "kind": "tool_call", "tool": "get_order", "args": {"id": "o1"}},
    {"seq": 3, "turn": 1, "kind": "tool_result", "tool": "get_order", "error": "timeout"},
    {"seq": 4, "turn": 1, "kind": "tool_call", "tool": "get_order", "args": {"id": "o1"}},
    {"seq": 5, "turn": 1, "kind": "tool_result", "tool": "get_order",
     "result": {"status": "packed"}},
    {"seq": 7, "turn": 2, "kind": "user", "text": "and again"},
    {"seq": 8, "turn": 2, "kind": "tool_call", "tool": "get_order", "args": {"id": "o1"}},
    {"seq": 9, "turn": 2, "kind": "tool_result", "tool": "get_order",
     "result": {"status": "shipped"}},
]


def test_anchor_points_per_rule() -> None:
    loaded = _loaded([
        {"turn": 1, "op": "set", "key": "a", "source": "user", **_FACT, "value": 1},
        {"turn": 1, "op": "set", "key": "b", "source": "tool", **_FACT, "value": 1,
         "after_tool": "get_*"},  # the failed result at seq 3 does not count
        {"turn": 1, "op": "set", "key": "c", "source": "tool", **_FACT, "value": 1,
         "after_tool": "get_order", "after_result": [{"path": "status", "equals": "shipped"}]},
        {"turn": 1, "op": "set", "key": "d", "source": "tool", **_FACT, "value": 1,
         "at_seq": 6},  # no event 6: it holds from seq 7 on
        {"turn": 1, "op": "set", "key": "g", "source": "tool", **_FACT, "value": 1,
         "after_tool": "cancel_order"},  # never called: never takes effect
        {"turn": 2, "op": "set", "key": "e", "source": "user", **_FACT, "value": 1},
        {"turn": 3, "op": "set", "key": "f", "source": "user", **_FACT, "value": 1},
    ])
    effects = trace_effects(loaded, _trace(EVENTS).events)
    assert [e.after for e in effects] == [0.5, 5, 9, 6, NEVER, 6.5, NEVER]
    assert [e.turn for e in effects] == [None, 1, 2, 1, None, None, None]
    timeline = LedgerTimeline(loaded.ledger, effects)
    seen = {s: sorted(timeline.before(s, 2 if s > 6 else 1).entries) for s in (1, 5, 6, 7, 9)}
    assert seen == {1: ["a"], 5: ["a"], 6: ["a", "b"], 7: ["a", "b", "d", "e"],
                    9: ["a", "b", "d", "e"]}
    assert sorted(timeline.before(10, 2).entries) == ["a", "b", "c", "d", "e"]
    # an anchored delta shows the turn it took effect in
    assert timeline.before(10, 2).entries["c"].since_turn == 2


def test_a_key_keeps_its_reviewed_order_and_each_anchor_finds_the_next_match() -> None:
    loaded = _loaded([
        {"turn": 1, "op": "set", "key": "st", "source": "tool", **_FACT, "value": "packed",
         "after_tool": "get_order"},
        {"turn": 2, "op": "supersede", "key": "st", "source": "tool", "value": "shipped",
         "after_tool": "get_order"},  # the next get_order result after the first: seq 9
        {"turn": 2, "op": "set", "key": "x", "source": "user", **_FACT, "value": 1},
        {"turn": 2, "op": "supersede", "key": "x", "source": "user", "value": 2,
         "at_seq": 2},  # anchored before its key's previous delta: takes effect with it
    ])
    effects = trace_effects(loaded, _trace(EVENTS).events)
    timeline = LedgerTimeline(loaded.ledger, effects)
    assert [e.after for e in effects[:2]] == [5, 9]
    assert timeline.effects[3].after == timeline.effects[2].after == 6.5
    assert timeline.before(8, 2).entries["st"].value == "packed"
    snap = timeline.before(10, 2)
    assert snap.entries["st"].value == "shipped" and snap.entries["x"].value == 2
    # superseded values in the order they were replaced in this trace
    assert [(s.key, s.value) for s in snap.superseded] == [("x", 1), ("st", "packed")]


def test_a_subgoal_completes_at_the_result_that_satisfies_it_as_the_checks_find_it() -> None:
    comp = {"all_of": [{"key": "done", "tool": "get_order",
                        "args": [{"path": "id", "equals": "o1"}],
                        "result": [{"path": "status", "equals": "shipped"}]}]}
    loaded = _loaded([
        {"turn": 1, "op": "set", "key": "done", "source": "user", "class": "completion",
         "persistence": "task", "sensitivity": "costly", "value": "shipped"},
        {"turn": 1, "op": "complete", "key": "done", "source": "tool"},
    ], comp)
    trace = _trace(EVENTS)
    effects = trace_effects(loaded, trace.events)
    assert effects[1] == Effect(9, 2)
    report = run_checks(loaded, trace)
    assert report.completion["subgoals"]["done"]["seq"] == 9
    timeline = trace_timeline(loaded, trace.events)
    assert timeline.before(9, 2).entries["done"].status == "active"
    assert timeline.before(10, 2).entries["done"].status == "completed"
    # a wrong argument never satisfies it: the completion never shows
    other = [dict(e, args={"id": "o2"}) if e["kind"] == "tool_call" else e for e in EVENTS]
    assert trace_effects(loaded, _trace(other).events)[1].never


def test_bad_anchors_are_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most one anchor"):
        Delta.model_validate({"turn": 1, "op": "set", "key": "a", "source": "user",
                              "at_seq": 3, "after_tool": "x"})
    with pytest.raises(ValueError, match="after_result needs after_tool"):
        Delta.model_validate({"turn": 1, "op": "set", "key": "a", "source": "user",
                              "after_result": [{"path": "a", "exists": True}]})
    text = (SCENARIOS / "refund-once" / "scenario.yaml").read_text()
    d = tmp_path / "s"
    d.mkdir()
    (d / "scenario.yaml").write_text(text.replace("after_tool: get_order ",
                                                  "after_tool: get_ordr "))
    result = CliRunner().invoke(app, ["validate", str(d)])
    assert result.exit_code == 2
    assert "ledger[3].after_tool" in result.output and "get_ordr" in result.output
    assert "scenario.yaml:5" in result.output and "Traceback" not in result.output


# -- properties ------------------------------------------------------------------------------

def _completion_points(loaded: LoadedScenario, trace: Trace) -> dict[str, int]:
    """Where the checks (not the timeline) saw each sub-goal complete."""
    report = run_checks(loaded, trace)
    return {k: v["seq"] for k, v in report.completion["subgoals"].items()}


def _assert_nothing_from_the_future(loaded: LoadedScenario, trace: Trace) -> int:
    items = extract_items(loaded, trace, sorted({u.rubric for u in loaded.scenario.judge}))
    done_at = _completion_points(loaded, trace)
    completes = {d.key for d in loaded.ledger.deltas if d.op.value == "complete"}
    effects = trace_effects(loaded, trace.events)
    by_seq = {e.seq: e for e in trace.events}
    for item in items:
        assert item.ledger["before_seq"] == item.seq
        through = item.ledger["through_seq"]
        assert through is None or (through < item.seq and through in by_seq)
        for e in item.ledger.get("completed", []):
            key = e["key"]
            # the checks saw the sub-goal done strictly before the judged event
            if key in done_at:
                assert done_at[key] < item.seq, (item.item_id, key)
            # and the delta that completed it took effect strictly before the event
            done = [j for j, x in enumerate(loaded.ledger.deltas)
                    if x.key == key and x.op.value == "complete"]
            assert any(effects[j].after < item.seq for j in done), (item.item_id, key)
        # a sub-goal the checks saw done before the event is shown done
        for key, seq in done_at.items():
            if key in completes and seq < item.seq:
                assert _status(item, key) == "completed", (item.item_id, key)
    return len(items)


def test_no_example_item_sees_a_completion_at_or_after_its_event() -> None:
    n = 0
    for sd in sorted(d for d in SCENARIOS.iterdir() if d.is_dir()):
        loaded = load_scenario(sd)
        for tp in sorted(sd.glob("*.json")):
            n += _assert_nothing_from_the_future(loaded, load_traces([tp])[0])
    assert n > 40


@pytest.fixture(scope="module")
def airline(tmp_path_factory: pytest.TempPathFactory) -> list[Trace]:
    out = tmp_path_factory.mktemp("tau") / "airline.jsonl"
    result = CliRunner().invoke(app, ["import", "tau-bench", str(TAU), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return load_traces([out])


def test_no_tau_bench_item_sees_the_future(airline: list[Trace]) -> None:
    loaded = load_scenario(SCENARIOS / "tau-airline")
    n = sum(_assert_nothing_from_the_future(loaded, t) for t in airline)
    assert n > 250  # 298 mutating calls of the 200 runs


@st.composite
def anchored_cases(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A trace of user turns, calls and results, and legal deltas with random anchors."""
    events: list[dict[str, Any]] = []
    seq = 0
    for turn in range(1, draw(st.integers(1, 4)) + 1):
        seq += draw(st.integers(1, 2))
        events.append({"seq": seq, "turn": turn, "kind": "user", "text": "hi"})
        for _ in range(draw(st.integers(0, 3))):
            tool = draw(st.sampled_from(["t1", "t2"]))
            seq += 1
            events.append({"seq": seq, "turn": turn, "kind": "tool_call", "tool": tool,
                           "args": {}})
            seq += draw(st.integers(1, 2))
            ok = draw(st.booleans())
            events.append({"seq": seq, "turn": turn, "kind": "tool_result", "tool": tool,
                           **({"result": {"v": draw(st.integers(0, 2))}} if ok
                              else {"error": "boom"})})
    deltas: list[dict[str, Any]] = []
    turn = 0
    for n in range(draw(st.integers(1, 8))):
        turn += draw(st.integers(0, 1))
        key = draw(st.sampled_from(["a", "b", "c"]))
        first = all(d["key"] != key for d in deltas)
        d: dict[str, Any] = {"turn": turn, "key": key, "source": "tool", "value": n,
                             "op": "set" if first else "supersede"}
        if first:
            d.update(_FACT)
        anchor = draw(st.sampled_from(["none", "seq", "tool", "result"]))
        if anchor == "seq":
            d["at_seq"] = draw(st.integers(1, seq + 2))
        elif anchor in ("tool", "result"):
            d["after_tool"] = draw(st.sampled_from(["t1", "t2", "t*", "t9"]))
            if anchor == "result":
                d["after_result"] = [{"path": "v", "equals": draw(st.integers(0, 2))}]
        deltas.append(d)
    return deltas, events


def _reference_points(deltas: list[dict[str, Any]], events: list[dict[str, Any]]
                      ) -> list[float]:
    """The effect points by the rules' plain words, computed naively."""
    out: list[float] = []
    last: dict[str, float] = {}
    for d in deltas:
        floor = last.get(d["key"], -math.inf)
        if "at_seq" in d:
            own: float = d["at_seq"]
        elif "after_tool" in d:
            pat = d["after_tool"]
            hits = [e["seq"] for e in events if e["kind"] == "tool_result" and "error" not in e
                    and (e["tool"] == pat or (pat == "t*" and e["tool"].startswith("t")))
                    and all(e["result"].get(m["path"]) == m["equals"]
                            for m in d.get("after_result", []))
                    and e["seq"] > floor]
            own = hits[0] if hits else math.inf
        else:
            starts = [e["seq"] for e in events if e["turn"] >= d["turn"]]
            own = starts[0] - 0.5 if starts else math.inf
        point = max(own, floor)
        out.append(point)
        last[d["key"]] = point
    return out


@settings(max_examples=300, deadline=None)
@given(anchored_cases())
def test_the_ledger_before_each_event_holds_exactly_the_deltas_that_took_effect_before_it(
        case: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    deltas, events = case
    loaded = _loaded(deltas)
    trace = _trace(events)
    points = _reference_points(deltas, events)
    timeline = trace_timeline(loaded, trace.events)
    assert [e.after for e in timeline.effects] == points
    for ev in trace.events:
        assert ev.seq is not None and ev.turn is not None
        snap = timeline.before(ev.seq, ev.turn)
        applied = [i for i, p in enumerate(points) if p < ev.seq]
        want: dict[str, Any] = {}
        for i in applied:
            want[deltas[i]["key"]] = deltas[i]["value"]
        assert {k: e.value for k, e in snap.entries.items()} == want
        assert sorted(s.value for s in snap.superseded) == sorted(
            v for k in want for v in [deltas[i]["value"] for i in applied
                                      if deltas[i]["key"] == k][:-1])


@settings(max_examples=300, deadline=None)
@given(reducer_cases.guided_delta_lists())
def test_with_applied_rebuilds_the_reviewed_ledger_at_every_turn(
        raw: list[dict[str, Any]]) -> None:
    """Applying a turn's prefix of the deltas (in any per-key-ordered interleaving) gives
    exactly the ledger the reviewed reduction holds at that turn."""
    deltas = [Delta.model_validate(x) for x in raw]
    try:
        ledger = Ledger.reduce(deltas)
    except LedgerError:
        return
    for t in sorted({d.turn for d in deltas} | {max(d.turn for d in deltas) + 1}):
        upto = [i for i, d in enumerate(deltas) if d.turn <= t]
        # interleave keys differently, keeping each key's own order
        by_key: dict[str, list[int]] = {}
        for i in upto:
            by_key.setdefault(deltas[i].key, []).append(i)
        order = [i for k in sorted(by_key, reverse=True) for i in by_key[k]]
        want = ledger.at(t)
        got = ledger.with_applied(order, t)
        assert got.entries == want.entries
        assert sorted(map(repr, got.superseded)) == sorted(map(repr, want.superseded))
    same = [i for i, d in enumerate(deltas) if d.key == deltas[0].key]
    if len(same) >= 2:  # a key's deltas out of their order are refused
        with pytest.raises(ValueError, match="applied after delta"):
            ledger.with_applied(list(reversed(same)), 0)
