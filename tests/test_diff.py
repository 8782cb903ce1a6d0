"""`judge diff` and judge.diff: alignment, presence/argument/terminal drift, normalisation,
exit codes and formats; properties: a trace has no drift against itself, and every
single-call mutation of a generated trace is found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.diff import DiffOptions, ReadOnlyPolicy, diff_traces, same
from judge.diff.terminal import reply_facts
from judge.trace import Trace

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "scenarios"


def trace(tid: str, *events: dict[str, Any], scenario: str | None = "refund") -> Trace:
    return Trace.model_validate({"trace_id": tid, "scenario": scenario, "events": list(events)})


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "tool": tool, "args": args}


def result(tool: str, error: str | None = None, **res: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"kind": "tool_result", "tool": tool, "result": res}
    if error is not None:
        ev["error"] = error
    return ev


USER = {"kind": "user", "text": "Please refund order-17."}
BASE = trace("base", USER,
             call("get_order", orderId="order-17"), result("get_order", paidCents=4200),
             call("refund_order", orderId="order-17", amountCents=4200),
             result("refund_order", refundId="rf-1"),
             {"kind": "assistant", "text": "Refund rf-1 of $42.00 is confirmed."})


def events_of(t: Trace) -> list[dict[str, Any]]:
    return [e.model_dump(exclude_none=True, exclude={"seq", "turn"}) for e in t.events]


# --- normalisation ------------------------------------------------------------------------

@pytest.mark.parametrize(("a", "b", "equal"), [
    (42, 42.0, True), (42, "42.00", True), ("$1,042.50", 1042.5, True), ("ORDER-17 ", "order-17",
                                                                          True),
    ([1, 2, 3], [3, 1, 2], True), ([1, 1, 2], [1, 2, 2], False), (True, 1, False),
    ("007", 7, False), ({"a": None}, {}, False), ("two  words", "Two words", True),
    (42, 43, False), ({"x": [{"b": 1}, {"a": 2}]}, {"x": [{"a": 2}, {"b": "1"}]}, True),
])
def test_normalisation(a: Any, b: Any, equal: bool) -> None:
    assert same(a, b) is equal


def test_reply_facts_ignore_wording() -> None:
    assert reply_facts("Refund rf-1 of $42.00 is confirmed.") == \
        reply_facts("Done: RF-1, 42 dollars, refunded!") == {"rf-1", "42"}
    assert reply_facts("Flight HAT123 on 2024-05-15 costs $1,200") == \
        {"hat123", "2024-05-15", "1200"}


# --- drift --------------------------------------------------------------------------------

def test_self_diff_has_no_drift() -> None:
    d = diff_traces(BASE, BASE)
    assert not d.drift and d.drifts == []
    assert [(b, s, t, e) for b, s, t, e in d.pairs] == [(2, 2, "get_order", True),
                                                        (4, 4, "refund_order", True)]


def test_inserted_lookup_is_listed_not_counted() -> None:
    ev = events_of(BASE)
    t = trace("t", *ev[:3], call("get_customer", customerId="c-9"),
              result("get_customer", name="Ann"), *ev[3:])
    d = diff_traces(BASE, t)
    assert not d.drift
    [lookup] = d.drifts
    assert (lookup.kind, lookup.what, lookup.tool, lookup.seq, lookup.counted) == \
        ("presence", "extra", "get_customer", 4, False)
    assert diff_traces(BASE, t, DiffOptions(count_lookups=True)).counts["presence"] == 1
    # the refund still pairs with the baseline's refund, arguments equal
    assert ("refund_order", True) in [(tool, eq) for _, _, tool, eq in d.pairs]


def test_missing_write_is_presence_and_terminal_drift() -> None:
    ev = events_of(BASE)
    t = trace("t", *ev[:3], ev[5])  # the refund call and its result removed, reply kept
    d = diff_traces(BASE, t)
    kinds = [(x.kind, x.what) for x in d.drifts]
    assert kinds == [("presence", "missing"), ("terminal", "last_write")]
    missing = d.drifts[0]
    assert (missing.tool, missing.baseline_seq, missing.seq) == ("refund_order", 4, None)
    assert d.drifts[1].actual is not None and "baseline" in d.drifts[1].to_dict()
    assert "actual" not in d.drifts[1].to_dict()  # no write at all


def test_argument_drift_names_path_and_values() -> None:
    ev = events_of(BASE)
    t = trace("t", *ev[:3], call("refund_order", orderId="ORDER-17", amountCents="42.00"),
              *ev[4:])
    d = diff_traces(BASE, t)
    args = [x for x in d.drifts if x.kind == "argument"]
    assert [(x.path, x.baseline, x.actual) for x in args] == [("amountCents", 4200, "42.00")]
    # the id in another case is the same id; the amount is not the same number
    assert [x.what for x in d.drifts if x.kind == "terminal"] == ["last_write"]


def test_failed_write_is_not_the_last_write() -> None:
    ev = events_of(BASE)
    t = trace("t", *ev[:4], result("refund_order", error="timeout"), ev[5])
    d = diff_traces(BASE, t)
    assert [(x.kind, x.what) for x in d.drifts] == [("terminal", "last_write")]
    assert "(none)" in d.drifts[0].message


def test_terminal_state_and_reply() -> None:
    b = trace("b", USER, {"kind": "state_write", "key": "fruit", "value": "apples"},
              {"kind": "assistant", "text": "Saved apples, order 17."})
    t = trace("t", USER, {"kind": "state_write", "key": "fruit", "value": "bananas"},
              {"kind": "state_write", "key": "extra", "value": 1},
              {"kind": "assistant", "text": "I saved your fruit for order 18."})
    d = diff_traces(b, t)
    got = [(x.what, x.path, x.baseline if x.what == "final_state" else None)
           for x in d.drifts]
    assert got[:2] == [("final_state", "extra", d.drifts[0].baseline),
                       ("final_state", "fruit", "apples")]
    assert d.drifts[2].what == "final_reply"
    assert "no longer states 17" in d.drifts[2].message and "now states 18" in d.drifts[2].message
    assert d.counts == {"presence": 0, "argument": 0, "terminal": 3}


def test_policy_from_lists() -> None:
    p = ReadOnlyPolicy(mutating_tools=("refund_*",))
    assert p.reads("get_order") and p.reads("notify") and not p.reads("refund_order")
    assert ReadOnlyPolicy().reads("getOrder") and not ReadOnlyPolicy().reads("cancel_reservation")
    assert ReadOnlyPolicy(read_tools=("cancel_*",)).reads("cancel_reservation")


def test_other_scenario_is_reported() -> None:
    t = BASE.model_copy(update={"trace_id": "x", "scenario": "other"})
    assert diff_traces(BASE, t).same_task is False
    assert diff_traces(BASE, BASE.model_copy(update={"scenario": None})).same_task is None
    t0 = BASE.model_copy(update={"metadata": {"task_id": 0}})
    t1 = BASE.model_copy(update={"metadata": {"task_id": 1}})
    assert diff_traces(t0, t1).same_task is False and diff_traces(t0, t0).same_task is True


# --- properties ---------------------------------------------------------------------------

TOOLS = ["get_order", "search_flights", "refund_order", "cancel_reservation", "send_note"]
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
arg_values = st.integers(-1000, 1000) | st.text("abcXYZ-_ 17", min_size=1, max_size=8) | \
    st.lists(st.integers(0, 5), max_size=3)


@st.composite
def generated(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 8))
    out: list[dict[str, Any]] = []
    for _ in range(n):
        tool = draw(st.sampled_from(TOOLS))
        args = draw(st.dictionaries(st.sampled_from(["id", "amount", "items", "note"]),
                                    arg_values, min_size=1, max_size=3))
        out.append({"tool": tool, "args": args, "error": draw(st.booleans())})
    return out


def as_trace(tid: str, calls: list[dict[str, Any]]) -> Trace:
    ev: list[dict[str, Any]] = [USER]
    for c in calls:
        ev.append(call(c["tool"], **c["args"]))
        ev.append(result(c["tool"], error="boom" if c["error"] else None, ok=True))
    ev.append({"kind": "assistant", "text": "All done."})
    return trace(tid, *ev)


def changed(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, list):
        return [*v, 99]
    return f"{v}q"


@st.composite
def mutated(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, str]:
    calls = draw(generated())
    k = draw(st.integers(0, len(calls) - 1))
    how = draw(st.sampled_from(["delete", "duplicate", "argument", "new_argument", "tool"]))
    m = [dict(c) for c in calls]
    if how == "delete":
        del m[k]
    elif how == "duplicate":
        m.insert(k, dict(m[k]))
    elif how == "argument":
        key = draw(st.sampled_from(sorted(m[k]["args"])))
        m[k]["args"] = {**m[k]["args"], key: changed(m[k]["args"][key])}
    elif how == "new_argument":
        m[k]["args"] = {**m[k]["args"], "added": 1}
    else:
        m[k]["tool"] = "another_tool"
    return calls, m, k, how


@PROPS
@given(generated())
def test_property_self_diff_has_no_drift(calls: list[dict[str, Any]]) -> None:
    t = as_trace("t", calls)
    d = diff_traces(t, t, DiffOptions(count_lookups=True))
    assert d.drifts == [] and all(eq for *_, eq in d.pairs) and len(d.pairs) == len(calls)


@PROPS
@given(mutated())
def test_property_every_single_call_mutation_is_found(
        case: tuple[list[dict[str, Any]], list[dict[str, Any]], int, str]) -> None:
    calls, m, k, how = case
    base, t = as_trace("base", calls), as_trace("t", m)
    strict = diff_traces(base, t, DiffOptions(count_lookups=True))
    assert strict.drift, how
    expect = "argument" if how in ("argument", "new_argument") else "presence"
    assert strict.counts[expect] >= 1, (how, strict.to_dict())
    # by default a lookup may come and go; a mutation of any other call is still drift
    if not ReadOnlyPolicy().reads(calls[k]["tool"]):
        assert diff_traces(base, t).drift, how


# --- the command --------------------------------------------------------------------------

def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["diff", *args])
    return r.exit_code, r.stdout, r.stderr


def write(tmp_path: Path, name: str, *traces: Trace) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(t.model_dump_json(exclude_none=True) for t in traces) + "\n")
    return p


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    ev = events_of(BASE)
    drifted = trace("drifted", *ev[:3], ev[5])
    base = write(tmp_path, "base.json", BASE)
    many = write(tmp_path, "many.jsonl", BASE.model_copy(update={"trace_id": "same"}), drifted)
    rc, out, _ = run(str(base), str(many))
    assert rc == 0
    assert "same vs baseline base: no drift" in out
    assert "drifted vs baseline base: 2 drift(s) (presence 1, argument 0, terminal 1)" in out
    assert run(str(base), str(many), "--fail-on", "drift")[0] == 1
    assert run(str(base), str(many), "--fail-on", "argument")[0] == 0
    assert run(str(base), str(many), "--fail-on", "terminal")[0] == 1
    rc, out, _ = run(str(base), str(many), "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["baseline"] == "base" and doc["drift"] is True and doc["errors"] == []
    assert [d["trace_id"] for d in doc["diffs"]] == ["same", "drifted"]
    assert doc["diffs"][1]["drifts"][0] == {
        "kind": "presence", "what": "missing", "tool": "refund_order", "baseline_seq": 4,
        "seq": None, "path": None, "read_only": False, "failed": False, "counted": True,
        "message": "refund_order at seq 4: baseline call missing from the trace",
        "baseline": {"orderId": "order-17", "amountCents": 4200}}
    rc, out, _ = run(str(base), str(many), "--format", "jsonl")
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["drift"] for x in lines] == [False, True]


def test_cli_bad_input(tmp_path: Path) -> None:
    base = write(tmp_path, "base.json", BASE)
    two = write(tmp_path, "two.jsonl", BASE, BASE.model_copy(update={"trace_id": "b2"}))
    rc, out, err = run(str(two), str(base))
    assert rc == 2 and "two.jsonl" in err and "--baseline-id" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert run(str(two), str(base), "--baseline-id", "b2")[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(BASE.model_dump_json(exclude_none=True) + "\n{\"trace_id\": 5}\n")
    rc, out, err = run(str(base), str(bad))
    assert rc == 2 and "base vs baseline base: no drift" in out  # the good one is reported
    assert "bad.jsonl:2: trace_id" in err and "Traceback" not in err
    rc, _, err = run(str(tmp_path / "nope.json"), str(base))
    assert rc == 2 and "nope.json" in err


def test_cli_scenario_rules_and_hostile_text(tmp_path: Path) -> None:
    scen = EXAMPLES / "refund-once"
    rc, out, _ = run(str(scen / "pass.json"), str(scen / "fail-second-refund.json"),
                     "--scenario", str(scen), "--fail-on", "presence")
    assert rc == 1 and "refund_order" in out
    evil = trace("evil\x1b]52;c;aGk=\x07", USER, call("refund\x1b[2J_order", orderId="x"),
                 result("refund\x1b[2J_order"), call("x\n  presence  fake line", a=1))
    rc, out, _ = run(str(write(tmp_path, "b.json", BASE)), str(write(tmp_path, "e.json", evil)))
    assert rc == 0 and "\x1b" not in out and "\\x1b" in out
    assert not any(line.startswith("  presence  fake") for line in out.splitlines())
    assert len(out.splitlines()) == 1 + len(diff_traces(BASE, evil).drifts)
    rc, out, _ = run(str(tmp_path / "b.json"), str(tmp_path / "e.json"), "--format", "json")
    assert "\x1b" not in out and json.loads(out)["diffs"][0]["trace_id"].startswith("evil\x1b")


@PROPS
@given(st.lists(arg_values, max_size=6), st.randoms())
def test_property_lists_compare_as_multisets(values: list[Any], rnd: Any) -> None:
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert same(values, shuffled) and same(shuffled, values)
    assert not same(values, [*values, "extra"])


@PROPS
@given(st.text(max_size=200))
def test_property_reply_facts_never_fail(text: str) -> None:
    facts = reply_facts(text)
    assert all(isinstance(f, str) and f for f in facts)
    assert reply_facts(text + " and that is all.") == facts | set()
