"""Verdict validation against the item: labels, ledger keys, shown seqs, confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.prompts import load_prompt
from judge.trace import load_traces
from judge.verdicts import VerdictInvalid, parse_verdict, unscored, verdict_schema

SCENARIOS = Path(__file__).resolve().parent.parent / "examples" / "scenarios"


@pytest.fixture
def item() -> Item:
    loaded = load_scenario(SCENARIOS / "refund-once")
    trace = load_traces([SCENARIOS / "refund-once" / "fail-second-refund.json"])[0]
    return extract_items(loaded, trace)[1]  # seq 10, the second refund


def _v(**kw: object) -> str:
    base: dict[str, object] = {"label": "fail", "violated_key": "refundOnce",
                               "evidence_event": 10, "confidence": 0.8,
                               "rationale": "second refund"}
    base.update(kw)
    return json.dumps(base)


def test_valid_fail_verdict_carries_prompt_identity(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    v = parse_verdict(_v(), item, prompt, "openai:gpt-4.1-mini")
    assert (v.label, v.violated_key, v.evidence_event, v.confidence) == (
        "fail", "refundOnce", 10, 0.8)
    assert v.item_id == item.item_id and v.rubric == "scope_fidelity"
    assert v.prompt_version == prompt.version and v.prompt_hash == prompt.hash
    assert v.model == "openai:gpt-4.1-mini" and v.reason is None


def test_json_fence_and_surrounding_prose_are_tolerated(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    assert parse_verdict("```json\n" + _v() + "\n```", item, prompt, "m").label == "fail"
    assert parse_verdict("Here it is: " + _v() + " done", item, prompt, "m").label == "fail"


def test_a_pass_names_neither_key_nor_evidence(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    for key in ("null", "", None):
        v = parse_verdict(_v(label="pass", violated_key=key, evidence_event=None), item,
                          prompt, "m")
        assert (v.label, v.violated_key, v.evidence_event) == ("pass", None, None)
    for key in ("refundOnce", "notAKey", 12345):  # a pass with a key is ambiguous: invalid
        with pytest.raises(VerdictInvalid):
            parse_verdict(_v(label="pass", violated_key=key, evidence_event=None), item,
                          prompt, "m")
    with pytest.raises(VerdictInvalid, match="a pass cites no evidence"):
        parse_verdict(_v(label="pass", violated_key=None), item, prompt, "m")


def test_a_field_named_twice_is_invalid_whichever_value_comes_last(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    body = ('{"label": "fail", "violated_key": "refundOnce", "evidence_event": 10, '
            '"confidence": 0.8, "rationale": "x", "label": "pass"}')
    for text in (body, "```json\n" + body + "\n```", "Verdict: " + body + " end"):
        with pytest.raises(VerdictInvalid, match="'label' appears more than once"):
            parse_verdict(text, item, prompt, "m")
    nested = _v(rationale="x").replace('"rationale"', '"confidence": 0.9, "rationale"')
    with pytest.raises(VerdictInvalid, match="'confidence' appears more than once"):
        parse_verdict(nested, item, prompt, "m")


@pytest.mark.parametrize(("text", "reason"), [
    ("not json at all", "not valid JSON"),
    ("", "empty completion"),
    ("[1, 2]", "expected a JSON object"),
    (_v(label="maybe"), "label must be one of pass, fail"),
    (_v(label="unscored"), "label must be one of"),
    (_v(violated_key=None), "violated_key is required when label is fail"),
    (_v(violated_key=""), "violated_key is required when label is fail"),
    (_v(violated_key="null"), "violated_key is required when label is fail"),
    (_v(violated_key="madeUpKey"), "violated_key 'madeUpKey' is not a key of the ledger"),
    (_v(violated_key=3), "violated_key must be a string"),
    (_v(evidence_event=1), "evidence_event 1 is not the seq of an event shown"),
    (_v(evidence_event="ten"), "evidence_event must be an integer"),
    (_v(evidence_event=True), "evidence_event must be an integer"),
    (_v(evidence_event=None), "evidence_event is required when label is fail"),
    (_v(evidence_event="null"), "evidence_event is required when label is fail"),
    (_v(label="pass", violated_key="refundOnce", evidence_event=None), "a pass names no"),
    (_v(label="pass", violated_key=None), "a pass cites no evidence"),
    (_v(label="pass", violated_key=None, evidence_event=1), "evidence_event 1 is not the seq"),
    (_v(confidence=1.5), "confidence must be in [0, 1]"),
    (_v(confidence=-0.1), "confidence must be in [0, 1]"),
    (_v(confidence="high"), "confidence must be a number"),
    (_v(extra_field=1), "unknown field 'extra_field'"),
])
def test_invalid_verdicts_raise_with_a_reason(item: Item, text: str, reason: str) -> None:
    with pytest.raises(VerdictInvalid) as exc:
        parse_verdict(text, item, load_prompt("scope_fidelity"), "m")
    assert reason in exc.value.reason


def test_shown_seqs_and_keys_are_what_the_item_allows(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    for seq in sorted(item.slice_seqs):
        assert parse_verdict(_v(evidence_event=seq), item, prompt, "m").evidence_event == seq
    assert parse_verdict(_v(evidence_event=10.0), item, prompt, "m").evidence_event == 10
    assert parse_verdict(_v(evidence_event="10"), item, prompt, "m").evidence_event == 10
    for key in sorted(item.ledger_keys):
        assert parse_verdict(_v(violated_key=key), item, prompt, "m").violated_key == key


def test_unscored_keeps_reason_and_raw(item: Item) -> None:
    prompt = load_prompt("scope_fidelity")
    v = unscored(item, prompt, "m", "label must be one of pass, fail", '{"label": "maybe"}')
    assert v.label == "unscored" and v.reason == "label must be one of pass, fail"
    assert v.raw_completion == '{"label": "maybe"}' and v.prompt_hash == prompt.hash
    assert v.confidence is None and v.violated_key is None
    assert unscored(item, None, "m", "timeout", None).prompt_hash is None


def test_schema_is_strict() -> None:
    s = verdict_schema()
    assert s["additionalProperties"] is False
    assert set(s["required"]) == set(s["properties"]) == {
        "label", "violated_key", "evidence_event", "confidence", "rationale"}
    assert s["properties"]["label"]["enum"] == ["pass", "fail"]
    assert s["properties"]["violated_key"]["type"] == ["string", "null"]
    s["properties"]["label"]["enum"].append("x")
    assert verdict_schema()["properties"]["label"]["enum"] == ["pass", "fail"]  # fresh copy
