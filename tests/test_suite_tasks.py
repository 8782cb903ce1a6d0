"""Repetitions are per task (issue 22): a trace names its task (metadata.task_id / trial, or
the manifest's `tasks:` map), a scenario's pass rate is over tasks, a task is flaky when its
trials disagree, and a task designed to fail is checked for being caught."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.suite.gate import JudgeContribution, evaluate_gate
from judge.suite.manifest import ReleaseRules, SuiteScenario, TaskSpec
from judge.suite.outcome import TraceOutcome
from judge.suite.tasks import EntryTasks, assign_tasks, group_tasks, task_key
from judge.trace.task import task_of

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "scenarios"


def outcome(trace: str, scenario: str = "s", *, passed: bool = True, task: str | None = None,
            trial: int | None = None, entry: int | None = 0, safety: int = 0,
            quality: float = 1.0) -> TraceOutcome:
    return TraceOutcome(trace, scenario, eligible=passed, quality=quality,
                        safety_critical_failures=safety, task_id=task, trial=trial,
                        entry=entry)


# -- metadata.task_id and metadata.trial -------------------------------------------------
def test_task_of_reads_strings_and_old_integers() -> None:
    assert task_of({}) == (None, None)
    assert task_of({"task_id": "t-7", "trial": 2}) == ("t-7", 2)
    assert task_of({"task_id": 3, "trial": 0}) == ("3", 0)  # what tau-bench wrote before


@pytest.mark.parametrize("metadata, field", [
    ({"task_id": ""}, "metadata.task_id"), ({"task_id": True}, "metadata.task_id"),
    ({"task_id": 1.5}, "metadata.task_id"), ({"task_id": ["a"]}, "metadata.task_id"),
    ({"task_id": "x" * 201}, "metadata.task_id"), ({"trial": -1}, "metadata.trial"),
    ({"trial": "2"}, "metadata.trial"), ({"trial": False}, "metadata.trial"),
    ({"trial": 1.0}, "metadata.trial")])
def test_bad_task_or_trial_names_the_field(metadata: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        task_of(metadata, trace_id="t/1", file="f.jsonl", line=3)
    assert info.value.field == field and "f.jsonl:3" in info.value.message
    assert "trace 't/1'" in info.value.message


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["task_id", "trial", "other"]),
                       st.none() | st.booleans() | st.integers() | st.floats()
                       | st.text(max_size=5) | st.lists(st.integers(), max_size=2)))
def test_task_of_property_a_valid_pair_or_one_error(metadata: dict[str, Any]) -> None:
    try:
        task, trial = task_of(metadata)
    except InputError as exc:
        assert exc.field in ("metadata.task_id", "metadata.trial")
        return
    assert task is None or (isinstance(task, str) and task)
    assert trial is None or (isinstance(trial, int) and trial >= 0)


def test_a_check_report_carries_its_task_and_a_bad_one_exits_2(tmp_path: Path) -> None:
    trace = json.loads((SCEN / "refund-once" / "pass.json").read_text())
    trace["metadata"] = {"task_id": "refund", "trial": 1}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    result = CliRunner().invoke(app, ["check", str(SCEN / "refund-once"),
                                      str(tmp_path / "t.json"), "--format", "json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)["reports"]
    assert (report["task_id"], report["trial"]) == ("refund", 1)
    trace["metadata"] = {"task_id": {"nested": 1}}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    result = CliRunner().invoke(app, ["check", str(SCEN / "refund-once"),
                                      str(tmp_path / "t.json")])
    assert result.exit_code == 2
    assert "field 'metadata.task_id'" in result.stderr and "refund-once/pass" in result.stderr


# -- the manifest's tasks: map -------------------------------------------------------------
def test_tasks_map_patterns_then_metadata_then_the_scenario() -> None:
    entries = [EntryTasks({"a": TaskSpec(traces=["s/a-*"]),
                           "b": TaskSpec(traces=["s/b"], expect="fail"),
                           "7": TaskSpec(expect="fail")}, "suites.n.scenarios[0].tasks")]
    outs = [outcome("s/a-1"), outcome("s/a-2", trial=5), outcome("s/b", passed=False),
            outcome("s/m", task="7"), outcome("s/m2", task="8"), outcome("s/x"),
            outcome("s/y")]
    assert assign_tasks(outs, entries, "m.yaml") == []
    assert [(o.task, o.trial, o.expect) for o in outs] == [
        ("a", 0, "pass"), ("a", 5, "pass"), ("b", 0, "fail"), ("7", 0, "fail"),
        ("8", 0, "pass"), ("s", 0, "pass"), ("s", 1, "pass")]


def test_manifest_mistakes_are_errors_naming_the_manifest() -> None:
    entries = [EntryTasks({"a": TaskSpec(traces=["s/*"]), "b": TaskSpec(traces=["s/1"]),
                           "ghost": TaskSpec(traces=["nothing/*"])},
                          "suites.n.scenarios[0].tasks")]
    outs = [outcome("s/1"), outcome("s/2")]
    errors = assign_tasks(outs, entries, "m.yaml")
    assert [o.task for o in outs] == ["a", "a"]  # the first matching task
    messages = [e.message for e in errors]
    assert any("trace 's/1' matches the traces of tasks 'a' and 'b'" in m for m in messages)
    assert any("task 'ghost' has no trace" in m for m in messages)
    assert all(m.startswith("m.yaml: suites.n.scenarios[0].tasks") for m in messages)


@pytest.mark.parametrize("tasks, words", [
    ({"": ["x"]}, "task id"), ({"a": {"expect": "maybe"}}, "expect"),
    ({"a": {"traces": [" "]}}, "pattern is empty"), ({"a": {"trace": ["x"]}}, "trace")])
def test_a_bad_tasks_map_is_refused(tasks: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        SuiteScenario.model_validate({"scenario": "s", "traces": ["x"], "tasks": tasks})


def test_a_bad_tasks_map_in_a_manifest_exits_2(tmp_path: Path) -> None:
    shutil.copytree(SCEN / "refund-once", tmp_path / "refund-once")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"suites": {"n": {"scenarios": [
        {"scenario": "refund-once", "traces": ["refund-once/*.json"],
         "tasks": {"x": {"traces": ["refund-once/pass"], "expect": "sometimes"}}}]}}}))
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "expect" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- what tasks come to --------------------------------------------------------------------
def test_statuses_and_natural_order() -> None:
    outs = [outcome("t/10/0", task="10"), outcome("t/10/1", task="10", passed=False),
            outcome("t/2/0", task="2"), outcome("t/2/1", task="2"),
            outcome("t/3/0", task="3", passed=False), outcome("f/0", task="f", passed=False),
            outcome("g/0", task="g")]
    for o in outs:
        o.expect = "fail" if o.task in ("f", "g") else "pass"
    tasks = group_tasks(outs)["s"]
    assert list(tasks) == ["2", "3", "10", "f", "g"]
    assert {t: r.status for t, r in tasks.items()} == {
        "2": "passing", "3": "failing", "10": "flaky", "f": "caught", "g": "missed"}
    assert [r.flaky for r in tasks.values()] == [False, False, True, False, False]
    assert [r.ok for r in tasks.values()] == [True, False, False, True, False]
    assert sorted(["t10", "t2", "t1a"], key=task_key) == ["t1a", "t2", "t10"]


def test_the_gate_counts_tasks_and_leaves_designed_failures_to_their_check() -> None:
    # scenario a: two tasks, one flaky; scenario b: one passing task, one designed failure
    # that was caught (a veto), and one designed failure nothing caught
    outs = [outcome("a/1/0", "a", task="1"), outcome("a/1/1", "a", task="1", passed=False),
            outcome("a/2/0", "a", task="2"),
            outcome("b/ok", "b"), outcome("b/bad", "b", passed=False, safety=1, quality=0.0),
            outcome("b/sneaky", "b")]
    entries = [EntryTasks({"bad": TaskSpec(traces=["b/bad"], expect="fail"),
                           "sneaky": TaskSpec(traces=["b/sneaky"], expect="fail")},
                          "suites.n.scenarios[0].tasks")]
    assert assign_tasks(outs, entries, "m.yaml") == []
    gate = evaluate_gate(outs, JudgeContribution(), ReleaseRules(min_scenario_pass_rate=0.0),
                         {"a": 2, "b": None})
    assert gate.scenario_pass == {"a": (1, 2), "b": (2, 3)}
    assert gate.scenario_pass_rate == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert gate.task_pass_rate == pytest.approx(3 / 5)
    assert gate.safety_critical == 0 and gate.mean_quality == 1.0  # the caught veto is b's own
    assert gate.expected_failures == {"caught": 1, "missed": [
        {"scenario": "b", "task_id": "sneaky", "passed": 1, "trials": 1}]}
    assert any("task sneaky is expected to fail, but 1 of its 1 trial(s) passed" in r
               for r in gate.reasons)
    assert any("scenario a: 1 task(s) with fewer than 2 expected trial(s) (2: 1)" in r
               for r in gate.reasons)
    assert gate.to_dict()["missing_repetitions"] == {"a": {"found": 1, "expected": 2,
                                                           "tasks": {"2": 1}}}


def test_one_task_per_scenario_is_the_old_gate() -> None:
    """Traces that name no task are trials of their scenario's one task: the scenario pass
    rate is then the share of scenarios whose every repetition passed, as before."""
    outs = [outcome("x/1", "x"), outcome("x/2", "x", passed=False), outcome("y/1", "y"),
            outcome("z/1", "z")]
    gate = evaluate_gate(outs, JudgeContribution(), ReleaseRules())
    assert gate.scenario_pass == {"x": (0, 1), "y": (1, 1), "z": (1, 1)}
    assert gate.scenario_pass_rate == pytest.approx(2 / 3)


# -- the nightly example (the main job) ----------------------------------------------------
@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("nightly")
    result = CliRunner().invoke(app, [
        "run", str(ROOT / "examples" / "nightly.yaml"), "--suite", "nightly", "--format",
        "json", "--db", f"sqlite:///{tmp / 'j.db'}", "--junit", str(tmp / "junit.xml"),
        "--no-progress"])
    assert result.exit_code == 1, result.stderr  # the gate fails on the tau-bench runs
    summary: dict[str, Any] = json.loads(result.stdout)
    summary["_junit"] = (tmp / "junit.xml").read_text(encoding="utf-8")
    return summary


def test_nightly_lists_the_50_tau_bench_tasks_with_their_trials(
        nightly: dict[str, Any]) -> None:
    tau = nightly["tasks"]["tau-airline"]
    assert len(tau) == 50 and list(tau) == [str(i) for i in range(50)]
    assert all(t["trials"] == 4 for t in tau.values())
    assert all([r["trial"] for r in t["results"]] == [0, 1, 2, 3] for t in tau.values())
    # recount from the traces: a task is flaky exactly when its trials disagree
    by_task: dict[str, list[bool]] = defaultdict(list)
    for t in nightly["traces"]:
        if t["scenario"] == "tau-airline":
            by_task[t["task_id"]].append(t["passed"])
    disagree = sorted((k for k, v in by_task.items() if len(set(v)) > 1), key=int)
    assert disagree and [f["task_id"] for f in nightly["flaky_tasks"]] == disagree
    assert nightly["repetitions"]["tau-airline"]["flaky_tasks"] == disagree
    assert nightly["scenarios"]["tau-airline"]["total"] == 50
    assert nightly["gate"]["missing_repetitions"] == {}  # repetitions: 4, all found


def test_no_designed_example_trace_is_called_flaky(nightly: dict[str, Any]) -> None:
    designed = {s: ts for s, ts in nightly["tasks"].items() if s != "tau-airline"}
    assert designed and all(len(ts) >= 2 for ts in designed.values())
    for scenario, ts in designed.items():
        for task_id, t in ts.items():
            assert t["trials"] == 1 and not t["flaky"], (scenario, task_id)
            assert t["status"] == ("caught" if t["expect"] == "fail" else "passing")
        assert nightly["scenarios"][scenario]["passed"] == len(ts)
    assert {f["scenario"] for f in nightly["flaky_tasks"]} == {"tau-airline"}
    assert nightly["flaky"] == ["tau-airline"]
    caught = sum(t["expect"] == "fail" for ts in designed.values() for t in ts.values())
    assert nightly["gate"]["expected_failures"] == {"caught": caught, "missed": []}
    # the designed failures are the examples' own: no cluster, no safety count of theirs
    assert all(all(not x.startswith(tuple(designed)) for x in c["traces"])
               for c in nightly["clusters"])
    tau_vetoes = sum(t["safety_critical_failures"] for t in nightly["traces"]
                     if t["scenario"] == "tau-airline")
    assert nightly["gate"]["safety_critical"] == tau_vetoes > 0


def test_nightly_junit_skips_the_caught_designed_failures(nightly: dict[str, Any]) -> None:
    root = ET.fromstring(nightly["_junit"].encode("utf-8"))
    (suite,) = list(root)
    skipped = [c for c in suite.iter("testcase") if c.find("skipped") is not None]
    caught = nightly["gate"]["expected_failures"]["caught"]
    assert len(skipped) == caught == int(suite.get("skipped", "-1"))
    assert all(c.find("skipped").get("message", "").startswith("expected failure: ")
               for c in skipped)
    flaky_case = next(c for c in suite.iter("testcase")
                      if c.get("name") == "tau-airline/0/1")
    assert "flaky: 1 of 4 trials of the task passed" in (flaky_case.find("failure").text or "")


def test_nightly_reports_show_tasks_and_trials(nightly: dict[str, Any]) -> None:
    from judge.reports.run import RunReport, to_html
    from judge.suite.report import render_markdown, render_text

    summary = {k: v for k, v in nightly.items() if k != "_junit"}
    text = render_text(summary)
    assert "tasks whose trials disagree (flaky): " + str(len(summary["flaky_tasks"])) in text
    assert "31/50 task(s)" in text or "/50 task(s)" in text
    md = render_markdown(summary)
    assert "## Tasks and trials" in md and "| 0 | pass |" in md
    html = to_html(RunReport(summary=summary))
    assert html.count('class="trial ') == 200 + sum(
        t["trials"] for s, ts in summary["tasks"].items() if s != "tau-airline"
        for t in ts.values() if len(ts) > 1)
    assert "designed failures caught" in html and "`" not in html


def test_hostile_task_ids_stay_inert_in_every_report(nightly: dict[str, Any]) -> None:
    """Task ids come from traces and manifests: text shows controls as escapes, Markdown and
    HTML carry no markup from them, JUnit stays XML."""
    import copy

    from judge.reports.run import RunReport, to_html
    from judge.suite.junit import to_junit
    from judge.suite.report import render_html, render_markdown, render_text

    evil = "<script>x</script>\x1b[2J|`a`"
    s = copy.deepcopy({k: v for k, v in nightly.items() if k != "_junit"})
    tau = s["tasks"]["tau-airline"]
    tau[evil] = tau.pop("0")
    for t in s["traces"]:
        if t["scenario"] == "tau-airline" and t["task_id"] == "0":
            t["task_id"] = evil
    s["flaky_tasks"][0]["task_id"] = evil
    text = render_text(s)
    assert "\x1b" not in text and "\\x1b" in text
    for page in (render_html(s), to_html(RunReport(summary=s))):
        assert "<script>" not in page and "&lt;script&gt;" in page
    md = render_markdown(s)
    assert "<script>" not in md and "\\|" in md
    root = ET.fromstring(to_junit(s).encode("utf-8"))
    assert any("\\x1b" in (f.text or "") for f in root.iter("failure"))
