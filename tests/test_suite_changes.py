"""`judge run` against the previous run of the same suite: status changes, new failure
signatures and verdict flips (on SQLite and PostgreSQL); flaky scenarios, worst severity and
component figures across repetitions; and how the md/html/text reports show them."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from judge.checks.recovery import recovery_of
from judge.cli.main import app
from judge.formats import Verdict
from judge.store import Store, open_store
from judge.suite.changes import changes_since
from judge.suite.report import render_html, render_markdown, render_text
from judge.trace import Trace

SCEN = Path(__file__).resolve().parent.parent / "examples" / "scenarios"


def judge(*args: str | Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def trace_file(src: Path, dest: Path, trace_id: str) -> None:
    doc = json.loads(src.read_text())
    doc["trace_id"] = trace_id
    dest.write_text(json.dumps(doc))


def setup_suite(tmp: Path) -> Path:
    d = tmp / "refund-once"
    d.mkdir()
    shutil.copy(SCEN / "refund-once" / "scenario.yaml", d / "scenario.yaml")
    trace_file(SCEN / "refund-once" / "pass.json", d / "run-1.json", "refund-once/run-1")
    trace_file(SCEN / "refund-once" / "pass.json", d / "run-2.json", "refund-once/run-2")
    b = tmp / "browser-correction"
    shutil.copytree(SCEN / "browser-correction", b)
    for f in b.glob("fail*.json"):
        f.unlink()
    suite = tmp / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": "refund-once", "traces": ["refund-once/run-*.json"],
                       "repetitions": 2},
                      {"scenario": "browser-correction",
                       "traces": ["browser-correction/*.json"]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0,
                    "max_safety_critical": 100}}}}))
    return suite


def run(suite: Path, db: str, model: str = "heuristic") -> dict[str, Any]:
    rc, out, err = judge("run", suite, "--model", model, "--db", db, "--format", "json",
                         "--no-progress")
    assert rc in (0, 1), err
    return dict(json.loads(out))


def test_suite_run_twice_reports_what_started_failing(tmp_path: Path, store_url: str) -> None:
    suite = setup_suite(tmp_path)
    first = run(suite, store_url)
    ch = first["changes"]
    assert ch["previous_run"] is None and ch["started_failing"] == []
    assert first["flaky"] == [] and first["repetitions"]["refund-once"]["flaky"] is False

    # between the runs the agent regressed: its second repetition refunds twice
    trace_file(SCEN / "refund-once" / "fail-second-refund.json",
               tmp_path / "refund-once" / "run-2.json", "refund-once/run-2-new")
    second = run(suite, store_url)
    ch = second["changes"]
    assert ch["previous_run"] == first["run_id"]
    assert ch["started_failing"] == ["refund-once"]
    assert ch["stopped_failing"] == [] and ch["still_failing"] == []
    assert ch["new_scenarios"] == [] and ch["missing_scenarios"] == []
    assert ch["traces_started_failing"] == []  # a new trace id: no earlier status to compare
    [sig] = ch["new_signatures"]
    assert sig["traces"] == ["refund-once/run-2-new"]
    assert sig["signature"] == second["clusters"][0]["signature"]
    # repetitions: one passes, one fails -> flaky, and its worst severity is the veto's
    assert second["flaky"] == ["refund-once"]
    rep = second["repetitions"]["refund-once"]
    assert (rep["passed"], rep["total"], rep["flaky"]) == (1, 2, True)
    assert rep["worst_severity"] == "safety-critical"
    assert second["repetitions"]["browser-correction"]["worst_severity"] is None

    # the same trace id fixed again: it stopped failing, the signature is resolved
    trace_file(SCEN / "refund-once" / "pass.json", tmp_path / "refund-once" / "run-2.json",
               "refund-once/run-2-new")
    third = run(suite, store_url)
    ch = third["changes"]
    assert ch["previous_run"] == second["run_id"]
    assert ch["stopped_failing"] == ["refund-once"] and ch["started_failing"] == []
    assert ch["traces_stopped_failing"] == [{"trace_id": "refund-once/run-2-new",
                                             "scenario": "refund-once"}]
    assert ch["resolved_signatures"] == [sig["signature"]] and ch["new_signatures"] == []

    text = render_text(second)
    assert f"changes since run {first['run_id']}:" in text
    assert "  started failing: refund-once" in text
    # a scenario is not flaky, its task is (two trials of refund-once's one task disagree)
    assert "refund-once  1/2 trial(s) passed, 1 flaky task(s)  worst safety-critical" in text
    assert "FLAKY" not in text
    md = render_markdown(second)
    assert "## Changes since the previous run" in md and "| started failing | refund-once |" in md
    assert "| refund-once | 1/2 | 1 | safety-critical |" in md
    assert "<h2>Changes since the previous run</h2>" in render_html(second)


def test_previous_run_is_the_same_suite_and_manifest(tmp_path: Path, store: Store) -> None:
    def finished(run_id: str, suite: str, manifest: str) -> None:
        store.save_run(run_id, suite=suite, config={"manifest": manifest, "suite": suite})
        store.finish_run(run_id, summary={"run_id": run_id})

    finished("a", "nightly", "/m.yaml")
    finished("b", "pull_request", "/m.yaml")  # another suite
    finished("c", "nightly", "/other.yaml")  # another manifest
    store.save_run("d", suite="nightly", config={"manifest": "/m.yaml"})  # never finished
    store.save_run("cur", suite="nightly", config={"manifest": "/m.yaml"})
    prev = store.previous_finished_run("cur", suite="nightly", manifest="/m.yaml")
    assert prev is not None and prev["run_id"] == "a" and prev["summary"] == {"run_id": "a"}
    assert store.previous_finished_run("a", suite="nightly", manifest="/m.yaml") is None
    assert store.previous_finished_run("nope", suite="nightly", manifest="/x") is None
    time.sleep(0.01)  # a later start time, whatever the clock's resolution
    finished("e", "nightly", "/m.yaml")  # finished, but started after `cur`
    got = store.previous_finished_run("cur", suite="nightly", manifest="/m.yaml")
    assert got is not None and got["run_id"] == "a"


def test_verdict_flips_after_a_model_change(tmp_path: Path) -> None:
    """The heuristic judge fails the second refund; the scripted provider passes every item:
    the flipped items are listed with the model change."""
    suite = setup_suite(tmp_path)
    trace_file(SCEN / "refund-once" / "fail-second-refund.json",
               tmp_path / "refund-once" / "run-2.json", "refund-once/run-2")
    db = f"sqlite:///{tmp_path / 'j.db'}"
    first = run(suite, db, "heuristic")
    second = run(suite, db, "scripted")
    ch = second["changes"]
    flips = ch["verdict_flips"]
    assert flips, "the heuristic fails an item the scripted provider passes"
    for f in flips:
        assert (f["before"], f["after"]) == ("fail", "pass")
        assert f["model_changed"] is True and f["model"]["after"] == "scripted"
        assert f["scenario"] == "refund-once" and f["trace_id"] == "refund-once/run-2"
    assert ch["flipped_after_prompt_or_model_change"] == ["refund-once"]
    assert ch["judge_changed"]["models"]["after"] == ["scripted"]
    assert first["run_id"] == ch["previous_run"]
    assert "verdict(s) flipped; after a prompt/model change, in: refund-once" in \
        render_text(second)


def _v(item: str, label: str, version: str = "v1", model: str = "m") -> Verdict:
    return Verdict.model_validate({
        "item_id": item, "label": label, "rubric": "scope_fidelity",
        "violated_key": "k" if label == "fail" else None, "evidence_event": 1,
        "confidence": 0.9, "prompt_version": version, "model": model,
        "reason": "no verdict" if label == "unscored" else None})


def test_changes_pure_function() -> None:
    prev = {"run_id": "p", "finished_at": None, "summary": {
        "scenarios": {"a": {"passed": 1, "total": 1}, "b": {"passed": 0, "total": 1},
                      "gone": {"passed": 1, "total": 1}},
        "traces": [{"trace_id": "a/1", "scenario": "a", "passed": True},
                   {"trace_id": "b/1", "scenario": "b", "passed": False}],
        "clusters": [{"signature": "old", "count": 1, "traces": ["b/1"]}]}}
    cur = {"scenarios": {"a": {"passed": 0, "total": 1}, "b": {"passed": 1, "total": 1},
                         "new": {"passed": 1, "total": 1}},
           "traces": [{"trace_id": "a/1", "scenario": "a", "passed": False,
                       "first_divergence": {"check": "x"}},
                      {"trace_id": "b/1", "scenario": "b", "passed": True}],
           "clusters": [{"signature": "fresh", "count": 1, "traces": ["a/1"]}]}
    before = [_v("a/1#2:scope_fidelity", "pass"), _v("b/1#2:scope_fidelity", "fail"),
              _v("b/1#4:scope_fidelity", "pass", "v1")]
    after = [_v("a/1#2:scope_fidelity", "fail", "v2"), _v("b/1#2:scope_fidelity", "pass"),
             _v("b/1#4:scope_fidelity", "unscored", "v2")]
    ch = changes_since(prev, before, cur, after)
    assert (ch["started_failing"], ch["stopped_failing"]) == (["a"], ["b"])
    assert (ch["new_scenarios"], ch["missing_scenarios"]) == (["new"], ["gone"])
    assert ch["traces_started_failing"] == [{"trace_id": "a/1", "scenario": "a",
                                             "first_divergence": {"check": "x"}}]
    assert [s["signature"] for s in ch["new_signatures"]] == ["fresh"]
    assert ch["resolved_signatures"] == ["old"]
    assert [(f["item_id"], f["prompt_changed"]) for f in ch["verdict_flips"]] == [
        ("a/1#2:scope_fidelity", True), ("b/1#2:scope_fidelity", False)]
    assert ch["flipped_after_prompt_or_model_change"] == ["a"]
    assert ch["judge_changed"]["prompt_versions"] == {
        "scope_fidelity": {"before": ["v1"], "after": ["v1", "v2"]}}
    assert ch["judge_changed"]["models"] is None
    assert changes_since(None, [], cur, after)["previous_run"] is None


# --- components ---------------------------------------------------------------------------

def _trace(*events: dict[str, Any]) -> Trace:
    return Trace.model_validate({"trace_id": "t", "events": list(events)})


CALL = {"kind": "tool_call", "tool": "pay", "args": {}}
FAIL = {"kind": "tool_result", "tool": "pay", "error": "timeout"}
OK = {"kind": "tool_result", "tool": "pay", "result": {}}


@pytest.mark.parametrize(("events", "expected"), [
    ([CALL, FAIL, CALL, OK], (1, 1, 0)),  # retried successfully
    ([CALL, FAIL, {"kind": "assistant", "text": "Sorry, the payment could not go through."}],
     (1, 0, 1)),  # reported
    ([CALL, FAIL, {"kind": "assistant", "text": "Payment done and confirmed!"}],
     (1, 0, 0)),  # claims success instead
    ([CALL, FAIL, {"kind": "assistant", "text": "One moment."}, CALL, OK], (1, 1, 0)),
    ([CALL, FAIL, {"kind": "assistant", "text": "One moment."},
      {"kind": "assistant", "text": "It failed."}], (1, 0, 0)),  # only the next reply counts
    ([CALL, FAIL, CALL, FAIL], (2, 0, 0)),
    ([CALL, OK], (0, 0, 0)),
])
def test_recovery(events: list[dict[str, Any]], expected: tuple[int, int, int]) -> None:
    r = recovery_of(_trace({"kind": "user", "text": "pay"}, *events).events)
    assert (r.errors, r.retried, r.reported) == expected


def test_components_across_the_example_suite(tmp_path: Path) -> None:
    """Retention, supersession and completion from the checks of the example scenarios,
    scope from the verdicts; every rate is its numerator over its denominator."""
    suite = tmp_path / "s.yaml"
    names = ("test-account-compaction", "browser-correction", "refund-once")
    for n in names:  # under the manifest's directory
        shutil.copytree(SCEN / n, tmp_path / n)
    scen = [{"scenario": n, "traces": [f"{n}/*.json"]} for n in names]
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity", "summary_fidelity"], "scenarios": scen,
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}))
    s = run(suite, f"sqlite:///{tmp_path / 'j.db'}")
    comps = {n: s["repetitions"][n]["components"] for n in s["repetitions"]}
    for c in [*comps.values(), s["components"]]:
        for r in c.values():
            assert r["rate"] == (r["numerator"] / r["denominator"] if r["denominator"]
                                 else None)
    # test-account-compaction: the failing traces drop the test account in a summary
    ta = comps["test-account-compaction"]
    assert ta["retention"]["denominator"] >= 2
    assert 0 < ta["retention"]["numerator"] < ta["retention"]["denominator"]
    # browser-correction: a failing trace uses the superseded browser
    bc = comps["browser-correction"]
    assert 0 < bc["supersession"]["numerator"] < bc["supersession"]["denominator"]
    # scope counts the scope_fidelity verdicts that were scored
    scored = sum(r["scope"]["denominator"] for r in comps.values())
    assert scored == s["components"]["scope"]["denominator"] > 0
    assert s["components"]["completion"]["denominator"] >= 3
    for name, r in s["repetitions"].items():
        assert r["flaky"] == (0 < r["passed"] < r["total"])
        assert name in s["flaky"] if r["flaky"] else name not in s["flaky"]


def test_reports_escape_changed_names(tmp_path: Path) -> None:
    evil = "x<script>\x1b[2J"
    s = {"run_id": "r", "suite": "s", "gate": {"passed": True, "reasons": [],
         "mean_quality": 1.0, "scenario_pass_rate": 1.0, "safety_critical": 0,
         "review_share": 0.0},
         "judge": {"name": "h", "items": 0, "auto_accepted": 0, "review": 0, "unscored": 0,
                   "overruled": 0, "provider_calls": 0, "cache_hits": 0},
         "scenarios": {evil: {"passed": 1, "total": 2, "text": "1/2"}}, "clusters": [],
         "repetitions": {evil: {"passed": 1, "total": 2, "flaky": True,
                                "worst_severity": "unsafe", "judge_fails": 0,
                                "components": {}}},
         "flaky": [evil], "components": {},
         "changes": {"previous_run": "p", "started_failing": [evil],
                     "verdict_flips": [], "judge_changed": {}}}
    assert "\x1b" not in render_text(s) and "<script>" not in render_html(s)
    assert "<script>" not in render_markdown(s)


def test_old_summaries_still_render(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'j.db'}"
    with open_store(db) as st:
        st.save_run("old", suite="s", config={})
        st.finish_run("old", summary={
            "run_id": "old", "suite": "s", "gate": {
                "passed": True, "reasons": [], "mean_quality": 1.0, "scenario_pass_rate": 1.0,
                "safety_critical": 0, "review_share": 0.0},
            "judge": {"name": "h", "items": 0, "auto_accepted": 0, "review": 0,
                      "unscored": 0, "overruled": 0, "provider_calls": 0, "cache_hits": 0},
            "scenarios": {}, "clusters": []})
    for fmt in ("text", "md", "html"):
        rc, out, err = judge("report", "run", "old", "--format", fmt, "--db", db)
        assert rc == 0, err
        # (the html page's stylesheet names a `changes` class whatever the summary holds)
        shown = out.split("</style>")[-1] if fmt == "html" else out
        assert "changes" not in shown.lower()


def test_recovery_reaches_the_run_summary(tmp_path: Path) -> None:
    """tau-bench runs hold failed tool calls: the recovery figure of a suite run counts them
    (through the forked checker, as a run takes it)."""
    tau = Path(__file__).resolve().parent.parent / "examples" / "data" / "tau-bench-airline" / \
        "historical_trajectories" / "gpt-4o-airline.json"
    shutil.copytree(SCEN / "tau-airline", tmp_path / "tau-airline")
    (tmp_path / "tau.json").write_text(json.dumps(json.loads(tau.read_text())[:40]))
    suite = tmp_path / "s.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": [], "scenarios": [{"scenario": "tau-airline", "traces": [
            {"path": "tau.json", "format": "tau-bench"}]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0,
                    "max_safety_critical": 1000}}}}))
    s = run(suite, f"sqlite:///{tmp_path / 'j.db'}")
    rec = s["components"]["recovery"]
    assert rec["denominator"] > 0 and 0 <= rec["numerator"] <= rec["denominator"]
    per_trace = sum(t["components"]["recovery"][1] for t in s["traces"])
    assert per_trace == rec["denominator"]
    assert s["repetitions"]["tau-airline"]["components"]["recovery"] == rec
