"""The streamed fast path (pydantic-core JSON validation) agrees with the careful path, and
checks give the same report on a stream as on a materialized trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from judge.checks import run_checks
from judge.checks.runner import Checker
from judge.errors import InputError
from judge.ledger import load_scenario
from judge.trace import Trace
from judge.trace.loader import iter_event_streams, iter_trace_streams
from judge.trace.model import Event

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(0, 5),
                    st.sampled_from(["", "x", "order-13", "US", "CA", "7"]))
values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(["a", "id", "k"]), kids,
                                                 max_size=3)), max_leaves=6)
FIELDS = ["seq", "turn", "kind", "text", "tool", "args", "call_id", "result", "error", "key",
          "value", "reason", "metadata", "bogus"]
KINDS = ["user", "assistant", "tool_call", "tool-call", "tool_result", "tool-result",
         "state_write", "state-write", "summary", "shout", 3, None]


@st.composite
def raw_events(draw: st.DrawFn) -> dict[str, Any]:
    ev: dict[str, Any] = {"kind": draw(st.sampled_from(KINDS))}
    for name in draw(st.lists(st.sampled_from(FIELDS[3:]), max_size=4, unique=True)):
        if name in ("args", "metadata"):
            ev[name] = draw(st.one_of(st.dictionaries(st.sampled_from(["id", "a"]), values,
                                                      max_size=2), values))
        elif name in ("result", "value"):
            ev[name] = draw(values)
        else:
            ev[name] = draw(st.one_of(st.text(max_size=5), scalars))
    if draw(st.booleans()):
        ev["seq"] = draw(st.one_of(st.integers(-1, 50), st.booleans(), st.just("4"), st.none()))
    if draw(st.booleans()):
        ev["turn"] = draw(st.one_of(st.integers(-1, 5), st.just(2.0), st.none()))
    return ev


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ev=raw_events())
def test_fast_path_accepts_and_rejects_exactly_what_the_model_does(
        tmp_path: Path, ev: dict[str, Any]) -> None:
    try:
        expected: Event | None = Event.model_validate(ev)
    except ValidationError:
        expected = None
    p = tmp_path / "one.jsonl"
    p.write_text(json.dumps({"trace_id": "t"}) + "\n" + json.dumps(ev) + "\n")
    streams = iter_trace_streams(p)
    stream = next(streams)
    data_streams = iter_event_streams(p)  # the same with events as dicts (kept alive: the
    data = next(data_streams)  # generator owns the open file)
    if expected is None:
        for events in (stream.events, data.events):
            try:
                list(events)
            except InputError as exc:
                assert exc.line == 2 and exc.message.startswith(f"{p}:2")
            else:
                raise AssertionError(f"fast path accepted {ev!r}")
    else:
        if expected.seq is not None and expected.seq < 1:
            return
        (got,) = list(stream.events)
        if expected.seq is None:
            expected.seq = 1
        if expected.turn is None:
            expected.turn = 1 if expected.kind.value == "user" else 0
        assert got.model_dump() == expected.model_dump()
        assert got.model_fields_set == expected.model_fields_set
        (as_dict,) = list(data.events)
        assert {name: as_dict.get(name) for name in Event.model_fields} == vars(expected)


SCENARIO = {
    "id": "s", "goal": "g",
    "ledger": [
        {"turn": 0, "op": "set", "key": "country", "class": "constraint",
         "persistence": "session", "sensitivity": "safety_critical", "source": "user",
         "value": "US", "aliases": ["ship to US"]},
        {"turn": 0, "op": "set", "key": "done", "class": "completion", "persistence": "task",
         "sensitivity": "normal", "source": "user", "value": "x"},
        {"turn": 2, "op": "supersede", "key": "country", "source": "user", "value": "CA"},
    ],
    "rules": {"allowed_tools": ["get", "put"], "mutating_tools": ["put"],
              "forbidden": [{"name": "f", "tool": "put", "args": [{"path": "id", "equals": 7}]}],
              "completion": {"all_of": [{"key": "done", "tool": "put"}],
                             "success_claims": ["done"]},
              "lookups": [{"mutate": "put", "arg": "id", "lookup": "get"}],
              "confirmation": {"tools": ["put"]},
              "budgets": {"max_steps": 6, "max_identical_calls": 1}},
    "checkpoints": [{"after_turn": 1, "active": ["country"], "prohibited_tools": ["get"]}],
}

valid_events = st.lists(st.one_of(
    st.builds(lambda t: {"kind": "user", "text": t}, st.sampled_from(["yes", "hi", "no"])),
    st.builds(lambda t: {"kind": "assistant", "text": t}, st.sampled_from(["done", "ok?"])),
    st.builds(lambda tool, i: {"kind": "tool_call", "tool": tool, "args": {"id": i}},
              st.sampled_from(["get", "put", "rm"]), st.sampled_from([7, 8, "US"])),
    st.builds(lambda tool, r, e: {"kind": "tool_result", "tool": tool, "result": r,
                                  **({"error": "x"} if e else {})},
              st.sampled_from(["get", "put"]), values, st.booleans()),
    st.builds(lambda t: {"kind": "summary", "reason": "compaction", "text": t},
              st.sampled_from(["ship to US", "nothing"])),
), max_size=25)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evs=valid_events)
def test_stream_and_trace_reports_agree_and_the_veto_is_exact(
        tmp_path: Path, evs: list[dict[str, Any]]) -> None:
    sp = tmp_path / "scenario.yaml"
    sp.write_text(yaml.safe_dump(SCENARIO))
    sc = load_scenario(sp)
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([json.dumps({"trace_id": "t"}), *map(json.dumps, evs)]) + "\n")
    streams = iter_trace_streams(p)
    streamed = run_checks(sc, next(streams))
    whole = run_checks(sc, Trace.model_validate({"trace_id": "t", "events": evs}))
    assert streamed.to_dict() == whole.to_dict()
    # events as dicts (what `judge check` reads), streamed and on one line
    dicts = iter_event_streams(p)
    assert run_checks(sc, next(dicts)).to_dict() == whole.to_dict()
    line = tmp_path / "line.jsonl"
    line.write_text(json.dumps({"trace_id": "t", "events": evs}) + "\n")
    assert run_checks(sc, next(iter_event_streams(line))).to_dict() == whole.to_dict()
    assert streamed.vetoed == any(f.safety_critical and not f.passed for f in whole.findings)
    assert 0.0 <= whole.quality_score <= 1.0
    assert (whole.quality_score == 1.0) == all(
        f.passed or f.severity == "informational" for f in whole.findings)
    first = whole.first_divergence
    seqs = [f.seq for f in whole.findings if not f.passed and f.seq is not None]
    if seqs:
        assert first is not None and first.seq == min(seqs)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(valid_events, min_size=2, max_size=6))
def test_what_traces_share_does_not_leak_between_them(
        tmp_path: Path, traces: list[list[dict[str, Any]]]) -> None:
    """One Checker over many traces (shared per-tool tables, snapshots, passed findings)
    reports each trace exactly as a fresh Checker does."""
    sp = tmp_path / "scenario.yaml"
    sp.write_text(yaml.safe_dump(SCENARIO))
    sc = load_scenario(sp)
    shared = Checker(sc)
    for i, evs in enumerate(traces):
        trace = Trace.model_validate({"trace_id": f"t{i}", "events": evs})
        assert shared.check(trace).to_dict() == Checker(sc).check(trace).to_dict()


def test_one_traces_state_is_not_the_next_ones(tmp_path: Path) -> None:
    """Each kind of per-trace state, set by one trace, must be absent from the next."""
    sp = tmp_path / "scenario.yaml"
    sp.write_text(yaml.safe_dump(SCENARIO))
    checker = Checker(load_scenario(sp))
    first = [{"kind": "assistant", "text": "ok?"}, {"kind": "user", "text": "yes"},
             {"kind": "tool_call", "tool": "get", "args": {"id": 8}},
             {"kind": "tool_result", "tool": "get", "result": {"id": 8}},
             {"kind": "tool_call", "tool": "put", "args": {"id": 8}},
             {"kind": "tool_result", "tool": "put", "result": {}}]
    second = [{"kind": "tool_call", "tool": "get", "args": {"id": 8}},
              {"kind": "tool_result", "tool": "get", "result": {"id": 1}},
              {"kind": "tool_call", "tool": "put", "args": {"id": 8}}]
    a = checker.check(Trace.model_validate({"trace_id": "a", "events": first}))
    assert a.eligible and a.completion["complete"]
    b = checker.check(Trace.model_validate({"trace_id": "b", "events": second}))
    failed = {f.check for f in b.failures}
    # not looked up in this trace, not confirmed in it, the budget counts start again,
    # and the task is not complete in it
    assert {"lookup_before_mutate", "confirmation", "completion"} <= failed
    assert "budget" not in failed and b.completion["complete"] is False
    assert b.to_dict() == Checker(load_scenario(sp)).check(
        Trace.model_validate({"trace_id": "b", "events": second})).to_dict()
