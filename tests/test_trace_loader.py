from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from judge.errors import InputError
from judge.trace import Event, Trace, fast, iter_traces
from judge.trace.fast import (
    parse_trace_data,
    parse_trace_json,
    validate_event_data_json,
    validate_event_json,
)
from judge.trace.loader import iter_trace_streams
from judge.trace.model import ALLOWED_FIELDS, KIND_ALIASES, EventKind

TRACE = {
    "trace_id": "t/1", "scenario": "s", "candidate": {"model": "m"},
    "events": [
        {"kind": "user", "text": "hi"},
        {"kind": "tool-call", "tool": "get", "args": {"id": 1}},
        {"kind": "tool_result", "tool": "get", "result": {"id": 1}},
        {"kind": "user", "text": "again"},
    ],
}


def test_defaults_and_aliases(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps(TRACE))
    (trace,) = list(iter_traces(p))
    assert [e.seq for e in trace.events] == [1, 2, 3, 4]
    assert [e.turn for e in trace.events] == [1, 1, 1, 2]
    assert trace.events[1].kind.value == "tool_call"


def test_bad_line_names_file_line_field_and_keeps_others(tmp_path: Path) -> None:
    bad = {**TRACE, "trace_id": "t/2",
           "events": [{"kind": "user", "text": "a"}, {"kind": "shout", "text": "b"}]}
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([json.dumps(TRACE), json.dumps(bad), "{not json", json.dumps(TRACE)]))
    errors: list[InputError] = []
    traces = list(iter_traces(p, errors))
    assert len(traces) == 2
    assert len(errors) == 2
    assert f"{p}:2: events[1].kind" in errors[0].message
    assert f"{p}:3" in errors[1].message and "malformed JSON" in errors[1].message


def test_duplicate_seq_is_an_error(tmp_path: Path) -> None:
    bad = {**TRACE, "events": [{"seq": 1, "kind": "user", "text": "a"},
                               {"seq": 1, "kind": "user", "text": "b"}]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="duplicate seq 1"):
        list(iter_traces(p))


def test_streamed_trace(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    lines = [json.dumps({"trace_id": "big"})]
    lines += [json.dumps({"kind": "user", "text": f"m{i}"}) for i in range(50)]
    lines += [json.dumps(TRACE)]
    p.write_text("\n".join(lines) + "\n")
    streams = iter_trace_streams(p)
    first = next(streams)
    assert first.header.trace_id == "big"
    assert sum(1 for _ in first.events) == 50
    second = next(streams)
    assert second.header.trace_id == "t/1"


def test_lines_end_as_in_text_mode_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    """LF, CRLF and a lone CR end a line; a line of (Unicode) white space is blank."""
    p = tmp_path / "t.jsonl"
    header = json.dumps({"trace_id": "s"})
    event = json.dumps({"kind": "user", "text": "hi"})
    text = (json.dumps(TRACE) + "\r\n \u3000\n\x1c\r" + header + "\r" + event + "\n\u2028\n"
            + event + "\r\n" + json.dumps(TRACE) + "\r{bad\r" + json.dumps(TRACE))
    p.write_bytes(text.encode())
    errors: list[InputError] = []
    traces = list(iter_traces(p, errors))
    assert [t.trace_id for t in traces] == ["t/1", "s", "t/1", "t/1"]
    assert [e.text for e in traces[1].events] == ["hi", "hi"]
    assert [e.message for e in errors] == [
        f"{p}:9: malformed JSON (Expecting property name enclosed in double quotes at column 2)"]


def test_a_line_that_is_not_utf8_is_one_error_and_reading_goes_on(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    whole = json.dumps(TRACE).encode()
    header = json.dumps({"trace_id": "s"}).encode()
    event = json.dumps({"kind": "user", "text": "hi"}).encode()
    p.write_bytes(b"\n".join([
        whole,
        whole.replace(b'"hi"', b'"h\xffi"'),  # a whole trace: the fast path refuses it
        b'{"trace_id": "x\xc3"}',  # not a whole trace
        header, event, event.replace(b"hi", b"\xe9t\xe9"), event,  # the trace is lost
        header, event,
        whole,
    ]) + b"\n")
    errors: list[InputError] = []
    traces = list(iter_traces(p, errors))
    assert [t.trace_id for t in traces] == ["t/1", "s", "t/1"]
    assert [e.line for e in errors] == [2, 3, 6]
    assert all("not UTF-8 text (invalid" in e.message for e in errors)
    assert errors[0].message.startswith(f"{p}:2: not UTF-8 text (invalid start byte at byte ")


# --- the whole-trace fast path (judge.trace.fast) against the model -------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(0, 5),
                    st.sampled_from(["", "x", "7", "order-13"]), st.text(max_size=4))
values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(["a", "id"]), kids,
                                                 max_size=2)), max_leaves=5)
EVENT_FIELDS = ["text", "tool", "args", "call_id", "result", "error", "key", "value",
                "reason", "state", "phase", "metadata", "bogus"]
KINDS = ["user", "assistant", "tool_call", "tool-call", "tool_result", "tool-result",
         "state_write", "state-write", "summary", "state_snapshot", "state-snapshot", "shout",
         3, None]


@st.composite
def raw_event(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(values)  # not even an object
    ev: dict[str, Any] = {}
    if draw(st.integers(0, 10)):
        ev["kind"] = draw(st.sampled_from(KINDS))
    for name in draw(st.lists(st.sampled_from(EVENT_FIELDS), max_size=4, unique=True)):
        ev[name] = draw(st.one_of(values, st.dictionaries(st.sampled_from(["id", "a"]),
                                                          values, max_size=2)))
    if draw(st.booleans()):
        ev["seq"] = draw(st.one_of(st.integers(-1, 30), st.booleans(), st.just("4"),
                                   st.just(2.0), st.just(2.5), st.none()))
    if draw(st.booleans()):
        ev["turn"] = draw(st.one_of(st.integers(-1, 5), st.just(2.0), st.none()))
    return ev


@st.composite
def valid_event(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "assistant", "tool_call", "tool-call", "tool_result",
                                 "state-write", "summary", "state_snapshot",
                                 "state-snapshot"]))
    ev: dict[str, Any] = {"kind": kind}
    if kind in ("user", "assistant", "summary"):
        ev["text"] = draw(st.text(max_size=5))
    if kind.startswith("tool"):
        ev["tool"] = draw(st.sampled_from(["get", "put"]))
    if kind in ("tool_call", "tool-call"):
        ev["args"] = draw(st.dictionaries(st.sampled_from(["id", "a"]), values, max_size=2))
    if kind == "tool_result" and draw(st.booleans()):
        ev["result"] = draw(values)
    if kind == "state-write":
        ev["key"] = "k"
        ev["value"] = draw(values)
    if kind.startswith("state-snap") or kind.startswith("state_snap"):
        ev["state"] = draw(st.dictionaries(
            st.sampled_from(["orders", "users"]),
            st.dictionaries(st.sampled_from(["o1", "u1"]),
                            st.dictionaries(st.sampled_from(["a", "id"]), values, max_size=2),
                            max_size=2), max_size=2))
        if draw(st.booleans()):
            ev["phase"] = draw(st.sampled_from(["start", "end"]))
    if draw(st.booleans()):
        ev["metadata"] = {"m": draw(values)}
    return ev


REQUIRED = {"user": ["text"], "assistant": ["text"], "summary": ["text"],
            "tool_call": ["tool", "args"], "tool-call": ["tool", "args"],
            "tool_result": ["tool"], "state-write": ["key"], "state_snapshot": ["state"],
            "state-snapshot": ["state"]}
WRONG = {"text": [3, [], {}], "tool": [1, ["x"]], "args": ["x", [1], 2], "call_id": [5],
         "error": [False], "key": [{}], "reason": [1.5], "metadata": ["m", [1]],
         "state": [[1], {"orders": 1}, {"orders": [1]}, "x"], "phase": ["middle", 1],
         "seq": [0, -1, "x", 2.5, {}], "turn": [-1, "y", 0.5]}


@st.composite
def mutated_event(draw: st.DrawFn) -> Any:
    """A valid event with one thing wrong (or, now and then, nothing wrong)."""
    ev = draw(valid_event())
    how = draw(st.sampled_from(["none", "extra", "extra", "drop", "null", "wrong", "kind",
                                "raw"]))
    if how == "extra":  # a field this kind may not carry, with a value of a plausible type
        kind = EventKind(KIND_ALIASES.get(ev["kind"], ev["kind"]))
        foreign = sorted(set(EVENT_FIELDS) - ALLOWED_FIELDS[kind])
        ev[draw(st.sampled_from(foreign))] = draw(st.one_of(
            st.none(), st.text(max_size=3), st.dictionaries(st.just("a"), scalars)))
    elif how == "drop":
        ev.pop(draw(st.sampled_from([*REQUIRED[ev["kind"]], "kind"])))
    elif how == "null":
        ev[draw(st.sampled_from([*REQUIRED[ev["kind"]], "kind"]))] = None
    elif how == "wrong":
        name = draw(st.sampled_from(sorted(WRONG)))
        ev[name] = draw(st.sampled_from(WRONG[name]))
    elif how == "kind":
        ev["kind"] = draw(st.sampled_from(KINDS))
    elif how == "raw":
        return draw(raw_event())
    return ev


@st.composite
def raw_trace(draw: st.DrawFn) -> Any:
    """A trace line: valid, or with one thing wrong in its header or in one event."""
    evs = draw(st.lists(valid_event(), max_size=8))
    if draw(st.booleans()):  # explicit positions, sometimes out of order
        for i, ev in enumerate(evs):
            ev["seq"] = i + 1 if draw(st.integers(0, 8)) else draw(st.integers(1, 9))
            ev["turn"] = draw(st.integers(0, 3))
    trace: dict[str, Any] = {"trace_id": "t/1", "events": evs}
    if draw(st.booleans()):
        trace["scenario"] = "s"
    if draw(st.booleans()):
        trace["candidate"] = {"model": "m"}
    how = draw(st.sampled_from(["none", "event", "event", "header", "drop"]))
    if how == "event":
        evs.insert(draw(st.integers(0, len(evs))), draw(mutated_event()))
    elif how == "header":
        name, value = draw(st.sampled_from([
            ("trace_id", ""), ("trace_id", 3), ("scenario", 2), ("candidate", [1]),
            ("candidate", "m"), ("metadata", None), ("bogus", 1), ("events", {}),
            ("events", None)]))
        trace[name] = value
    elif how == "drop":
        trace.pop(draw(st.sampled_from(["trace_id", "events"])))
    return trace


def model_result(trace: Any) -> Trace | None:
    try:
        return Trace.model_validate(trace)
    except (ValidationError, ValueError):
        return None


@settings(max_examples=600, deadline=None)
@given(trace=raw_trace())
def test_fast_trace_path_accepts_only_what_the_model_accepts_and_builds_the_same(
        trace: Any) -> None:
    fast = parse_trace_json(json.dumps(trace))
    expected = model_result(trace)
    if fast is None:
        return  # the loader then takes the careful path (checked below)
    assert expected is not None, f"fast path accepted what the model refuses: {trace!r}"
    assert fast.model_dump() == expected.model_dump()
    assert fast.model_fields_set == expected.model_fields_set
    for got, want in zip(fast.events, expected.events, strict=True):
        assert type(got) is Event and got.kind is want.kind
        assert got.model_fields_set == want.model_fields_set


@settings(max_examples=600, deadline=None)
@given(trace=raw_trace())
def test_dict_trace_path_accepts_what_the_fast_path_does_and_builds_the_same(
        trace: Any) -> None:
    """`parse_trace_data` (events as dicts, what the checks read) against the models."""
    text = json.dumps(trace)
    models = parse_trace_json(text)
    data = parse_trace_data(text)
    assert (data is None) == (models is None), trace
    if data is None or models is None:
        return
    header, events = data
    assert header.model_dump() == models.model_dump(exclude={"events"})
    assert len(events) == len(models.events)
    for got, want in zip(events, models.events, strict=True):
        # the fields the input gave (and seq/turn, filled), as the model holds them
        assert set(got) == want.model_fields_set, (got, want)
        assert {name: got.get(name) for name in Event.model_fields} == vars(want)
        assert got["kind"] is want.kind


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(raw_trace().filter(lambda t: "events" in t), min_size=1, max_size=4))
def test_loader_gives_what_the_model_gives_line_by_line(
        tmp_path: Path, traces: list[Any]) -> None:
    """Whole-trace lines: the traces the model accepts, in order; one error per other line."""
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in traces))
    errors: list[InputError] = []
    loaded = list(iter_traces(p, errors))
    expected = [(i + 1, model_result(t)) for i, t in enumerate(traces)]
    assert [t.model_dump() for t in loaded] == [
        e.model_dump() for _, e in expected if e is not None]
    assert [e.line for e in errors] == [line for line, e in expected if e is None]


def test_fast_trace_path_takes_ordinary_traces() -> None:
    # the Rust-only validators were built (not the models' own, the fallback)
    built = (fast._validate_json, validate_event_json)
    models = (Trace.__pydantic_validator__, Event.__pydantic_validator__)
    assert all(getattr(b, "__self__", None) is not m for b, m in zip(built, models, strict=True))
    assert fast._data is not None  # and the ones to dicts
    assert parse_trace_json(json.dumps(TRACE)) is not None
    examples = Path(__file__).resolve().parent.parent / "examples" / "scenarios"
    traces = sorted(examples.glob("*/*.json"))
    assert traces
    for path in traces:
        got = parse_trace_json(path.read_text())
        assert got is not None, path
        assert got == Trace.model_validate_json(path.read_text())


@pytest.mark.parametrize("seqs", [[1, 1], [2, 1], [1, 3, 2], [5, 6, 6]])
def test_seq_must_increase_when_every_position_is_given(seqs: list[int]) -> None:
    events = [{"kind": "user", "text": "a", "seq": s, "turn": 1} for s in seqs]
    trace = {"trace_id": "t", "events": events}
    assert parse_trace_json(json.dumps(trace)) is None
    with pytest.raises(ValidationError, match="seq"):
        Trace.model_validate(trace)


@settings(max_examples=400, deadline=None)
@given(ev=mutated_event())
def test_fast_event_path_accepts_only_what_the_model_accepts(ev: Any) -> None:
    """The per-line validator of streamed traces, against `Event.model_validate`."""
    try:
        got: Event | None = validate_event_json(json.dumps(ev))
    except ValidationError:
        got = None
    try:
        want: Event | None = Event.model_validate(ev)
    except ValidationError:
        want = None
    if got is not None:
        assert want is not None, f"fast path accepted what the model refuses: {ev!r}"
        assert got.model_dump() == want.model_dump()
        assert got.model_fields_set == want.model_fields_set
    try:
        data: dict[str, Any] | None = dict(validate_event_data_json(json.dumps(ev)))
    except ValidationError:
        data = None
    assert (data is None) == (got is None), ev
    if data is not None and got is not None:
        assert set(data) == got.model_fields_set
        assert {name: data.get(name) for name in Event.model_fields} == vars(got)


def test_an_unreadable_path_is_one_error(tmp_path: Path) -> None:
    for name in ("dir.jsonl", "dir.json"):
        (tmp_path / name).mkdir()
        errors: list[InputError] = []
        assert list(iter_traces(tmp_path / name, errors)) == []
        assert [e.message for e in errors] == [
            f"{tmp_path / name}: is a directory, not a file"]
