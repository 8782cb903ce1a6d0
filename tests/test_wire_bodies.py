"""What OpenAI and Anthropic themselves receive is unchanged by the structured-output work,
apart from the item's own enums: the bytes judge's providers send for one real item now,
against the bytes the code before it sent (tests/data/wire, captured by
tests/wire_capture.py from b87f930), with only the schema's two narrowed properties told
apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wire_capture import capture, the_request

from judge.verdicts.schema import request_enums, request_schema

DATA = Path(__file__).parent / "data" / "wire"


@pytest.fixture(scope="module")
def now() -> dict[str, bytes]:
    return capture()


def _serialized(value: Any, sent: bytes) -> bytes:
    """`value` serialized the way the SDK serialized the body `sent` (found, not assumed)."""
    for options in ({"separators": (",", ":")}, {}, {"separators": (",", ":"),
                                                      "ensure_ascii": False}):
        text = json.dumps(value, **options).encode("utf-8")  # type: ignore[arg-type]
        if text in sent:
            return text
    raise AssertionError("the schema is not in the body as any JSON serialization of it")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_body_is_the_old_one_but_for_the_items_enums(api: str,
                                                         now: dict[str, bytes]) -> None:
    before = (DATA / f"{api}_body.json").read_bytes()
    after = now[api]
    request = the_request()
    general = _serialized(request.schema, before)
    narrowed = request_schema(request)
    assert narrowed != request.schema
    assert before.count(general) == 1
    # byte for byte, once the old schema's bytes stand where the new ones are
    assert after == before.replace(general, _serialized(narrowed, after))


def test_what_changed_in_the_schema_is_the_enums_of_the_item() -> None:
    request = the_request()
    enums = request_enums(request)
    assert enums.keys == ("orderPaidCents", "refundIssued", "refundOnce", "refundOrder")
    assert enums.seqs == (3, 6, 7, 9, 10)
    narrowed = request_schema(request)
    props, general = narrowed["properties"], request.schema["properties"]
    assert {k for k in props if props[k] != general[k]} == {"violated_key", "evidence_event"}
    assert props["violated_key"]["anyOf"] == [{"type": "string", "enum": list(enums.keys)},
                                              {"type": "null"}]
    assert props["evidence_event"]["anyOf"] == [{"type": "integer", "enum": [3, 6, 7, 9, 10]},
                                                {"type": "null"}]
    for name in ("violated_key", "evidence_event"):
        assert props[name]["description"] == general[name]["description"]
    assert {k: v for k, v in narrowed.items() if k != "properties"} == \
        {k: v for k, v in request.schema.items() if k != "properties"}
