"""`judge init`: a draft scenario from traces, as safe commented YAML `judge validate` accepts.

Checked on the example scenarios' traces and the 200 tau-bench airline trajectories (through
the importer) against their reviewed scenarios, and by a property over hostile traces.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.checks import check_paths, validate_scenario
from judge.cli.main import app
from judge.drafting import draft_scenario, observe_paths, unreviewed
from judge.drafting.build import verify
from judge.drafting.classify import acknowledgement, id_value, name_verb
from judge.drafting.draft import MAX_GOAL, build
from judge.drafting.render import render
from judge.drafting.yamltext import comment_text, literal_glob, quote
from judge.errors import InputError
from judge.importers import iter_tau_bench, write_traces
from judge.ledger import load_scenario
from judge.ledger.loader import _Loader
from judge.trace import EventKind, load_traces

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "scenarios"
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" \
    / "gpt-4o-airline.json"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def traces_of(name: str) -> list[Path]:
    return sorted((EXAMPLES / name).glob("*.json"))


def unglob(pattern: str) -> str:
    return pattern.replace("[*]", "*").replace("[?]", "?").replace("[[]", "[")


def save(tmp_path: Path, text: str, name: str = "draft") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "scenario.yaml").write_text(text, encoding="utf-8")
    return d


# -- the command -------------------------------------------------------------------------

def test_init_prints_a_draft_that_validates_with_a_warning(tmp_path: Path) -> None:
    code, out, err = run("init", *map(str, traces_of("refund-once")))
    assert code == 0, err
    assert "drafted scenario 'refund-once' from 3 trace(s)" in err
    d = save(tmp_path, out)
    loaded = load_scenario(d)
    sc = loaded.scenario
    assert sc.status == "draft" and sc.id == "refund-once"
    assert sc.goal == "Hi, order-17 arrived broken. What are my options?"  # first file's
    assert sc.rules.read_tools == ["get_order", "get_refund_status"]
    assert sc.rules.mutating_tools == ["refund_order"]
    assert sorted(sc.rules.allowed_tools or []) == ["get_order", "get_refund_status",
                                                   "refund_order"]
    assert [(lk.mutate, lk.arg, lk.lookup) for lk in sc.rules.lookups] == [
        ("refund_order", "orderId", ["get_order"])]
    assert [(u.rubric, u.on, u.tools) for u in sc.judge] == [
        ("scope_fidelity", "tool_call", ["refund_order"])]
    ledger = {d.key: d for d in sc.ledger}
    assert ledger["goal"].class_ is not None and ledger["goal"].class_.value == "goal"
    assert ledger["refund_order_done"].class_.value == "completion"  # type: ignore[union-attr]
    assert ledger["orderId"].value == "order-17"  # the user said it; every refund used it
    # suggestions are there, commented out
    assert "  # forbidden:" in out and "  # confirmation:" in out and "  # completion:" in out
    assert sc.rules.forbidden == [] and sc.rules.confirmation is None
    code, vout, verr = run("validate", str(d))
    assert code == 0 and "ok (refund-once)" in vout
    line = out.splitlines().index("status: draft  # remove once reviewed") + 1
    assert verr == (f"judge: warning: {d / 'scenario.yaml'}:{line}: field 'status': "
                    "unreviewed draft: review every entry, then delete this line\n")
    code, vout, verr = run("validate", "--strict", str(d))
    assert code == 2 and vout == "" and verr.startswith("judge: error: ")


def test_validate_is_silent_about_reviewed_scenarios() -> None:
    code, _, err = run("validate", "--strict", *map(str, sorted(EXAMPLES.glob("*/"))))
    assert code == 0 and err == ""
    assert all(unreviewed(load_scenario(d)) is None for d in EXAMPLES.glob("*/"))


def test_out_file_is_never_overwritten_without_force(tmp_path: Path) -> None:
    target = tmp_path / "new" / "scenario.yaml"
    traces = [str(p) for p in traces_of("refund-once")]
    assert run("init", *traces, "-o", str(target))[0] == 0
    first = target.read_text()
    target.write_text("# edited by a person\n" + first)
    code, out, err = run("init", *traces, "-o", str(target))
    assert code == 2 and out == ""
    assert err == f"judge: error: {target}: exists; pass --force to overwrite it\n"
    assert target.read_text().startswith("# edited by a person")
    code, _, _ = run("init", *traces, "-o", str(target.parent))  # a directory: its file
    assert code == 2
    assert run("init", *traces, "-o", str(target), "--force", "--id", "refunds")[0] == 0
    assert load_scenario(target).scenario.id == "refunds"
    assert list(target.parent.iterdir()) == [target]  # no temporary file left


def test_bad_trace_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = json.loads((EXAMPLES / "refund-once" / "pass.json").read_text())
    broken = json.loads(json.dumps(good))
    broken["events"][2]["args"] = "order-17"
    bad.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n")
    code, out, err = run("init", str(bad), "-o", str(tmp_path / "s.yaml"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"judge: error: {bad}:2: events[2].args")
    assert not (tmp_path / "s.yaml").exists()
    code, _, err = run("init", str(tmp_path / "missing.json"))
    assert code == 2 and "missing.json: no such file" in err
    assert run("init", str(bad), "--id", " ")[0] == 2


def test_a_trace_without_tools_or_user_still_drafts_a_valid_scenario(tmp_path: Path) -> None:
    t = tmp_path / "t.json"
    t.write_text(json.dumps({"trace_id": "t", "events": [{"kind": "assistant", "text": "hi"}]}))
    code, out, err = run("init", str(t))
    assert code == 0, err
    sc = load_scenario(save(tmp_path, out)).scenario
    assert sc.id == "draft" and sc.goal.startswith("TODO")
    assert sc.rules.allowed_tools is None and sc.judge == []


# -- the examples and tau-bench: drafts agree with the reviewed scenarios ----------------

def seen_tools(paths: list[Path]) -> set[str]:
    return {e.tool or "" for t in load_traces(paths) for e in t.events
            if e.kind is EventKind.TOOL_CALL}


@cache
def tau_jsonl(tmp: str) -> Path:
    out = Path(tmp) / "tau.jsonl"
    write_traces(iter_tau_bench(TAU), out)
    return out


@pytest.fixture(scope="module")
def tau(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tau_jsonl(str(tmp_path_factory.mktemp("tau")))


CASES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", CASES)
def test_drafts_of_the_examples_agree_with_their_reviewed_scenarios(
        name: str, tmp_path: Path, tau: Path) -> None:
    traces = [tau] if name == "tau-airline" else traces_of(name)
    result = draft_scenario(traces)
    drafted = load_scenario(save(tmp_path, result.text)).scenario
    reviewed = load_scenario(EXAMPLES / name).scenario
    seen = seen_tools(traces)
    # where the traces show a tool, the draft sorts it as the reviewers did, except the two
    # tools whose names and results leave it open (reviewed: allowed, neither read nor write)
    assert set(drafted.rules.read_tools) == set(reviewed.rules.read_tools) & seen
    assert set(drafted.rules.mutating_tools) == set(reviewed.rules.mutating_tools) & seen
    others = seen - set(drafted.rules.read_tools) - set(drafted.rules.mutating_tools)
    assert {t.name: t.kind for t in result.draft.tools if t.name in others} == {
        "browser-correction": {"run_tests": "unclassified"},
        "address-change-shipped": {"transfer_to_human": "handoff"},
        "tau-airline": {"transfer_to_human_agents": "handoff"},
    }.get(name, {})
    assert set(drafted.rules.allowed_tools or []) == seen
    assert drafted.id == reviewed.id
    # a draft describes what its traces did: none of them is vetoed under it
    errors: list[InputError] = []
    reports = list(check_paths(load_scenario(tmp_path / "draft"), traces, errors))
    assert errors == [] and reports and all(r.eligible for r in reports), \
        [r.diagnosis() for r in reports if not r.eligible][:2]
    # and its suggestions, uncommented, are valid YAML and a valid scenario too
    live = draft_scenario(traces, live=True)
    loaded = load_scenario(save(tmp_path, live.text, "live"))
    assert validate_scenario(loaded) == []


def test_tau_bench_draft_finds_the_lookups_the_reviewers_wrote(tmp_path: Path,
                                                               tau: Path) -> None:
    result = draft_scenario([tau])
    sc = load_scenario(save(tmp_path, result.text)).scenario
    rules = {(lk.mutate, lk.arg): lk.lookups() for lk in sc.rules.lookups}
    # the reviewed tau-airline scenario has these two; the draft finds them from the traces
    assert rules[("book_reservation", "payment_methods.0.payment_id")] == ["get_user_details"]
    assert rules[("update_reservation_flights", "reservation_id")] == [
        "get_reservation_details"]
    # the reviewed rule on update_reservation_flights' payment_id vetoes 4 of its 104 calls;
    # the draft offers it commented out, saying so, and lists the ids that came from nowhere
    partial = {(lk.mutate, lk.arg): (lk.held, lk.calls) for lk in result.draft.partial_lookups}
    assert partial[("update_reservation_flights", "payment_id")] == (100, 104)
    assert partial[("cancel_reservation", "reservation_id")] == (68, 69)  # (README)
    assert ('  #   - {mutate: "update_reservation_flights", arg: "payment_id", lookup: '
            '["get_reservation_details", "get_user_details"]}  # 100 of 104 calls'
            in result.text)
    assert "#   credit_card_7334: 2 calls (update_reservation_flights payment_id); from " \
           "NOWHERE earlier in 2 calls" in result.text
    assert result.draft.obs.traces == 200
    assert sc.goal == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."


# -- hostile traces ------------------------------------------------------------------------

HOSTILE = ["\x1b[31m", "\u202e", "\u2028", "\x85", "\ufeff", "\ud800", "\x00", "\t", "\r\n",
           ": x", "- y", " #c", "&a *a", "!!python/object/apply:os.system", "'", '"', "\\",
           "{", "[a]", "---", "...", "*", "?", "%TAG", "@", "`", "yes", "on", "null", "1e3",
           "0x1F", "~", "|", ">", "\U0001f600", "é", "\u200b", "<script>", ""]
hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=6)),
                        max_size=5).map("".join)
json_scalar = st.one_of(hostile_text, st.integers(-10**6, 10**6), st.booleans(), st.none())
json_value = st.recursive(json_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)),
    max_leaves=8)


@st.composite
def hostile_traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Traces whose every string may be hostile, with tool names that read or write and ids
    that results return and calls use, so that lookups and ledger facts are drafted too."""
    verb = st.sampled_from(["get_", "refund_", "run_", "transfer_to_human", ""])
    tools = draw(st.lists(st.builds(str.__add__, verb, hostile_text), min_size=1, max_size=4,
                          unique=True))
    ids = draw(st.lists(st.one_of(st.sampled_from(["order-17", "A1B2C3", "x"]), hostile_text),
                        min_size=1, max_size=3))
    an_id = st.sampled_from(ids)
    key = st.one_of(st.sampled_from(["orderId", "id", "a.b", "path"]), hostile_text)
    args = st.dictionaries(key, st.one_of(an_id, json_value), max_size=3)
    result = st.one_of(json_value, st.dictionaries(key, an_id, max_size=2), an_id)
    out = []
    for i in range(draw(st.integers(1, 3))):
        events: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(0, 12))):
            kind = draw(st.sampled_from(["user", "assistant", "call", "call", "result",
                                         "result", "summary"]))
            if kind in ("user", "assistant"):
                text = draw(st.one_of(hostile_text, st.sampled_from(["yes", "Yes, go ahead"]),
                                      an_id))
                events.append({"kind": kind, "text": text})
            elif kind == "summary":
                events.append({"kind": "summary", "text": draw(hostile_text),
                               "reason": "compaction"})
            elif kind == "call":
                events.append({"kind": "tool_call", "tool": draw(st.sampled_from(tools)),
                               "args": draw(args)})
            else:
                ev = {"kind": "tool_result", "tool": draw(st.sampled_from(tools)),
                      "result": draw(result)}
                if draw(st.booleans()):
                    ev["error"] = draw(hostile_text)
                events.append(ev)
        trace: dict[str, Any] = {"trace_id": draw(hostile_text) or f"t{i}", "events": events}
        if draw(st.booleans()):
            trace["scenario"] = draw(hostile_text)
        out.append(trace)
    return out


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(traces=hostile_traces())
def test_any_trace_yields_yaml_that_loads_back_the_same_strings_and_validates(
        tmp_path: Path, traces: list[dict[str, Any]]) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    try:
        obs, files = observe_paths([f])
    except InputError as exc:  # the trace loader refuses some strings (a lone surrogate
        assert exc.file == str(f)  # in an id, outside its JSON fast path): bad input, named
        return
    draft = build(obs)
    text = render(draft, files)
    verify(text)  # loads with the scenario loader and validates, or raises
    assert all(c == "\n" or c.isprintable() for c in text)  # no control or bidi character
    data = yaml.load(text, Loader=_Loader)
    events = [e for t in traces for e in t["events"]]
    tools = {e["tool"] for e in events if e["kind"] in ("tool_call", "tool_result")}
    first_user = next((e["text"] for e in events if e["kind"] == "user"), None)
    if first_user is None or not first_user.strip():
        assert data["goal"].startswith("TODO")
    else:
        goal = first_user.strip()
        assert data["goal"] == fffd(goal if len(goal) <= MAX_GOAL else goal[:MAX_GOAL - 1] + "…")
    named = [t["scenario"] for t in traces if t.get("scenario", "").strip()]
    assert data["id"] == fffd(max(named, key=named.count) if named else "draft")
    rules = data["rules"]
    assert set(rules.get("allowed_tools") or []) == {literal_glob(t) for t in tools}
    for field in ("read_tools", "mutating_tools", "allowed_tools"):
        for pattern in rules.get(field) or []:
            (name,) = [t for t in tools if literal_glob(t) == pattern]
            assert fnmatchcase(name, pattern)
            if "?" not in pattern:  # (a lone surrogate became `?`)
                assert unglob(pattern) == name
    assert data["metadata"]["drafted_from"] == [fffd(t["trace_id"]) for t in traces]
    for lk in rules.get("lookups") or []:
        assert lk["mutate"] in {literal_glob(t) for t in tools} and lk["arg"]
    # the suggestions, uncommented, are as safe
    live = render(draft, files, live=True)
    verify(live)
    assert yaml.load(live, Loader=_Loader)["goal"] == data["goal"]


def fffd(text: str) -> str:
    """A string as a scenario can hold it: lone surrogates replaced."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(codec=None, categories=None)))
def test_any_string_round_trips_through_quote(text: str) -> None:
    doc = f"- {quote(text)}  # {comment_text(text)}\n"
    assert all(c == "\n" or c.isprintable() for c in doc)
    assert yaml.load(doc, Loader=_Loader) == [fffd(text)]


# -- the parts -----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [*HOSTILE, "".join(HOSTILE), "plain", "a\"b\\c",
                                  "\U0010ffff\ufffe\uffff\ue000"])
def test_quote_round_trips_through_the_scenario_loader(text: str) -> None:
    doc = f"k: {quote(text)}  # c\n"
    assert yaml.load(doc, Loader=_Loader) == {"k": fffd(text)}
    assert all(c == "\n" or c.isprintable() for c in doc)


def test_literal_glob_matches_only_its_name() -> None:
    for name in ["get_*", "a?b", "[x]", "plain", "*"]:
        assert fnmatchcase(name, literal_glob(name))
        assert unglob(literal_glob(name)) == name
    assert not fnmatchcase("get_order", literal_glob("get_*"))


@pytest.mark.parametrize(("tool", "kind"), [
    ("get_order", "read"), ("getRefundStatus", "read"), ("list_all_airports", "read"),
    ("refund_order", "write"), ("updateShippingAddress", "write"), ("send-receipt", "write"),
    ("transfer_to_human_agents", "handoff"), ("run_tests", "ambiguous"),
    ("order_cancel", "write"), ("frobnicate", "unknown"), ("", "unknown"),
])
def test_name_verbs(tool: str, kind: str) -> None:
    assert name_verb(tool)[0] == kind


def test_acknowledgements_and_ids() -> None:
    assert acknowledgement({"status": "sent", "messageId": "m-1"}) == 'status "sent"'
    assert acknowledgement({"success": True}) == "success: true"
    assert acknowledgement("The account has been created.") == '"has been created"'
    assert acknowledgement({"status": "delivered"}) is None  # an order's state, not an ack
    assert acknowledgement([1, 2]) is None
    assert id_value("order-17", "order") and id_value("JG7FMM", "x")
    assert id_value(42, "orderId") and not id_value(4200, "amountCents")
    assert not id_value("2024-05-20", "date") and not id_value(True, "id")
    assert not id_value("economy", "cabin") and id_value("tests/a.ts", "path")
