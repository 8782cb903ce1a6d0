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
