"""A suite run's summary as JUnit XML, for CI systems (`judge run --junit FILE`).

One `<testcase>` per checked trace (classname = the scenario, name = the trace id: each
trial of each task is its own case), and one run-level testcase for the release gate
(classname `judge.release_gate`). A trace that did not pass — a deterministic veto, a failed
check, or a judge fail that stands — is a `<failure>` whose `message` is its first divergence
(check, seq, turn and message; the body names its task and trial, and says when the task's
trials disagree); the gate's failure message is its reasons. A trace of a task designed to
fail (`expect: fail`) that failed is `<skipped>` with "expected failure" and its divergence,
as pytest reports an xfail; one that passed is a `<failure>` of type `unexpected_pass`.
Input errors (bad traces the run skipped) are one `<error>` testcase each. The layout is
the common JUnit schema (Jenkins' junit-10.xsd, the one GitLab, GitHub test reporters and pytest's
`--junitxml` follow): `testsuites` > `testsuite` with `tests`/`failures`/`errors`/`skipped`
counts > `testcase` with at most one `failure` or `error`.

Every string from a trace is hostile. ElementTree escapes markup (`<`, `&`, quotes) and no
CDATA section is ever written, so nothing can close one; what XML 1.0 forbids outright (C0
controls but tab/line feed, lone surrogates, U+FFFE/U+FFFF) and what would hide or reorder
text in a CI log (C1 controls, bidi and zero-width characters) is written as a visible escape
(`\\x1b`, `\\u202e`) by `xml_text`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from judge.safe_text import escape_char, one_line, visible

#: characters outside XML 1.0's Char production (after `visible`, only these can be left)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
GATE_CLASS = "judge.release_gate"


def xml_text(value: object, *, multiline: bool = False) -> str:
    """Text that is valid XML 1.0 character data and shows every control character."""
    text = visible(value, keep="\n\t" if multiline else "")
    return _NOT_XML.sub(lambda m: escape_char(m.group()), text)


def divergence_text(div: dict[str, Any] | None) -> str:
    """A first divergence on one line: `check (seq N, turn T): message`."""
    if not div:
        return ""
    where = ", ".join(f"{k} {div[k]}" for k in ("seq", "turn") if div.get(k) is not None)
    head = str(div.get("check") or "check") + (f" ({where})" if where else "")
    return f"{head}: {div.get('message') or ''}".strip()


def _task_line(t: dict[str, Any], task: dict[str, Any] | None) -> str:
    """`task 3, trial 2` and, when its trials disagree, how many passed."""
    line = f"task: {one_line(t.get('task_id'))}, trial: {one_line(t.get('trial'))}"
    if task and task.get("flaky"):
        line += (f" (flaky: {task.get('passed')} of {task.get('trials')} trials of the task "
                 "passed)")
    return line


def _trace_failure(t: dict[str, Any], task: dict[str, Any] | None = None
                   ) -> tuple[str, str, str]:
    """(type, message, body) of a trace that did not pass."""
    div = t.get("first_divergence")
    judge_fails = int(t.get("judge_fails") or 0)
    if t.get("safety_critical_failures"):
        kind = "veto"
    elif div:
        kind = "check"
    else:
        kind = "judge"
    message = divergence_text(div) or f"{judge_fails} judge verdict(s) failed"
    # each line of the body is one value on one line: trace text cannot forge a line
    body = [f"first divergence: {one_line(message)}"]
    if "task_id" in t:
        body.append(_task_line(t, task))
    if div:
        for key in ("key", "severity", "safety_critical"):
            if div.get(key) is not None:
                body.append(f"{key}: {one_line(div[key])}")
    body.append(f"eligible: {t.get('eligible')}, quality: {t.get('quality')}, "
                f"safety-critical failures: {t.get('safety_critical_failures', 0)}, "
                f"judge fails: {judge_fails}, judge pending review: "
                f"{t.get('judge_pending', 0)}")
    return kind, message, "\n".join(body)


def _case(parent: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(parent, "testcase", classname=xml_text(classname),
                         name=xml_text(name), time="0")


def _fail(case: ET.Element, tag: str, kind: str, message: str, body: str) -> None:
    """A failure or error (with its type) or a skip (junit-10.xsd gives `skipped` a message
    only), its body one value a line."""
    el = ET.SubElement(case, tag, message=xml_text(message))
    if tag != "skipped":
        el.set("type", kind)
    el.text = xml_text(body, multiline=True)


def to_junit(summary: dict[str, Any], *, seconds: float | None = None) -> str:
    """The JUnit XML document (str, with its XML declaration) of a run's summary."""
    suite_name = f"judge run {summary.get('suite') or ''}".strip()
    root = ET.Element("testsuites", name="judge")
    suite = ET.SubElement(root, "testsuite", name=xml_text(suite_name))
    props = ET.SubElement(suite, "properties")
    judge = summary.get("judge") or {}
    for name, value in (("run_id", summary.get("run_id")), ("manifest", summary.get("manifest")),
                        ("judge", judge.get("name")), ("model", judge.get("model"))):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=xml_text(value))
    tests = failures = errors = skipped = 0
    tasks = summary.get("tasks") or {}
    for t in summary.get("traces") or []:
        case = _case(suite, str(t.get("scenario")), str(t.get("trace_id")))
        tests += 1
        task = (tasks.get(t.get("scenario")) or {}).get(t.get("task_id"))
        if t.get("expect") == "fail":
            if t.get("passed"):
                failures += 1
                _fail(case, "failure", "unexpected_pass",
                      f"expected to fail (task {t.get('task_id')}), but it passed: no check "
                      "or judge caught it", _task_line(t, task))
            else:
                skipped += 1
                _, message, body = _trace_failure(t, task)
                _fail(case, "skipped", "expected_failure", f"expected failure: {message}",
                      body)
        elif not t.get("passed"):
            failures += 1
            _fail(case, "failure", *_trace_failure(t, task))
    for i, message in enumerate(summary.get("input_errors") or [], start=1):
        case = _case(suite, "judge.input", f"input error {i}")
        tests += 1
        errors += 1
        _fail(case, "error", "input", str(message), one_line(message))
    gate = summary.get("gate") or {}
    case = _case(suite, GATE_CLASS, str(summary.get("suite") or "suite"))
    tests += 1
    if not gate.get("passed"):
        failures += 1
        reasons = [str(r) for r in gate.get("reasons") or []] or ["the release gate failed"]
        _fail(case, "failure", "gate", "; ".join(reasons),
              "\n".join(one_line(r) for r in reasons))
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors),
              "skipped": str(skipped), "time": f"{seconds or 0:.3f}"}
    for el in (root, suite):
        for k, v in counts.items():
            if el is root and k == "skipped":
                continue
            el.set(k, v)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
