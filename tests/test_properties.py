"""Property tests: the trace loader round-trips every valid trace and turns garbage into
InputError (never another exception); the reducer either names the first bad delta or builds
a ledger whose invariants hold."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError, LedgerError
from judge.importers.writer import trace_line
from judge.ledger import Delta, Ledger
from judge.ledger.scenario import EntryClass, Op, Persistence, Sensitivity, Source
from judge.trace import Trace, iter_traces

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def _dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


# --- valid traces -------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
texts = st.text(st.characters(codec="utf-8"), max_size=30)
scalars = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | texts | st.floats(
    allow_nan=False, allow_infinity=False)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(texts, inner, max_size=4), max_leaves=12)
json_objects = st.dictionaries(texts, json_values, max_size=4)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "assistant", "tool_call", "tool-call", "tool_result",
                                 "tool-result", "state_write", "state-write", "summary"]))
    ev: dict[str, Any] = {"kind": kind}
    base = kind.replace("-", "_")
    if base in ("user", "assistant", "summary"):
        ev["text"] = draw(texts)
    if base == "summary" and draw(st.booleans()):
        ev["reason"] = draw(st.sampled_from(["compaction", "handoff", "other words"]))
    if base == "tool_call":
        ev["tool"], ev["args"] = draw(names), draw(json_objects)
    if base == "tool_result":
        ev["tool"] = draw(names)
        if draw(st.booleans()):
            ev["result"] = draw(json_values)
        if draw(st.booleans()):
            ev["error"] = draw(texts)
    if base in ("tool_call", "tool_result") and draw(st.booleans()):
        ev["call_id"] = draw(names)
    if base == "state_write":
        ev["key"], ev["value"] = draw(names), draw(json_values)
    if draw(st.integers(0, 3)) == 0:
        ev["turn"] = draw(st.integers(0, 50))
    if draw(st.integers(0, 4)) == 0:
        ev["metadata"] = draw(json_objects)
    return ev


@st.composite
def traces(draw: st.DrawFn) -> dict[str, Any]:
    evs = draw(st.lists(events(), max_size=12))
    if draw(st.booleans()):  # explicit, strictly increasing seq with gaps
        seq = 0
        for ev in evs:
            seq += draw(st.integers(1, 5))
            ev["seq"] = seq
    tr: dict[str, Any] = {"trace_id": draw(names), "events": evs}
    if draw(st.booleans()):
        tr["scenario"] = draw(names)
    if draw(st.booleans()):
        tr["candidate"] = draw(json_objects)
    if draw(st.booleans()):
        tr["metadata"] = draw(json_objects)
    return tr


def _expected_positions(tr: dict[str, Any]) -> list[tuple[int, int]]:
    out, users = [], 0
    for i, ev in enumerate(tr["events"], start=1):
        users += ev["kind"] == "user"
        out.append((ev.get("seq", i), ev.get("turn", users)))
    return out


def _dump(t: Trace) -> dict[str, Any]:
    return t.model_dump(mode="json")


@SETTINGS
@given(st.lists(traces(), min_size=1, max_size=3))
def test_valid_traces_round_trip_through_json_and_jsonl(trs: list[dict[str, Any]]) -> None:
    expected = [_dump(Trace.model_validate(json.loads(json.dumps(tr)))) for tr in trs]
    for tr, exp in zip(trs, expected, strict=True):
        assert [(e["seq"], e["turn"]) for e in exp["events"]] == _expected_positions(tr)
    with _dir() as d:
        one = d / "one.json"
        one.write_text(json.dumps(trs[0]), encoding="utf-8")
        assert [_dump(t) for t in iter_traces(one)] == expected[:1]

        lines = d / "many.jsonl"
        lines.write_text("\n".join(json.dumps(tr) for tr in trs) + "\n", encoding="utf-8")
        assert [_dump(t) for t in iter_traces(lines)] == expected

        # streamed form: a header line, then one event per line
        streamed = d / "streamed.jsonl"
        with streamed.open("w", encoding="utf-8") as fh:
            for tr in trs:
                fh.write(json.dumps({k: v for k, v in tr.items() if k != "events"}) + "\n")
                for ev in tr["events"]:
                    fh.write(json.dumps(ev) + "\n")
        assert [_dump(t) for t in iter_traces(streamed)] == expected

        # what the importers write reads back as the same trace
        written = d / "written.jsonl"
        written.write_text("".join(trace_line(Trace.model_validate(tr)) + "\n" for tr in trs),
                           encoding="utf-8")
        assert [_dump(t) for t in iter_traces(written)] == expected


# --- garbage and mutations ------------------------------------------------------------------

def _load_all(path: Path) -> None:
    """Load in both modes: raising, and collecting errors. Only InputError may escape."""
    errors: list[InputError] = []
    list(iter_traces(path, errors))
    assert all(isinstance(e, InputError) for e in errors)
    try:
        list(iter_traces(path))
    except InputError as exc:
        assert exc.message.startswith(str(path))


SCENARIO = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "refund-once"


def _check_cli(path: Path) -> None:
    """`judge check` on the file: exit 0/1/2, and every stderr line is one judge message."""
    result = CliRunner().invoke(app, ["check", str(SCENARIO), str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1, 2)
    err = result.stderr.splitlines()
    assert all(line.startswith("judge: ") for line in err), err
    if result.exit_code == 2:
        assert err and all(str(path) in line for line in err)


@SETTINGS
@given(st.binary(max_size=200), st.sampled_from([".json", ".jsonl"]))
def test_random_bytes_give_input_error_or_traces(data: bytes, suffix: str) -> None:
    with _dir() as d:
        p = d / f"g{suffix}"
        p.write_bytes(data)
        _load_all(p)
        if suffix == ".jsonl":
            _check_cli(p)


@SETTINGS
@given(st.lists(json_values | texts, min_size=1, max_size=4), st.sampled_from([".json",
                                                                              ".jsonl"]))
def test_random_json_gives_input_error_or_traces(docs: list[Any], suffix: str) -> None:
    with _dir() as d:
        p = d / f"g{suffix}"
        p.write_text("\n".join(json.dumps(x) if not isinstance(x, str) else x for x in docs),
                     encoding="utf-8")
        _load_all(p)
        _check_cli(p)


MUTATIONS = ["drop_required", "bad_kind", "unknown_field", "dup_seq", "seq_value",
             "args_value", "events_value", "trace_id_value", "drop_trace_id", "top_extra"]


@SETTINGS
@given(traces(), st.sampled_from(MUTATIONS), json_values, st.integers(0, 100))
def test_mutated_traces_give_input_error(tr: dict[str, Any], how: str, junk: Any,
                                         pick: int) -> None:
    evs = tr["events"]
    certain = True  # does this mutation always make the trace invalid?
    if how in ("drop_required", "bad_kind", "unknown_field", "seq_value", "args_value",
               "dup_seq") and not evs:
        evs.append({"kind": "user", "text": "hi"})
    ev = evs[pick % len(evs)] if evs else {}
    if how == "drop_required":
        base = ev["kind"].replace("-", "_")
        req = {"user": "text", "assistant": "text", "summary": "text", "tool_call": "tool",
               "tool_result": "tool", "state_write": "key"}[base]
        del ev[req]
    elif how == "bad_kind":
        ev["kind"] = "k-" + str(junk)
    elif how == "unknown_field":
        ev["colour"] = junk
    elif how == "dup_seq":
        evs.append({**evs[-1], "seq": evs[-1].get("seq", len(evs))})
    elif how == "seq_value":
        ev["seq"] = junk  # may still be valid ("7", 3.0, null): only no other exception
        certain = False
    elif how == "args_value":
        if ev["kind"].replace("-", "_") != "tool_call":
            ev.clear()
            ev.update({"kind": "tool_call", "tool": "t"})
        ev["args"] = junk
        certain = not isinstance(junk, dict)
    elif how == "events_value":
        tr["events"] = junk
        certain = not isinstance(junk, list)
    elif how == "trace_id_value":
        tr["trace_id"] = junk
        certain = not isinstance(junk, str) or junk == ""
    elif how == "drop_trace_id":
        del tr["trace_id"]
    elif how == "top_extra":
        tr["evnets"] = junk
    with _dir() as d:
        for p in (d / "m.json", d / "m.jsonl"):
            p.write_text(json.dumps(tr), encoding="utf-8")
            if certain:
                errors: list[InputError] = []
                assert list(iter_traces(p, errors)) == []
                assert len(errors) == 1 and errors[0].message.startswith(str(p))
            _load_all(p)
        _check_cli(p)  # the .jsonl one


# --- the reducer ----------------------------------------------------------------------------

@st.composite
def delta_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    turn = 0
    for _ in range(draw(st.integers(0, 14))):
        turn = max(0, turn + draw(st.sampled_from([0, 0, 1, 1, 2, -1])))
        d: dict[str, Any] = {
            "turn": turn, "op": draw(st.sampled_from(list(Op))).value,
            "key": draw(st.sampled_from(["a", "b", "c"])),
            "source": draw(st.sampled_from(list(Source))).value,
        }
        if draw(st.booleans()):
            d["value"] = draw(st.integers(0, 5) | st.sampled_from(["x", "y"]))
        if draw(st.integers(0, 2)):
            d["class"] = draw(st.sampled_from(list(EntryClass))).value
        if draw(st.integers(0, 2)):
            d["persistence"] = draw(st.sampled_from(list(Persistence))).value
        if draw(st.integers(0, 2)):
            d["sensitivity"] = draw(st.sampled_from(list(Sensitivity))).value
        out.append(d)
    return out


@st.composite
def guided_delta_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly legal sequences (so that real ledgers get built), with rare rule breaks."""
    out: list[dict[str, Any]] = []
    state: dict[str, tuple[str, str]] = {}  # key -> (class, status)
    turn = 0
    for n in range(draw(st.integers(1, 16))):
        turn += draw(st.sampled_from([0, 0, 1, 2]))
        key = draw(st.sampled_from(["a", "b", "c", "d"]))
        cheat = draw(st.integers(0, 9)) == 0  # a random, possibly illegal delta
        src = draw(st.sampled_from(list(Source))).value if cheat else "user"
        d: dict[str, Any] = {"turn": turn, "key": key, "source": src, "value": n}
        if key not in state:
            cls = draw(st.sampled_from(list(EntryClass))).value
            op = "complete" if cls in ("goal", "completion") and draw(st.booleans()) else "set"
            d.update({"op": op, "class": cls,
                      "persistence": draw(st.sampled_from(list(Persistence))).value,
                      "sensitivity": draw(st.sampled_from(list(Sensitivity))).value})
            if cls == "mutable_fact":
                d["source"] = draw(st.sampled_from(list(Source))).value
            state[key] = (cls, "completed" if op == "complete" else "active")
        else:
            cls, status = state[key]
            ops = {"active": ["supersede", "revoke", "fail"]
                   + (["complete"] if cls in ("goal", "completion") else []),
                   "completed": ["fail", "revoke"],
                   "failed": ["set"] + (["complete"] if cls in ("goal", "completion") else []),
                   "revoked": ["set"]}[status]
            op = draw(st.sampled_from(list(Op))).value if cheat else draw(st.sampled_from(ops))
            d["op"] = op
            if cls == "mutable_fact" and not cheat:
                d["source"] = draw(st.sampled_from(list(Source))).value
            state[key] = (cls, {"supersede": "active", "set": "active", "complete": "completed",
                                "revoke": "revoked", "fail": "failed"}[op])
        out.append(d)
    return out


AUTHORITY = {EntryClass.GOAL, EntryClass.CONSTRAINT, EntryClass.PERMISSION}


@settings(max_examples=400, deadline=None)
@given(delta_lists() | guided_delta_lists())
def test_reducer_names_the_first_bad_delta_or_keeps_its_invariants(
        raw: list[dict[str, Any]]) -> None:
    deltas = [Delta.model_validate(x) for x in raw]
    try:
        ledger = Ledger.reduce(deltas, file="s.yaml")
    except LedgerError as exc:
        i = int(exc.path.removeprefix("ledger[").removesuffix("]")) if exc.path else -1
        assert exc.path == f"ledger[{i}]" and 0 <= i < len(deltas)
        assert exc.message.startswith(f"s.yaml: ledger[{i}]: field '")
        Ledger.reduce(deltas[:i])  # everything before the named delta is fine
        return
    turns = [x.turn for x in deltas]
    span = range(min(turns, default=0) - 1, max(turns, default=0) + 3)
    history: dict[str, list[tuple[int, str]]] = {}
    for t in span:
        snap = ledger.at(t)
        applied = [x for x in deltas if x.turn <= t]
        # superseded values stay visible: one record per supersede, with the replaced value
        sups = [x for x in applied if x.op is Op.SUPERSEDE]
        assert len(snap.superseded) == len(sups)
        for s, x in zip(snap.superseded, sups, strict=True):
            assert s.key == x.key and s.superseded_turn == x.turn
        for key, e in snap.entries.items():
            history.setdefault(key, []).append((t, e.status))
            # a non-user source never grants authority
            if e.status == "active" and e.class_ in AUTHORITY:
                assert e.source is Source.USER
            # turn-persistent entries do not outlive their turn
            if e.persistence is Persistence.TURN and e.since_turn < t:
                assert e.status != "active"
            assert e.value == snap.value(key) or e.status not in ("active", "completed")
    # completed stays completed unless a later delta records failure or a revocation
    for key, seen in history.items():
        for (t1, s1), (t2, s2) in pairwise(seen):
            if s1 == "completed" and s2 != "completed":
                assert any(x.key == key and t1 < x.turn <= t2 and x.op in (Op.FAIL, Op.REVOKE)
                           for x in deltas)
