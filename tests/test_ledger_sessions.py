"""Sessions in one trace (issue 27): the scenario's `sessions:` plan, the session-aware
reducer, `judge ledger --session`, and the trace's `session` field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError, LedgerError
from judge.ledger.loader import load_scenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import Delta, Op, Persistence
from judge.ledger.sessions import SessionPlan, SessionSpec
from judge.trace.fast import parse_trace_data, parse_trace_json
from judge.trace.loader import iter_event_streams
from judge.trace.model import Trace

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "tenant-sessions"
PLAN = [SessionSpec(id="s1", first_turn=1), SessionSpec(id="s2", first_turn=3)]


def _d(turn: int, op: str, key: str, value: Any = None, **kw: Any) -> Delta:
    first = {"class": "mutable_fact", "persistence": "session", "sensitivity": "normal"}
    extra = first if op in ("set", "complete") else {}
    return Delta.model_validate({"turn": turn, "op": op, "key": key, "value": value,
                                 "source": kw.pop("source", "user"), **extra, **kw})


def test_a_session_scoped_value_expires_when_the_next_session_starts() -> None:
    ledger = Ledger.reduce([_d(1, "set", "gate", "4417"),
                            _d(2, "set", "pref", "back door", persistence="until_replaced",
                               **{"class": "constraint"})], sessions=PLAN)
    assert ledger.at(2).entries["gate"].status == "active"
    at3 = ledger.at(3)
    assert at3.entries["gate"].status == "expired"
    assert at3.entries["gate"].session == "s1" and at3.session == "s2"
    assert at3.entries["pref"].status == "active"  # until_replaced carries over
    assert ledger.at(3).to_dict()["session"] == "s2"


def test_without_a_plan_nothing_expires_at_a_session() -> None:
    ledger = Ledger.reduce([_d(1, "set", "gate", "4417")])
    assert ledger.at(10).entries["gate"].status == "active"
    assert "session" not in ledger.at(10).to_dict()
    assert "session" not in ledger.at(10).entries["gate"].to_dict()


def test_a_task_scoped_entry_ends_with_its_session_and_a_completion_stays() -> None:
    ledger = Ledger.reduce([
        _d(1, "set", "goal", "help", persistence="task", **{"class": "goal"}),
        _d(1, "complete", "done", "placed", persistence="task", sensitivity="costly",
           **{"class": "completion"})], sessions=PLAN)
    at3 = ledger.at(3)
    assert at3.entries["goal"].status == "expired"
    assert at3.entries["done"].status == "completed"


def test_an_expired_session_value_cannot_be_superseded_only_set_again() -> None:
    base = [_d(1, "set", "gate", "4417")]
    with pytest.raises(LedgerError) as err:
        Ledger.reduce([*base, _d(3, "supersede", "gate", "9021")], file="s.yaml",
                      sessions=PLAN)
    assert err.value.path == "ledger[1]" and err.value.field == "op"
    assert "only an active key can be superseded (it is expired)" in err.value.message
    ledger = Ledger.reduce([*base, _d(3, "set", "gate", "9021")], sessions=PLAN)
    assert ledger.at(3).value("gate") == "9021" and ledger.at(3).entries["gate"].session == "s2"


def test_newest_authorized_value_wins_across_sessions() -> None:
    pref = {"persistence": "until_replaced", "class": "constraint"}
    ledger = Ledger.reduce([_d(1, "set", "pref", "back door", **pref),
                            _d(3, "supersede", "pref", "concierge")], sessions=PLAN)
    assert ledger.at(2).value("pref") == "back door"
    at3 = ledger.at(3)
    assert at3.value("pref") == "concierge"
    assert [(s.value, s.set_turn, s.superseded_turn) for s in at3.superseded] == [
        ("back door", 1, 3)]
    # a tool result may not replace the user's constraint, in any session
    with pytest.raises(LedgerError, match="a tool result may update a fact but never"):
        Ledger.reduce([_d(1, "set", "pref", "back door", **pref),
                       _d(3, "supersede", "pref", "side door", source="tool")],
                      sessions=PLAN)


@pytest.mark.parametrize(("session", "why"), [
    ("s1", "says session 's1', but turn 3 is in session 's2'"),
    ("s9", "no session 's9' in sessions: (s1, s2)"),
])
def test_a_delta_naming_the_wrong_session_is_refused(session: str, why: str) -> None:
    with pytest.raises(LedgerError) as err:
        Ledger.reduce([_d(3, "set", "gate", "1", session=session)], file="s.yaml",
                      sessions=PLAN)
    assert why in err.value.message
    assert err.value.path == "ledger[0]" and err.value.field == "session"
    with pytest.raises(LedgerError, match="the scenario lists no sessions"):
        Ledger.reduce([_d(3, "set", "gate", "1", session="s2")])


@pytest.mark.parametrize(("sessions", "why"), [
    ("[{id: a, first_turn: 1}, {id: a, first_turn: 3}]", "session 'a' is listed twice"),
    ("[{id: a, first_turn: 3}, {id: b, first_turn: 3}]", "session 'b' starts at turn 3"),
    ("[{id: a}]", "Field required"),
    ("[{id: '', first_turn: 1}]", "at least 1 character"),
])
def test_a_bad_session_plan_names_file_line_and_field(tmp_path: Path, sessions: str,
                                                     why: str) -> None:
    f = tmp_path / "scenario.yaml"
    f.write_text(f"id: x\ngoal: g\nsessions: {sessions}\n")
    with pytest.raises(InputError) as err:
        load_scenario(f)
    assert why in err.value.message
    assert err.value.message.startswith(f"{f}:3: sessions")


def test_session_plan_lookups() -> None:
    plan = SessionPlan.of([SessionSpec(id="a", first_turn=2), SessionSpec(id="b", first_turn=5)])
    assert [plan.session_of(t) for t in range(7)] == ["a"] * 5 + ["b"] * 2
    assert plan.turns_of("a") == (0, 4) and plan.turns_of("b") == (5, None)
    assert plan.crosses(4, 5) and not plan.crosses(0, 4) and not SessionPlan().crosses(0, 9)


# --- properties -------------------------------------------------------------------------

KEYS = {"k_session": Persistence.SESSION, "k_task": Persistence.TASK,
        "k_turn": Persistence.TURN, "k_carry": Persistence.UNTIL_REPLACED,
        "k_carry2": Persistence.UNTIL_REPLACED}


@st.composite
def plans_and_deltas(draw: st.DrawFn) -> tuple[list[SessionSpec], list[Delta]]:
    """A session plan and deltas the transition rules accept, built with a shadow of what
    the reducer holds (which key is active at the current turn)."""
    starts = sorted(draw(st.sets(st.integers(0, 12), min_size=1, max_size=4)))
    plan = [SessionSpec(id=f"s{i}", first_turn=t) for i, t in enumerate(starts)]
    sp = SessionPlan.of(plan)
    turns = sorted(draw(st.lists(st.integers(0, 14), min_size=1, max_size=14)))
    deltas: list[Delta] = []
    set_at: dict[str, int] = {}  # key -> turn of its last set/supersede
    for i, turn in enumerate(turns):
        key = draw(st.sampled_from(sorted(KEYS)))
        pers = KEYS[key]
        prev = set_at.get(key)
        active = prev is not None and (
            (pers is not Persistence.TURN or prev == turn)
            and (pers is Persistence.UNTIL_REPLACED or not sp.crosses(prev, turn)))
        value = f"{key}-v{i}"
        if active:
            deltas.append(Delta.model_validate({"turn": turn, "op": "supersede", "key": key,
                                                "value": value, "source": "user"}))
        else:
            deltas.append(Delta.model_validate({
                "turn": turn, "op": "set", "key": key, "value": value, "source": "user",
                "class": "mutable_fact", "persistence": pers.value, "sensitivity": "normal",
                **({"session": sp.session_of(turn)} if draw(st.booleans()) else {})}))
        set_at[key] = turn
    return plan, deltas


@settings(max_examples=300, deadline=None)
@given(plans_and_deltas())
def test_newest_value_wins_and_session_values_never_survive(
        case: tuple[list[SessionSpec], list[Delta]]) -> None:
    plan, deltas = case
    sp = SessionPlan.of(plan)
    ledger = Ledger.reduce(deltas, sessions=plan)
    for t in range(0, 17):
        snap = ledger.at(t)
        assert snap.session == sp.session_of(t)
        for key, pers in KEYS.items():
            mine = [d for d in deltas if d.key == key and d.turn <= t]
            e = snap.entries.get(key)
            if not mine:
                assert e is None
                continue
            last = mine[-1]
            # the oracle: the newest value holds, unless its turn (turn-scoped) or its
            # session (every scope but until_replaced) has ended
            holds = (pers is not Persistence.TURN or last.turn == t) and (
                pers is Persistence.UNTIL_REPLACED or sp.session_of(last.turn) == sp.session_of(t))
            assert e is not None and e.value == last.value
            assert e.status == ("active" if holds else "expired"), (key, t, e)
            assert e.session == sp.session_of(last.turn)
            if e.status == "active" and pers is not Persistence.UNTIL_REPLACED:
                assert sp.session_of(e.since_turn) == snap.session
        # the judge's view (every delta applied up to t) is the checks' view
        applied = [i for i, d in enumerate(deltas) if d.turn <= t]
        view = ledger.with_applied(applied, t)
        assert {k: (e.status, e.value) for k, e in view.entries.items()} == {
            k: (e.status, e.value) for k, e in snap.entries.items()}
        assert view.session == snap.session


def test_a_turn_value_before_the_first_session_expires_without_a_crossing() -> None:
    """Found by the explore profile (seed 1): a plan starting at turn 1 and a turn-scoped
    value set at turn 0 — expired at turn 1 by its turn ending, not by a session boundary;
    superseding it is refused all the same."""
    plan = [SessionSpec(id="s0", first_turn=1)]
    deltas = [Delta.model_validate({"turn": 0, "op": "set", "key": "k", "value": "v",
                                    "class": "mutable_fact", "persistence": "turn",
                                    "sensitivity": "normal", "source": "user"})]
    ledger = Ledger.reduce(deltas, sessions=plan)
    assert ledger.at(1).entries["k"].status == "expired"
    assert not SessionPlan.of(plan).crosses(0, 1)
    bad = Delta.model_validate({"turn": 1, "op": "supersede", "key": "k", "value": "new",
                                "source": "user"})
    with pytest.raises(LedgerError, match="it is expired"):
        Ledger.reduce([*deltas, bad], file="s.yaml", sessions=plan)


@settings(max_examples=150, deadline=None)
@given(plans_and_deltas(), st.data())
def test_superseding_an_expired_session_value_is_always_refused(
        case: tuple[list[SessionSpec], list[Delta]], data: st.DataObject) -> None:
    plan, deltas = case
    sp = SessionPlan.of(plan)
    ledger = Ledger.reduce(deltas, sessions=plan)
    last = deltas[-1].turn
    later = [s.first_turn for s in plan if s.first_turn > last]
    gone = [k for k, e in ledger.at(later[0]).entries.items()
            if e.status == "expired"] if later else []
    if not gone:
        return
    key = data.draw(st.sampled_from(gone))
    bad = Delta.model_validate({"turn": later[0], "op": "supersede", "key": key,
                                "value": "new", "source": "user"})
    with pytest.raises(LedgerError, match="it is expired") as err:
        Ledger.reduce([*deltas, bad], file="s.yaml", sessions=plan)
    assert err.value.path == f"ledger[{len(deltas)}]"
    entry = ledger.at(last).entries[key]
    # expired by the session boundary, or a turn-scoped value by its turn ending (a plan
    # whose first session starts after turn 0 expires a turn-0 value with no crossing)
    assert entry.persistence is Persistence.TURN or sp.crosses(entry.since_turn, later[0])
    ok = bad.model_copy(update={"op": Op.SET, "class_": deltas[0].class_,
                                "persistence": KEYS[key]})
    Ledger.reduce([*deltas, Delta.model_validate(ok.model_dump(by_alias=True))],
                  sessions=plan)


# --- judge ledger --session ---------------------------------------------------------------


def _ledger(*args: str) -> tuple[int, Any, str]:
    r = CliRunner().invoke(app, ["ledger", str(EXAMPLE), *args])
    out = json.loads(r.stdout) if "--format" in args and r.exit_code == 0 else r.stdout
    return r.exit_code, out, r.stderr


def _by_key(doc: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    return {e["key"]: (status, e["value"]) for status in ("active", "completed", "expired",
                                                           "revoked", "failed")
            for e in doc[status]}


def test_judge_ledger_shows_each_session_and_what_carries() -> None:
    code, mon, _ = _ledger("--session", "monday", "--format", "json")
    assert code == 0 and mon["session"] == "monday" and mon["turn"] == 2
    assert mon["view"] == "session"
    assert _by_key(mon)["gateCode"] == ("active", "4417")
    assert _by_key(mon)["dropOffPreference"] == ("active", "back door")
    code, thu, _ = _ledger("--session", "thursday", "--format", "json")
    assert code == 0 and thu["session"] == "thursday" and thu["turn"] == 3
    assert _by_key(thu)["gateCode"] == ("expired", "4417")
    assert _by_key(thu)["dropOffPreference"] == ("active", "concierge")
    assert [(s["key"], s["value"]) for s in thu["superseded"]] == [
        ("dropOffPreference", "back door")]
    code, carry, _ = _ledger("--session", "monday", "--cross-session", "--format", "json")
    assert code == 0 and carry["view"] == "cross-session"
    assert "gateCode" not in _by_key(carry)  # Monday's gate code does not carry into Thursday
    assert _by_key(carry)["dropOffPreference"] == ("active", "back door")
    code, early, _ = _ledger("--session", "monday", "--turn", "1", "--format", "json")
    assert code == 0 and "gateCode" not in _by_key(early)
    code, text, _ = _ledger("--session", "thursday")
    assert code == 0 and "session thursday" in text and "session monday" in text


@pytest.mark.parametrize(("args", "why"), [
    (["--session", "friday"], "no session 'friday' in sessions: (monday, thursday)"),
    (["--session", "monday", "--turn", "3"], "--turn 3 is not in session 'monday' (turns 0-2)"),
])
def test_judge_ledger_session_usage_errors(args: list[str], why: str) -> None:
    code, _, err = _ledger(*args)
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1


def test_judge_ledger_session_needs_a_plan() -> None:
    r = CliRunner().invoke(app, ["ledger", str(EXAMPLE.parent / "refund-once"),
                                 "--session", "s1"])
    assert r.exit_code == 2 and "lists no sessions" in r.stderr


# --- the trace's session field -------------------------------------------------------------


def test_events_carry_a_session_on_every_loader_path(tmp_path: Path) -> None:
    body = {"trace_id": "t", "events": [{"kind": "user", "text": "hi", "session": "s1"},
                                         {"kind": "assistant", "text": "yo", "session": "s2"}]}
    text = json.dumps(body)
    fast = parse_trace_json(text)
    assert fast is not None
    careful = Trace.model_validate(body)
    data = parse_trace_data(text)
    assert data is not None
    assert [e.session for e in fast.events] == [e.session for e in careful.events] == [
        e["session"] for e in data[1]] == ["s1", "s2"]
    streamed = tmp_path / "t.jsonl"  # a header line, then one event per line
    streamed.write_text(json.dumps({"trace_id": "t"}) + "\n"
                        + "\n".join(json.dumps(e) for e in body["events"]) + "\n")
    sessions = [[e.get("session") for e in stream.events]
                for stream in iter_event_streams(streamed)]
    assert sessions == [["s1", "s2"]]


@pytest.mark.parametrize(("value", "why"), [
    ('""', "at least 1 character"), ("5", "valid string"), ('"' + "x" * 201 + '"', "at most 200"),
])
def test_a_bad_session_is_bad_input_naming_the_field(tmp_path: Path, value: str,
                                                    why: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"trace_id": "t", "events": [{"kind": "user", "text": "hi", '
                 f'"session": {value}}}]}}\n')
    r = CliRunner().invoke(app, ["check", str(EXAMPLE), str(f)])
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert f"{f}:1: events[0].session" in line and why in line


def test_the_trace_schema_lists_the_session() -> None:
    r = CliRunner().invoke(app, ["schema", "trace"])
    doc = json.loads(r.stdout)
    session = doc["$defs"]["Event"]["properties"]["session"]
    assert {"type": "string", "minLength": 1, "maxLength": 200} in session["anyOf"]


def test_a_trace_whose_sessions_do_not_fit_the_plan_is_bad_input(tmp_path: Path) -> None:
    doc = json.loads((EXAMPLE / "pass.json").read_text())
    doc["events"][3]["session"] = "thursday"  # turn 2 is Monday's
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["check", str(EXAMPLE), str(f)])
    assert r.exit_code == 2, r.stdout
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"judge: error: {f}: field 'session': trace 'tenant-sessions/pass': "
                           "event seq 4 (turn 2) is in session 'thursday'")
    assert "puts turn 2 in 'monday'" in line or "put turn 2 in 'monday'" in line
    doc["events"][3]["session"] = "tuesday"
    f.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["check", str(EXAMPLE), str(f)])
    assert r.exit_code == 2 and "no session of the scenario" in r.stderr


def test_a_misfit_trace_is_one_error_and_the_next_trace_is_still_checked(tmp_path: Path) -> None:
    good = json.loads((EXAMPLE / "pass.json").read_text())
    bad = json.loads(json.dumps(good))
    bad["trace_id"], bad["events"][3]["session"] = "bad", "thursday"
    streamed = tmp_path / "two.jsonl"  # header lines and event lines, two traces
    with streamed.open("w") as fh:
        for t in (bad, good):
            fh.write(json.dumps({k: v for k, v in t.items() if k != "events"}) + "\n")
            fh.writelines(json.dumps(e) + "\n" for e in t["events"])
    r = CliRunner().invoke(app, ["check", str(EXAMPLE), str(streamed), "--format", "json"])
    assert r.exit_code == 2
    assert [x["trace_id"] for x in json.loads(r.stdout)["reports"]] == ["tenant-sessions/pass"]
    (line,) = r.stderr.strip().splitlines()
    assert f"{streamed}:1: field 'session': trace 'bad'" in line
