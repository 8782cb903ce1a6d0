"""Writes the static part of the hostile-input corpus (tests/test_hostile_inputs.py).

    .venv/bin/python tests/data/hostile/build.py

Every file here is bad input that judge must refuse with exit 2 and one line on stderr (see
README.md). Inputs that only exist at run time (directories, FIFOs, symbolic link loops,
devices, huge lines) are made by the test itself.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SCENARIO = """\
# A small valid scenario the bad traces are checked against.
id: refund
goal: Refund order-17 once
ledger:
  - {turn: 1, op: set, key: refundOnce, class: constraint, persistence: session,
     sensitivity: safety_critical, source: user, value: one refund, aliases: [one refund]}
  - {turn: 1, op: set, key: refunded, class: completion, persistence: task,
     sensitivity: costly, source: user, value: rf}
  - {turn: 3, op: complete, key: refunded, source: tool, value: rf-1}
rules:
  mutating_tools: [refund_order]
  forbidden:
    - {name: second-refund, tool: refund_order, after_completed: refunded, key: refundOnce}
  completion:
    all_of: [{key: refunded, tool: refund_order}]
judge:
  - {rubric: scope_fidelity, on: tool_call, tools: ["*"]}
"""

GOOD: dict[str, Any] = {"trace_id": "refund/pass", "scenario": "refund", "events": [
    {"kind": "user", "text": "refund order-17"},
    {"kind": "tool_call", "tool": "refund_order", "args": {"orderId": "order-17"}},
    {"kind": "tool_result", "tool": "refund_order", "result": {"status": "ok"}},
    {"kind": "assistant", "text": "Done."}]}


def nest(n: int, leaf: Any = 1) -> Any:
    out = leaf
    for _ in range(n):
        out = {"a": out}
    return out


def with_event(i: int, **fields: Any) -> dict[str, Any]:
    events = [dict(e) for e in GOOD["events"]]
    events[i] = {**events[i], **fields}
    return {**GOOD, "events": events}


def dumps(obj: Any) -> str:
    return json.dumps(obj)


def traces() -> dict[str, bytes | str]:
    good = dumps(GOOD)
    header = dumps({k: v for k, v in GOOD.items() if k != "events"})
    lines = [dumps(e) for e in GOOD["events"]]
    return {
        "truncated.json": good[: len(good) // 2],
        "truncated.jsonl": good + "\n" + good[:40] + "\n",
        "array.json": "[1, 2, 3]",
        "string.json": '"a trace"',
        "null.json": "null",
        "events-not-list.json": dumps({**GOOD, "events": "user said hi"}),
        "events-missing.json": dumps({"trace_id": "t"}),
        "kind-unknown.json": dumps(with_event(0, kind="shout")),
        "kind-missing.json": dumps({**GOOD, "events": [{"text": "hi"}]}),
        "seq-string.json": dumps(with_event(0, seq="one")),
        "seq-negative.json": dumps(with_event(0, seq=-3)),
        "seq-duplicate.json": dumps({**GOOD, "events": [
            {**e, "seq": 1} for e in GOOD["events"]]}),
        "seq-huge-float.json": good.replace('"kind": "user"', '"seq": 1e400, "kind": "user"'),
        "seq-5000-digits.json": good.replace('"kind": "user"',
                                             '"seq": ' + "9" * 5000 + ', "kind": "user"'),
        "turn-nan.json": good.replace('"kind": "user"', '"turn": NaN, "kind": "user"'),
        "text-number.json": dumps(with_event(0, text=42)),
        "args-list.json": dumps(with_event(1, args=[1, 2])),
        "field-typo.json": dumps({**GOOD, "evnts": []}),
        "event-field-foreign.json": dumps(with_event(0, tool="refund_order")),
        "trace-id-empty.json": dumps({**GOOD, "trace_id": ""}),
        "trace-id-number.json": dumps({**GOOD, "trace_id": 17}),
        "metadata-string.json": dumps({**GOOD, "metadata": "note"}),
        "candidate-list.json": dumps({**GOOD, "candidate": ["gpt"]}),
        "nul-byte-raw.json": good.replace("refund order-17", "refund\x00order-17"),
        "control-char-raw.json": good.replace("refund order-17", "refund\x1b[2Jorder"),
        "invalid-utf8.json": good.encode().replace(b"refund order-17", b"refund \xff\xfe"),
        "invalid-utf8-line2.jsonl": (good + "\n").encode() + b'{"trace_id": "\xc3\x28"}\n',
        "bom.json": "\ufeff" + good,
        "deep-metadata-300.json": dumps({**GOOD, "metadata": nest(300)}),
        "deep-args-250.json": dumps(with_event(1, args={"x": nest(250)})),
        "deep-result-list-2000.json": dumps(with_event(2, result=[])).replace(
            '"result": []', '"result": ' + "[" * 2000 + "]" * 2000),
        "deep-streamed-250.jsonl": "\n".join(
            [header, *lines[:2], dumps({**GOOD["events"][2], "result": nest(250)}), lines[3]])
        + "\n",
        "event-before-header.jsonl": "\n".join([lines[0], header, *lines]) + "\n",
        "empty.json": "",
        "empty.jsonl": "",
        "blank-lines.jsonl": "\n\n   \n\t\n",
        "crlf-blank-lines.jsonl": "\r\n\r\n",
        "trace.txt": good,
        "garbage.jsonl": "this is not json\n",
        "number-line.jsonl": "42\n",
    }


ALIAS_BOMB_HEAD = """\
id: bomb
goal: Expand me
ledger:
  - turn: 1
    op: set
    key: payload
    class: constraint
    persistence: task
    sensitivity: normal
    source: user
    value:
"""


def alias_bomb() -> str:
    """A 'billion laughs' in a ledger value: ~3.6 KB, 9^9 strings once expanded."""
    rows = ['      a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    letters = "abcdefghij"
    for prev, cur in itertools.pairwise(letters):
        refs = ", ".join([f"*{prev}"] * 9)
        rows.append(f"      {cur}: &{cur} [{refs}]")
    text = ALIAS_BOMB_HEAD + "\n".join(rows) + "\n"
    pad = "# " + "padding to the issue's size; aliases come first " * 2 + "\n"
    while len(text) < 3600:
        text += pad
    return text


def scenarios() -> dict[str, bytes | str]:
    ok = SCENARIO
    return {
        "duplicate-key.yaml": ok.replace("  mutating_tools: [refund_order]\n",
                                         "  mutating_tools: [refund_order]\n  forbidden: []\n"),
        "duplicate-top-key.yaml": ok + "goal: Something else\n",
        "alias-bomb.yaml": alias_bomb(),
        "anchor.yaml": ok.replace("goal: Refund order-17 once", "goal: &g Refund order-17 once"),
        "merge-key.yaml": ok.replace(
            "  - {turn: 3, op: complete, key: refunded, source: tool, value: rf-1}",
            "  - {<<: {turn: 3, op: complete}, key: refunded, source: tool, value: rf-1}"),
        "deep-flow-10000.yaml": ok.replace("goal: Refund order-17 once",
                                           "goal: " + "[" * 10000 + "]" * 10000),
        "deep-block-250.yaml": ok.replace("value: rf-1}", "value: rf-1}\n  - turn: 3\n"
                                          "    op: set\n    key: deep\n    class: fact\n"
                                          "    persistence: task\n    sensitivity: normal\n"
                                          "    source: tool\n    value:\n" + "".join(
            "  " * (i + 3) + f"k{i}:\n" for i in range(250)) + "  " * 253 + "x\n"),
        "invalid-regex.yaml": ok.replace(
            "    all_of: [{key: refunded, tool: refund_order}]",
            "    all_of: [{key: refunded, tool: refund_order}]\n    success_claims: ['(open']"),
        "unknown-ledger-key.yaml": ok.replace("key: refundOnce}", "key: refundTwice}"),
        "empty.yaml": "",
        "comments-only.yaml": "# nothing here\n",
        "top-level-list.yaml": "- id: refund\n",
        "top-level-scalar.yaml": "refund\n",
        "unknown-field.yaml": ok + "rulez: {}\n",
        "ledger-not-list.yaml": ok.replace("ledger:\n", "ledger: nope\nx_ledger:\n"),
        "wrong-op.yaml": ok.replace("op: complete", "op: finish"),
        "nul-byte.yaml": ok.replace("Refund order-17 once", "Refund\x00order-17"),
        "invalid-utf8.yaml": ok.encode().replace(b"Refund order-17", b"Refund \xff\xfe"),
        "tab-indent.yaml": ok.replace("  mutating_tools", "\tmutating_tools"),
        "python-tag.yaml": ok.replace("goal: Refund order-17 once",
                                      "goal: !!python/object/apply:os.system [echo hi]"),
        "binary-tag.yaml": ok.replace("value: one refund", "value: !!binary aGVsbG8="),
        "set-tag.yaml": ok.replace("value: one refund", "value: !!set {a, b}"),
        "int-5000-digits.yaml": ok.replace("  completion:", "  budgets: {max_steps: "
                                           + "9" * 5000 + "}\n  completion:"),
        "two-documents.yaml": ok + "---\nid: other\n",
        "unterminated-quote.yaml": ok.replace("goal: Refund order-17 once", 'goal: "Refund'),
    }


def suites() -> dict[str, str]:
    def suite(traces: str, scenario: str = "scenario") -> str:
        return ("suites:\n  nightly:\n    rubrics: [scope_fidelity]\n    scenarios:\n"
                f"      - scenario: {scenario}\n        traces: {traces}\n")
    return {
        "outside-dotdot.yaml": suite('["../../../../../../../../tmp/*.json"]'),
        "outside-absolute.yaml": suite('["/etc/hostname"]'),
        "outside-scenario.yaml": suite('["traces/good.json"]', scenario="../../../examples/"
                                       "scenarios/refund-once"),
        "outside-absolute-scenario.yaml": suite('["traces/good.json"]', scenario="/tmp"),
        "no-match.yaml": suite('["traces/nothing-*.json"]'),
        "duplicate-key.yaml": suite('["traces/good.json"]') + "    rubrics: []\n",
        "alias.yaml": suite('&t ["traces/good.json"]') + "      - scenario: scenario\n"
                                                         "        traces: *t\n",
        "empty.yaml": "",
        "no-suites.yaml": "suites: {}\n",
        "bad-release.yaml": suite('["traces/good.json"]') + "    release: {quality_floor: 7}\n",
        "invalid-regex-scenario.yaml": suite('["traces/good.json"]',
                                             scenario="scenarios/invalid-regex.yaml"),
        "bad-trace-only.yaml": suite('["traces/truncated.json"]'),
    }


def labels() -> dict[str, bytes | str]:
    label = {"item_id": "refund/pass#2:scope_fidelity", "label": "pass",
             "annotator": "asha", "created_at": "2026-11-01T10:00:00Z"}
    line = dumps(label)
    return {
        "truncated.jsonl": line[:30] + "\n",
        "wrong-type.jsonl": dumps({**label, "label": 1}) + "\n",
        "array.jsonl": "[1]\n",
        "invalid-utf8.jsonl": line.encode().replace(b"asha", b"\xff\xfe") + b"\n",
        "deep.jsonl": "[" * 100000 + "]" * 100000 + "\n",
        "int-5000-digits.jsonl": line.replace('"asha"', "9" * 5000) + "\n",
    }


def write(directory: str, files: dict[str, bytes | str]) -> None:
    d = HERE / directory
    d.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (d / name).write_bytes(data)


def main() -> None:
    (HERE / "scenario").mkdir(exist_ok=True)
    (HERE / "scenario" / "scenario.yaml").write_text(SCENARIO)
    write("traces", {"good.json": dumps(GOOD), **traces()})
    write("scenarios", scenarios())
    write("suites", suites())
    write("labels", labels())


if __name__ == "__main__":
    main()
