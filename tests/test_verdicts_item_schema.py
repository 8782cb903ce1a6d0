"""The item's own schema: `violated_key` one of the ledger keys the request shows (or null),
`evidence_event` one of its seqs (or null), within what OpenAI strict mode and Anthropic's
strict tools accept, the general definition past that; and the decoder schema for grammar
modes, whose every instance is a valid verdict. Checked with a JSON Schema validator
(jsonschema), the fake servers' strict checks and Hypothesis against the verdict validator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.prompts import load_prompt, render
from judge.request import JudgeRequest, ModelParams
from judge.testing.anthropic_wire import MAX_UNION_PARAMETERS, union_parameters
from judge.testing.openai_wire import strict_limits_problem, strict_schema_problem
from judge.trace import load_traces
from judge.verdicts import VerdictInvalid, parse_verdict, verdict_schema
from judge.verdicts.schema import (
    CONFIDENCE_STEPS,
    GENERAL,
    LIMITS,
    ItemEnums,
    decoder_schema,
    item_enums,
    item_schema,
    request_decoder_schema,
    request_enums,
    request_schema,
)
from judge.verdicts.validate import check

SCENARIOS = Path(__file__).resolve().parent.parent / "examples" / "scenarios"


@pytest.fixture(scope="module")
def item() -> Item:
    loaded = load_scenario(SCENARIOS / "refund-once")
    trace = load_traces([SCENARIOS / "refund-once" / "fail-second-refund.json"])[0]
    return extract_items(loaded, trace)[1]  # seq 10, the second refund


@pytest.fixture(scope="module")
def request_(item: Item) -> JudgeRequest:
    return render(load_prompt("scope_fidelity"), item, ModelParams())


def ok(schema: dict[str, Any], value: dict[str, Any]) -> bool:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


def verdict(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"label": "fail", "violated_key": "refundOnce",
                            "evidence_event": 10, "confidence": 0.8, "rationale": "again"}
    return {**base, **kw}


def test_the_enums_are_the_keys_and_seqs_the_request_shows(item: Item,
                                                           request_: JudgeRequest) -> None:
    enums = request_enums(request_)
    assert enums.keys == tuple(sorted(item.ledger_keys))
    assert enums.seqs == tuple(sorted(item.slice_seqs))
    no_view = JudgeRequest(item_id="x", system="s", messages=(), schema=verdict_schema())
    assert request_enums(no_view) == GENERAL and request_schema(no_view) is no_view.schema


def test_nonsense_a_constrained_decoder_cannot_write(request_: JudgeRequest) -> None:
    """What the issue saw llama-cpp-python's server return without the item's schema."""
    schema = request_schema(request_)
    assert ok(schema, verdict()) and ok(schema, verdict(label="pass", violated_key=None,
                                                        evidence_event=None))
    for bad in (verdict(violated_key="pass"), verdict(violated_key="10b5cd404129e924"),
                verdict(evidence_event=987654), verdict(evidence_event="10")):
        assert not ok(schema, bad), bad
    assert ok(verdict_schema(), verdict(violated_key="pass"))  # the general schema allows it
    decoder = request_decoder_schema(request_)
    for bad in (verdict(confidence=6), verdict(confidence=0.83),
                verdict(label="pass"), verdict(violated_key=None),
                verdict(label="pass", violated_key=None, evidence_event=10)):
        assert not ok(decoder, bad), bad
    assert ok(decoder, verdict(confidence=0.85))
    assert ok(decoder, verdict(label="pass", violated_key=None, evidence_event=None,
                               confidence=1.0))


def test_the_schemas_are_within_the_providers_limits(request_: JudgeRequest) -> None:
    schema = request_schema(request_)
    assert strict_schema_problem(schema, "schema") is None
    assert strict_limits_problem(schema) is None
    assert union_parameters(schema) == 2 <= MAX_UNION_PARAMETERS
    assert "anyOf" not in schema  # OpenAI strict mode refuses anyOf at the root
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator.check_schema(request_decoder_schema(request_))


def test_past_the_limits_the_general_definition_comes_back() -> None:
    many_keys = [f"key-{i:04d}-" + "x" * 60 for i in range(300)]  # 300 keys, > 15,000 chars
    enums = item_enums(many_keys, [1, 2, 3])
    assert enums.keys is None and enums.seqs == (1, 2, 3)
    many_seqs = range(1, 2000)
    assert item_enums(["a", "b"], many_seqs) == ItemEnums(("a", "b"), None)
    assert item_enums(many_keys, many_seqs) == GENERAL
    # each of those schemas is one OpenAI strict mode accepts ...
    general = verdict_schema()
    for e in (enums, item_enums(["a", "b"], many_seqs), GENERAL):
        assert strict_limits_problem(item_schema(general, e)) is None
    # ... where the lists themselves would not have been (the fake's check is a real one)
    assert strict_limits_problem(item_schema(general, ItemEnums(tuple(many_keys), None)))
    assert strict_limits_problem(item_schema(general, ItemEnums(("a",), tuple(many_seqs))))
    # 250 short keys are fine, and an item with no key at all allows only null
    assert item_enums([f"k{i}" for i in range(250)], [1]).keys is not None
    nothing = item_schema(general, ItemEnums((), (1, 2)))
    assert nothing["properties"]["violated_key"]["type"] == "null"
    assert not any(b["properties"]["label"]["enum"] == ["fail"]
                   for b in decoder_schema(general, ItemEnums((), (1, 2))).get("anyOf", []))


def test_the_limits_are_openais_documented_ones() -> None:
    assert (LIMITS.enum_values, LIMITS.large_enum, LIMITS.large_enum_chars,
            LIMITS.total_chars) == (1000, 250, 15_000, 120_000)


def test_a_prompts_own_labels_get_a_branch_of_their_own() -> None:
    schema = verdict_schema(("pass", "fail", "unsure"))
    decoder = decoder_schema(schema, ItemEnums(("k",), (1,)))
    labels = [b["properties"]["label"]["enum"] for b in decoder["anyOf"]]
    assert labels == [["pass"], ["fail"], ["unsure"]]
    assert decoder_schema({"type": "object"}, ItemEnums(("k",), (1,))) == {"type": "object"}


def test_a_raw_line_break_in_the_rationale_is_read(item: Item) -> None:
    """Small models under a grammar write raw control characters inside strings; the reply
    is read as if they were escaped (before: 'Invalid control character', unscored)."""
    text = '{"label": "fail", "violated_key": "refundOnce", "evidence_event": 10, ' \
           '"confidence": 0.7, "rationale": "second\nrefund\tagain"}'
    v = parse_verdict(text, item, load_prompt("scope_fidelity"), "m")
    assert v.rationale == "second\nrefund\tagain" and v.label == "fail"
    with pytest.raises(VerdictInvalid, match="not valid JSON"):
        parse_verdict('{"label": "fail", "rationale": "cut', item,
                      load_prompt("scope_fidelity"), "m")


KEYS = st.lists(st.text(min_size=1, max_size=12), min_size=0, max_size=8, unique=True)
SEQS = st.lists(st.integers(0, 500), min_size=1, max_size=8, unique=True)


class _Prompt:
    labels = ("pass", "fail")
    version = "v"
    hash = "h"


def _item(keys: list[str], seqs: list[int]) -> Item:
    return Item(item_id="t#1:r", trace_id="t", seq=max(seqs), turn=1, rubric="r",
                kind="tool_call", goal="g", ledger={}, events=(), target={},
                ledger_keys=frozenset(keys), slice_seqs=frozenset(seqs))


def _valid(value: dict[str, Any], item: Item) -> bool:
    try:
        check(value, item, _Prompt())
    except VerdictInvalid:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(keys=KEYS, seqs=SEQS, label=st.sampled_from(["pass", "fail", "maybe"]),
       key=st.one_of(st.none(), st.text(max_size=12)), seq=st.one_of(st.none(),
                                                                       st.integers(0, 600)),
       confidence=st.one_of(st.sampled_from(CONFIDENCE_STEPS), st.floats(-1, 2)),
       pick_key=st.booleans(), pick_seq=st.booleans())
def test_the_schemas_agree_with_validation(keys: list[str], seqs: list[int], label: str,
                                           key: str | None, seq: int | None,
                                           confidence: float, pick_key: bool,
                                           pick_seq: bool) -> None:
    """Every instance of the decoder schema is a valid verdict (sound), and every valid
    verdict of the usual types is an instance of the item's schema (it forbids nothing that
    counts)."""
    if pick_key and keys:
        key = keys[len(seqs) % len(keys)]
    if pick_seq:
        seq = seqs[len(keys) % len(seqs)]
    value = {"label": label, "violated_key": key, "evidence_event": seq,
             "confidence": confidence, "rationale": "r"}
    item = _item(keys, seqs)
    enums = item_enums(keys, seqs)
    if ok(decoder_schema(verdict_schema(), enums), value):
        assert _valid(value, item), value
    if _valid(value, item) and key != "":  # "" is read as null by validation
        assert ok(item_schema(verdict_schema(), enums), value), value


def test_the_decoder_schema_is_json_llama_cpp_can_compile(request_: JudgeRequest) -> None:
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    converter = llama_grammar.SchemaConverter(prop_order={}, allow_fetch=False, dotall=False,
                                              raw_pattern=False)
    schema = request_decoder_schema(request_)
    converter.visit(schema, "")
    grammar = converter.format_grammar()
    assert '"refundOnce"' in grammar.replace("\\", "") and "root ::=" in grammar
    assert json.loads(json.dumps(schema)) == schema
