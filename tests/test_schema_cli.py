"""`judge schema NAME` prints a valid JSON Schema that accepts the examples and rejects typos."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from judge.cli.main import app
from judge.ledger.loader import _Loader

SCENARIOS = Path(__file__).resolve().parent.parent / "examples" / "scenarios"

VERDICT = {"item_id": "refund-once/run-1#4:scope_fidelity", "label": "fail",
           "violated_key": "refundOnce", "evidence_event": 4, "confidence": 0.82,
           "rationale": "second refund after confirmation", "rubric": "scope_fidelity",
           "prompt_version": "v2", "prompt_hash": "sha256:abc", "model": "openai:gpt-4.1-mini",
           "reason": None}
LABEL = {"item_id": "refund-once/run-1#4:scope_fidelity", "label": "fail",
         "violated_key": "refundOnce", "evidence_event": 4, "annotator": "asha",
         "created_at": "2026-11-29T10:00:00Z", "note": "duplicate refund"}
TRACE = {  # the example of formats §1, with the hyphenated kind spellings
    "trace_id": "refund-once/run-1", "scenario": "refund-once",
    "candidate": {"model": "gpt-4o-2024-08-06", "agent": "support-bot", "prompt_version": "p12"},
    "metadata": {"source": "nightly-2026-11-29"},
    "events": [
        {"seq": 1, "turn": 1, "kind": "user", "text": "Please refund order-17."},
        {"seq": 2, "turn": 1, "kind": "tool-call", "tool": "get_order",
         "args": {"orderId": "order-17"}, "call_id": "c1"},
        {"seq": 3, "turn": 1, "kind": "tool-result", "tool": "get_order", "call_id": "c1",
         "result": {"orderId": "order-17", "paidCents": 4200}},
        {"kind": "state-write", "key": "paid", "value": 4200},
        {"kind": "assistant", "text": "Refund rf-1 of $42.00 is confirmed."},
    ],
}


def schema(name: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["schema", name])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    return doc


def errors(doc: dict[str, Any], instance: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(doc).iter_errors(instance)]


def test_trace_schema_accepts_examples_and_rejects_typos() -> None:
    doc = schema("trace")
    assert errors(doc, TRACE) == []
    examples = sorted(SCENARIOS.glob("*/*.json"))
    assert len(examples) >= 10
    for path in examples:
        assert errors(doc, json.loads(path.read_text())) == [], path
    bad = json.loads(json.dumps(TRACE))
    bad["events"][0]["txt"] = "typo"
    assert errors(doc, bad)
    bad = {**TRACE, "trace_idd": "x"}
    assert errors(doc, bad)
    bad = json.loads(json.dumps(TRACE))
    bad["events"][0]["kind"] = "shout"
    assert errors(doc, bad)


def test_scenario_schema_accepts_every_example_scenario() -> None:
    doc = schema("scenario")
    props = doc["$defs"]["Delta"]["properties"]
    assert "class" in props and "class_" not in props  # the YAML spelling, not Python's
    assert "in" in doc["$defs"]["ArgMatcher"]["properties"]
    paths = sorted(SCENARIOS.glob("*/scenario.yaml"))
    assert len(paths) == 11  # refund-outcome (issue 11) is the tenth, tenant-sessions (27)
    # sessions and the leakage block (issue 27) are in the schema
    assert {"sessions", "leakage"} <= set(doc["properties"])
    assert "session" in props and "first_turn" in doc["$defs"]["SessionSpec"]["properties"]
    assert {"value", "aliases", "pattern", "note"} <= set(
        doc["$defs"]["LeakFact"]["properties"])
    for path in paths:
        data = yaml.load(path.read_text(), Loader=_Loader)  # as `load_scenario` reads it
        assert errors(doc, data) == [], path
    data = yaml.load((SCENARIOS / "refund-once" / "scenario.yaml").read_text(), Loader=_Loader)
    data["ledger"][0]["sensitivty"] = "normal"
    assert any("sensitivty" in m for m in errors(doc, data))


def test_verdict_and_label_schemas() -> None:
    verdict, label = schema("verdict"), schema("label")
    assert errors(verdict, VERDICT) == []
    assert errors(verdict, {**VERDICT, "label": "unscored", "reason": "no JSON"}) == []
    assert errors(verdict, {**VERDICT, "label": "maybe"})
    assert errors(verdict, {**VERDICT, "confidence": 1.5})
    assert errors(label, LABEL) == []
    assert errors(label, {**LABEL, "label": "unsure"}) == []
    assert errors(label, {**LABEL, "annotater": "asha"})


@pytest.mark.parametrize("name", ["traces", "", "Trace"])
def test_unknown_schema_name_is_a_usage_error(name: str) -> None:
    result = CliRunner().invoke(app, ["schema", name])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
