"""The pytest plugin, run the way a team runs it: pytester sessions over scenario folders.

Each test lays out a small project (a pytest.ini naming `judge_scenarios`, scenario folders
with traces) and runs pytest on it in-process, then reads the outcomes and the output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

import judge.pytest_plugin.collect  # noqa: F401  (kept across pytester's in-process runs)
from judge.pytest_plugin import JudgeWarning

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "scenarios"
ARGS = ("-p", "no:cacheprovider", "-p", "no:asyncio", "-p", "no:anyio", "-p", "no:hypothesispytest")


def ini(pytester: pytest.Pytester, **options: str) -> None:
    lines = ["[pytest]", "judge_scenarios = scenario.yaml"]
    lines += [f"{k} = {v}" for k, v in options.items()]
    pytester.makefile(".ini", pytest="\n".join(lines) + "\n")


def example(pytester: pytest.Pytester, name: str, *traces: str) -> Path:
    """Copy an example scenario (and the named traces, default all) under scenarios/."""
    dst = pytester.path / "scenarios" / name
    dst.mkdir(parents=True)
    shutil.copy(EXAMPLES / name / "scenario.yaml", dst)
    for t in traces or [p.name for p in (EXAMPLES / name).glob("*.json")]:
        shutil.copy(EXAMPLES / name / t, dst)
    return dst


def trace(trace_id: str, name: str = "pass", **changes: Any) -> dict[str, Any]:
    doc = json.loads((EXAMPLES / "refund-once" / f"{name}.json").read_text())
    doc["trace_id"] = trace_id
    doc.update(changes)
    return dict(doc)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*ARGS, *args)


def test_a_passing_trace_is_a_passing_item_named_scenario_then_trace(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    example(pytester, "refund-once", "pass.json")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["scenarios/refund-once/scenario.yaml::refund-once::refund-once/pass PASSED*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_veto_fails_the_item_with_the_diagnosis_first_divergence_first(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    example(pytester, "refund-once")
    result = run(pytester, "-vv")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    block = out.split(" refund-once/fail-second-refund (scenario refund-once) ___", 1)[1]
    lines = block.split("\n", 1)[1].splitlines()  # after the header line
    assert lines[0] == "refund-once/fail-second-refund (scenario refund-once, 12 events)"
    assert lines[1].startswith("  a second refund of an already refunded order at turn 3 "
                               "(seq 10)")
    assert "VETOED: forbidden (seq 10)" in block
    assert "trace: scenarios/refund-once/fail-second-refund.json" in block
    assert "Traceback" not in out and "def runtest" not in out
    # the short summary carries the first divergence (-vv: not trimmed to the terminal)
    result.stdout.fnmatch_lines([
        "FAILED scenarios/refund-once/scenario.yaml::refund-once::"
        "refund-once/fail-second-refund - a second refund of an already refunded order*"])


def test_junit_xml_failure_message_is_the_first_divergence(pytester: pytest.Pytester) -> None:
    ini(pytester)
    example(pytester, "refund-once", "pass.json", "fail-no-confirmation.json")
    run(pytester, "--junitxml=out.xml")
    cases = {c.get("name"): c for c in ElementTree.parse(pytester.path / "out.xml").iter(
        "testcase")}
    failure = cases["refund-once/fail-no-confirmation"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("`refund_order` called at turn 1 (seq 4) "
                                                 "before the agent ever stated")
    assert "VETOED: confirmation (seq 4)" in (failure.text or "")
    props = {p.get("name"): p.get("value")
             for p in cases["refund-once/pass"].iter("property")}
    assert props == {"judge_eligible": "True", "judge_quality_score": "1.0",
                     "judge_failures": "0"}


def test_every_trace_of_a_jsonl_file_is_an_item(pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    (d / "pass.json").unlink()
    lines = [json.dumps(trace("run-1")), json.dumps(trace("run-2", "fail-second-refund")),
             json.dumps(trace("run-3"))]
    # a streamed trace: header line, then one event per line
    streamed = trace("run-4")
    events = streamed.pop("events")
    lines += [json.dumps(streamed), *(json.dumps(e) for e in events)]
    (d / "nightly.jsonl").write_text("\n".join(lines) + "\n")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*::refund-once::run-1 PASSED*",
        "*::refund-once::run-2 FAILED*",
        "*::refund-once::run-3 PASSED*",
        "*::refund-once::run-4 PASSED*"])
    assert "trace: scenarios/refund-once/nightly.jsonl:2" in result.stdout.str()


def test_one_item_runs_alone_by_node_id(pytester: pytest.Pytester) -> None:
    ini(pytester)
    example(pytester, "refund-once")
    result = run(pytester, "scenarios/refund-once/scenario.yaml::refund-once::"
                           "refund-once/fail-second-refund")
    result.assert_outcomes(failed=1)
    result = run(pytester, "-k", "pass")
    result.assert_outcomes(passed=1, deselected=2)


def test_a_bad_scenario_is_a_collection_error_naming_file_line_and_field(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    text = (d / "scenario.yaml").read_text()
    (d / "scenario.yaml").write_text(text.replace("  mutating_tools:", "  mutatin_tools:"))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "mutating_tools:" in s)
    assert (f"scenarios/refund-once/scenario.yaml:{line}: rules.mutatin_tools: unknown field"
            in out)
    assert "Traceback" not in out and "INTERNALERROR" not in out


def test_a_broken_cross_reference_is_a_collection_error(pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    text = (d / "scenario.yaml").read_text()
    (d / "scenario.yaml").write_text(text.replace("key: refundOnce\n", "key: refundOnse\n"))
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*scenario.yaml:*: rules.forbidden[[]0].key: field 'key': "
                                 "key 'refundOnse' is not in the reviewed ledger*"])


def test_a_bad_trace_is_its_own_collection_error_and_the_others_still_collect(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    bad = trace("run-2")
    bad["events"][1]["kind"] = "tool_cal"
    other = trace("run-3", scenario="another-scenario")
    (d / "more.jsonl").write_text("\n".join(
        [json.dumps(trace("run-1")), json.dumps(bad), "{not json", json.dumps(other)]) + "\n")
    result = run(pytester, "--continue-on-collection-errors", "-v")
    result.assert_outcomes(passed=2, errors=3)
    out = result.stdout.str()
    assert "scenarios/refund-once/more.jsonl:2: events[1].kind: Input should be" in out
    assert "scenarios/refund-once/more.jsonl:3: malformed JSON" in out
    assert ("scenarios/refund-once/more.jsonl:4: field 'scenario': trace 'run-3' is for "
            "scenario 'another-scenario', not 'refund-once'") in out
    result.stdout.fnmatch_lines(["ERROR scenarios/refund-once/scenario.yaml::refund-once::"
                                 "more.jsonl:2*"])
    # without --continue-on-collection-errors, pytest stops before running anything
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=3)


def test_failures_that_are_not_vetoes_warn_and_fail_under_strict(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    text = (d / "scenario.yaml").read_text()
    (d / "scenario.yaml").write_text(text.replace("max_steps: 10", "max_steps: 2"))
    result = run(pytester)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*JudgeWarning: refund-once/pass: eligible, but 1 check(s) "
                                 "failed (quality score 0.75); first: *"])
    result = run(pytester, "--judge-strict")
    result.assert_outcomes(failed=1)
    assert "fail under --judge-strict" in result.stdout.str()
    ini(pytester, judge_strict="true")
    run(pytester).assert_outcomes(failed=1)


def test_a_draft_scenario_warns_and_strict_refuses_it(pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    text = (d / "scenario.yaml").read_text()
    (d / "scenario.yaml").write_text(text.replace("id: refund-once\n",
                                                  "status: draft\nid: refund-once\n"))
    line = text.splitlines().index("id: refund-once") + 1
    result = run(pytester)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([f"*JudgeWarning: scenarios/refund-once/scenario.yaml:{line}: "
                                 "field 'status': unreviewed draft*"])
    result = run(pytester, "--judge-strict")
    result.assert_outcomes(errors=1)
    assert "refused under --judge-strict" in result.stdout.str()


def test_traces_elsewhere_by_scenario_id(pytester: pytest.Pytester) -> None:
    ini(pytester, judge_traces="../../traces/{scenario}/*.jsonl")
    d = example(pytester, "refund-once", "pass.json")
    (d / "pass.json").unlink()
    traces = pytester.path / "traces" / "refund-once"
    traces.mkdir(parents=True)
    (traces / "a.jsonl").write_text(json.dumps(trace("a")) + "\n")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*::refund-once::a PASSED*"])


def test_no_trace_files_is_a_warning(pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    (d / "pass.json").unlink()
    result = run(pytester)
    result.stdout.fnmatch_lines(["*JudgeWarning: *scenario.yaml: no trace file matches "
                                 "judge_traces (*.json, *.jsonl)*"])
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_duplicate_and_hostile_trace_ids_get_readable_distinct_names(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    (d / "more.jsonl").write_text(json.dumps(trace("refund-once/pass")) + "\n"
                                  + json.dumps(trace("evil\x1b[31m\nid")) + "\n")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "::refund-once/pass PASSED" in out
    assert "::refund-once/pass@more.jsonl:1 PASSED" in out
    assert "::evil\\x1b[31m\\nid PASSED" in out
    assert "\x1b[31m" not in out


def test_the_plugin_is_off_until_judge_scenarios_is_set(pytester: pytest.Pytester) -> None:
    example(pytester, "refund-once")
    pytester.makefile(".ini", pytest="[pytest]\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result = run(pytester, "-o", "judge_scenarios=scenario.yaml")
    result.assert_outcomes(passed=1, failed=2)


def test_a_path_glob_collects_only_matching_scenarios(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest="[pytest]\njudge_scenarios = scenarios/refund-*/"
                                     "scenario.yaml\n")
    example(pytester, "refund-once", "pass.json")
    example(pytester, "browser-correction", "pass.json")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    assert "browser-correction" not in result.stdout.str()


def test_the_judge_repository_run_is_untouched(pytestconfig: pytest.Config) -> None:
    """Installed in this venv, the plugin is loaded here too, and stays inert."""
    assert pytestconfig.pluginmanager.has_plugin("judge")
    assert pytestconfig.getini("judge_scenarios") == []
    assert pytestconfig.pluginmanager.get_plugin("judge-scenarios") is None


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    """What pytest imports at start-up in every project of the environment: pytest only."""
    probe = ("import sys, json; before = set(sys.modules); import judge.pytest_plugin; "
             "print(json.dumps(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", "import pytest; " + probe],
                          capture_output=True, text=True, timeout=60, check=True)
    added = json.loads(done.stdout)
    assert added == ["judge", "judge.pytest_plugin"], added


def test_the_warning_class_is_importable_for_filters() -> None:
    assert issubclass(JudgeWarning, UserWarning)
    assert JudgeWarning.__module__ == "judge.pytest_plugin"


def test_the_readme_configuration_runs_as_shown(pytester: pytest.Pytester) -> None:
    """The pyproject.toml block of the README's "Use it in your test suite"."""
    readme = (EXAMPLES.parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it in your test suite", 1)[1].split("\n## ", 1)[0]
    (toml,) = re.findall(r"```toml\n(.*?)```", section, flags=re.S)
    pytester.makepyprojecttoml(toml)
    pytester.mkdir("tests")
    example(pytester, "refund-once")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["scenarios/refund-once/scenario.yaml::refund-once::refund-once/pass PASSED*"])


def test_the_warning_points_at_the_trace_and_hostile_text_is_escaped(
        pytester: pytest.Pytester) -> None:
    ini(pytester)
    d = example(pytester, "refund-once", "pass.json")
    text = (d / "scenario.yaml").read_text()
    (d / "scenario.yaml").write_text(text.replace("max_steps: 10", "max_steps: 2"))
    evil = trace("run-2", scenario="other\x1b]0;pwned\x07")
    (d / "more.jsonl").write_text(json.dumps(trace("run-1")) + "\n" + json.dumps(evil) + "\n")
    result = run(pytester, "--continue-on-collection-errors")
    result.assert_outcomes(passed=2, errors=1, warnings=2)
    out = result.stdout.str()
    assert "scenarios/refund-once/more.jsonl:1: JudgeWarning: run-1: eligible, but" in out
    assert "for scenario 'other\\x1b]0;pwned\\x07', not 'refund-once'" in out
    assert "\x1b" not in out and "\x07" not in out


def test_an_item_run_twice_gets_its_report_twice(pytester: pytest.Pytester) -> None:
    """A rerun (pytest-rerunfailures, --lf in one session) checks the file again."""
    ini(pytester)
    example(pytester, "refund-once", "fail-second-refund.json")
    items, _ = pytester.inline_genitems(*ARGS)
    (item,) = items
    for _ in range(2):
        with pytest.raises(Exception, match="a second refund of an already refunded order"):
            item.runtest()


# -- issue #21: patterns that cannot match, and trace files outside the project ------------

def test_an_unusable_judge_scenarios_glob_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """`judge_scenarios = ["["]` used to collect nothing, without a word."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\njudge_scenarios = ["["]\n')
    example(pytester, "refund-once", "pass.json")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge_scenarios: '[' is not a usable glob: the '[' at "
                                 "position 1 opens a character class that is never closed*"])
    assert "Traceback" not in result.stderr.str()


def test_a_toml_list_in_an_ini_file_is_a_usage_error_that_says_so(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest='[pytest]\njudge_scenarios = ["scenario.yaml"]\n'
                                     'judge_traces = *.json\n  [x\n')
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "judge_scenarios: '[\"scenario.yaml\"]' is not a usable glob: this looks like a " \
           "TOML list; in an INI file" in err
    assert "judge_traces: '[x' is not a usable glob" in err


def test_a_pattern_that_matches_no_scenario_warns(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest="[pytest]\njudge_scenarios = scenario.yaml\n"
                                     "  scenarios/nothing-*/scenario.yaml\n")
    example(pytester, "refund-once", "pass.json")
    pytester.makepyfile(test_other="def test_ok():\n    pass\n")
    result = run(pytester)
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*JudgeWarning: judge_scenarios: 'scenarios/nothing-*/"
                                 "scenario.yaml' matched no scenario file*"])
    # a run of one chosen test file meets no scenario, and that is no news
    result = run(pytester, "test_other.py")
    result.assert_outcomes(passed=1)
    assert "JudgeWarning" not in result.stdout.str()


def test_judge_traces_outside_the_project_root_are_refused_unread(
        pytester: pytest.Pytester) -> None:
    outside = pytester.path.parent / f"{pytester.path.name}-outside"
    outside.mkdir()
    (outside / "secret.json").write_text(json.dumps(trace("stolen")))
    for pattern in ("/etc/*", f"{outside}/*.json", "../../../*/secret.json"):
        ini(pytester, judge_traces=pattern)
        d = example(pytester, "refund-once", "pass.json") if pattern == "/etc/*" else \
            pytester.path / "scenarios" / "refund-once"
        result = run(pytester, "-v")
        result.assert_outcomes(errors=1)
        out = result.stdout.str()
        assert f"judge_traces: {pattern!r} reaches" in out, out
        assert "outside the project root" in out and "nothing there was read" in out
        assert "stolen" not in out and "PASSED" not in out
    # a link inside the project that leads out is refused too; the trace beside it is read
    ini(pytester)
    (d / "link.json").symlink_to(outside / "secret.json")
    result = run(pytester, "-v", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "judge_traces: '*.json' reaches" in out and "link.json" in out
    assert "stolen" not in out


def test_judge_traces_inside_the_root_but_outside_the_scenario_dir_still_work(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest="[pytest]\njudge_scenarios = scenario.yaml\n"
                                     "judge_traces = ../../traces/*.json\n")
    example(pytester, "refund-once", "pass.json")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "t.json").write_text(json.dumps(trace("kept")))
    run(pytester, "-v").assert_outcomes(passed=1)


# -- the judge_recorder fixture ------------------------------------------------------------

AGENT_TEST = '''
import pytest

def refund_agent(rec, refunds=1):
    @rec.tool("get_order")
    def get_order(orderId):
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    @rec.tool("refund_order", mutating=True)
    def refund_order(orderId, amountCents):
        return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

    rec.user("Hi, order-17 arrived broken. I'd like a refund please.")
    get_order(orderId="order-17")
    rec.assistant("I can refund order-17 in full: $42.00. Shall I go ahead?")
    rec.user("Yes, please.")
    for _ in range(refunds):
        refund_order(orderId="order-17", amountCents=4200)
    rec.assistant("Done: refund rf-1 of $42.00 is confirmed.")

def test_refund_once(judge_recorder):
    refund_agent(judge_recorder("scenarios/refund-once"))

def test_refund_twice(judge_recorder):
    refund_agent(judge_recorder("scenarios/refund-once"), refunds=2)

def test_crashes(judge_recorder):
    rec = judge_recorder("scenarios/refund-once")
    rec.user("hello")
    raise RuntimeError("agent crashed")
'''


def recorder_project(pytester: pytest.Pytester, **ini_options: str) -> None:
    lines = ["[pytest]", *(f"{k} = {v}" for k, v in ini_options.items())]
    pytester.makefile(".ini", pytest="\n".join(lines) + "\n")
    example(pytester, "refund-once", "pass.json")
    pytester.makepyfile(test_agent=AGENT_TEST)


def test_judge_recorder_checks_the_trace_and_a_veto_fails_the_test(
        pytester: pytest.Pytester) -> None:
    recorder_project(pytester, judge_record_dir="recorded")
    result = run(pytester, "-vv", "test_agent.py", "--junitxml=out.xml")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["test_agent.py::test_refund_once PASSED*",
                                 "test_agent.py::test_refund_twice FAILED*",
                                 "test_agent.py::test_crashes FAILED*"])
    block = out.split("_ test_refund_twice _", 1)[1].split("\n", 1)[1].split("\n_", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "test_agent.py::test_refund_twice (scenario refund-once, 10 events)"
    assert lines[1].startswith("  a second refund of an already refunded order at turn 2 "
                               "(seq 8)")
    assert "VETOED: forbidden (seq 8)" in block
    saved = (pytester.path / "recorded" / "test_agent.py_test_refund_twice"
             / "test_agent.py_test_refund_twice.json")
    assert f"trace: {saved}" in block and "Traceback" not in block
    # the kept file is what `judge check` calls a veto
    judge = str(Path(sys.executable).parent / "judge")
    done = subprocess.run([judge, "check", str(EXAMPLES / "refund-once"), str(saved)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "a second refund" in done.stdout
    # a test that fails by itself keeps its trace too, and says where
    crash = out.split("_ test_crashes _", 1)[1]
    assert "RuntimeError: agent crashed" in crash
    assert "Captured judge call" in crash and "test_crashes.json" in crash
    assert json.loads((pytester.path / "recorded" / "test_agent.py_test_crashes"
                       / "test_agent.py_test_crashes.json").read_text())["events"][0][
        "text"] == "hello"
    props = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
             for c in ElementTree.parse(pytester.path / "out.xml").iter("testcase")}
    assert props["test_refund_once"]["judge_trace"].endswith("test_refund_once.json")


def test_judge_recorder_keeps_traces_in_tmp_path_by_default(
        pytester: pytest.Pytester) -> None:
    recorder_project(pytester)
    pytester.makepyfile(test_where='''
def test_where(judge_recorder, tmp_path):
    rec = judge_recorder("scenarios/refund-once", trace_id="refund-once/mine")
    rec.user("hi")
    assert rec.path == tmp_path / "refund-once_mine.json"
    second = judge_recorder(None)
    assert second.trace_id.endswith("test_where#2") and second.scenario is None
''')
    run(pytester, "test_where.py").assert_outcomes(passed=1)


def test_judge_recorder_warns_on_failures_that_are_not_vetoes_and_strict_fails(
        pytester: pytest.Pytester) -> None:
    recorder_project(pytester)
    pytester.makepyfile(test_forced='''
from judge.record import Call, Limits, Step, drive

def test_forced(judge_recorder):
    rec = judge_recorder("scenarios/refund-once")

    @rec.tool("get_order")
    def get_order(orderId):
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    rec.user("Where is order-17?")
    drive(lambda run: Step(calls=[Call("get_order", {"orderId": "order-17"})]), rec.tools,
          limits=Limits(max_steps=2))
''')
    result = run(pytester, "test_forced.py")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*JudgeWarning: test_forced.py::test_forced: eligible, but "
                                 "1 check(s) failed*first: run stopped by its driver "
                                 "(max_steps)*"])
    result = run(pytester, "test_forced.py", "--judge-strict")
    result.assert_outcomes(failed=1)
    assert "fail under --judge-strict" in result.stdout.str()


def test_judge_recorder_names_a_missing_or_broken_scenario(pytester: pytest.Pytester) -> None:
    recorder_project(pytester)
    d = pytester.path / "scenarios" / "refund-once"
    (d / "scenario.yaml").write_text((d / "scenario.yaml").read_text().replace(
        "key: refundOnce\n", "key: refundOnse\n"))
    pytester.makepyfile(test_bad='''
def test_missing(judge_recorder):
    judge_recorder("scenarios/nowhere")

def test_broken(judge_recorder):
    judge_recorder("scenarios/refund-once")
''')
    result = run(pytester, "test_bad.py")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "judge_recorder: no scenario at 'scenarios/nowhere'" in out
    assert "key 'refundOnse' is not in the reviewed ledger" in out
    assert "Traceback" not in out
