"""`judge run --junit FILE`: JUnit XML a CI system reads, whatever the traces hold.

No JUnit XSD is committed (no schema validator is a dependency either); `assert_junit_shape`
checks the structure of the common schema (Jenkins' junit-10.xsd, which GitLab, GitHub test
reporters and pytest's --junitxml follow): root `testsuites`, each `testsuite` with name and
integer tests/failures/errors/skipped that match its cases, each `testcase` with name and
classname and at most one `failure`/`error` carrying `message` and `type`.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.suite.junit import GATE_CLASS, divergence_text, to_junit, xml_text
from tests.hostile_text import HOSTILE

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "scenarios"


def assert_junit_shape(doc: str) -> ET.Element:
    root = ET.fromstring(doc.encode("utf-8"))  # raises on anything XML 1.0 forbids
    assert root.tag == "testsuites"
    for suite in root:
        assert suite.tag == "testsuite" and suite.get("name")
        cases = suite.findall("testcase")
        assert {c.tag for c in suite} <= {"properties", "testcase"}
        fails = sum(1 for c in cases if c.find("failure") is not None)
        errors = sum(1 for c in cases if c.find("error") is not None)
        skips = sum(1 for c in cases if c.find("skipped") is not None)
        assert (int(suite.get("tests", "-1")), int(suite.get("failures", "-1")),
                int(suite.get("errors", "-1")), int(suite.get("skipped", "-1"))) == \
            (len(cases), fails, errors, skips)
        float(suite.get("time", "x"))
        for c in cases:
            assert c.get("name") is not None and c.get("classname") is not None
            children = list(c)
            assert len(children) <= 1
            assert {x.tag for x in children} <= {"failure", "error", "skipped"}
            for x in children:  # a skip (an expected failure) has a message only
                assert x.get("message") is not None
                assert bool(x.get("type")) == (x.tag != "skipped")
    return root


def _run_suite(tmp_path: Path, *extra: str) -> tuple[int, str]:
    import shutil

    shutil.copytree(SCEN, tmp_path / "scenarios")
    (tmp_path / "s.yaml").write_text(
        "suites:\n  ci:\n    rubrics: [scope_fidelity]\n    scenarios:\n"
        "      - {scenario: scenarios/refund-once, traces: ['scenarios/refund-once/*.json']}\n"
        "      - {scenario: scenarios/browser-correction,\n"
        "         traces: [scenarios/browser-correction/pass.json]}\n"
        "    release: {max_review_share: 1.0, min_scenario_pass_rate: 1.0}\n")
    res = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--no-progress",
                                   "--junit", str(tmp_path / "j.xml"), *extra])
    return res.exit_code, res.stdout + res.stderr


def test_junit_case_per_trace_and_gate_failure(tmp_path: Path) -> None:
    code, out = _run_suite(tmp_path, "--summary-md", str(tmp_path / "step.md"))
    assert code == 1, out
    root = assert_junit_shape((tmp_path / "j.xml").read_text(encoding="utf-8"))
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    traces = {p.stem for p in (SCEN / "refund-once").glob("*.json")}
    assert {n for s, n in cases if s == "refund-once"} == {f"refund-once/{t}" for t in traces}
    assert ("browser-correction", "browser-correction/pass") in cases
    assert cases["refund-once", "refund-once/pass"].find("failure") is None
    veto = cases["refund-once", "refund-once/fail-second-refund"].find("failure")
    assert veto is not None and veto.get("type") == "veto"
    # the message is the first divergence, as the text report shows it
    assert veto.get("message", "").startswith("forbidden (seq 10") or "seq 10" in \
        veto.get("message", "")
    gate = cases[GATE_CLASS, "ci"].find("failure")
    assert gate is not None and "scenario pass rate" in gate.get("message", "")
    assert (tmp_path / "step.md").read_text().startswith("# Run run-")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["run_id"] and props["model"] == "heuristic"
    # a second run appends its step summary (GitHub's $GITHUB_STEP_SUMMARY collects steps)
    _ = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--no-progress",
                                 "--summary-md", str(tmp_path / "step.md")])
    assert (tmp_path / "step.md").read_text().count("# Run run-") == 2


def test_junit_output_that_cannot_be_written_is_exit_2_before_the_run(tmp_path: Path) -> None:
    code, out = _run_suite(tmp_path, "--junit", str(tmp_path / "no" / "such" / "j.xml"))
    assert code == 2 and "does not exist" in out
    assert not (tmp_path / "judge.db").exists()


_SUMMARY: dict[str, Any] = {
    "run_id": "run-1", "suite": "ci", "manifest": "s.yaml",
    "judge": {"name": "heuristic", "model": "heuristic"},
    "gate": {"passed": False, "reasons": ["1 safety-critical violation(s) (allowed 0)"]},
    "traces": [{"trace_id": "t/1", "scenario": "sc", "passed": False, "eligible": False,
                "quality": 0.5, "safety_critical_failures": 1, "judge_fails": 0,
                "first_divergence": {"check": "forbidden", "seq": 4, "turn": 1, "key": "k",
                                     "severity": "unsafe", "safety_critical": True,
                                     "message": "m"}}],
    "input_errors": ["bad.jsonl:3: field 'events': required"],
}


@settings(max_examples=200, deadline=None)
@given(text=st.text() | st.sampled_from(HOSTILE),
       where=st.sampled_from(["trace_id", "scenario", "message", "key", "reason", "error",
                              "suite", "judge"]))
def test_any_trace_text_gives_well_formed_junit_that_keeps_it_as_text(text: str,
                                                                      where: str) -> None:
    s = copy.deepcopy(_SUMMARY)
    t, div = s["traces"][0], s["traces"][0]["first_divergence"]
    {"trace_id": lambda: t.__setitem__("trace_id", text),
     "scenario": lambda: t.__setitem__("scenario", text),
     "message": lambda: div.__setitem__("message", text),
     "key": lambda: div.__setitem__("key", text),
     "reason": lambda: s["gate"]["reasons"].append(text),
     "error": lambda: s["input_errors"].append(text),
     "suite": lambda: s.__setitem__("suite", text),
     "judge": lambda: s["judge"].__setitem__("name", text)}[where]()
    doc = to_junit(s)
    root = assert_junit_shape(doc)
    # the same elements and attributes as for plain text: nothing injected, nothing broken out
    plain = assert_junit_shape(to_junit(_SUMMARY if where not in ("reason", "error")
                                        else _with_plain(where)))
    assert [(e.tag, sorted(e.attrib)) for e in root.iter()] == \
        [(e.tag, sorted(e.attrib)) for e in plain.iter()]
    assert "<![CDATA[" not in doc
    # the text survives as text (control and format characters as visible escapes)
    shown = xml_text(text)
    values = [v for e in root.iter() for v in (*e.attrib.values(), e.text or "")]
    if where == "message":
        shown = xml_text(divergence_text({**div, "message": text}))
    assert any(shown in v for v in values) or not shown.strip()


def _with_plain(where: str) -> dict[str, Any]:
    s = copy.deepcopy(_SUMMARY)
    if where == "reason":
        s["gate"]["reasons"].append("plain")
    else:
        s["input_errors"].append("plain")
    return s


def test_xml_text_leaves_nothing_xml_forbids() -> None:
    nasty = "".join(chr(c) for c in range(0x00, 0x20)) + "\ud800\ufffe\uffff\x7f\x85\u202e"
    out = xml_text(nasty, multiline=True)
    assert "\t" in out and "\n" in out and "\\x00" in out and "\\ud800" in out
    assert "\\ufffe" in out and "\\uffff" in out and "\\u202e" in out
    ET.fromstring(f"<a b='{xml_text(nasty)}'>{out}</a>".encode("utf-8", "surrogatepass"))
