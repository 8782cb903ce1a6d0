"""The openai provider posts chat_body's JSON without the SDK's request transform; that is
only right while the transform leaves such a body unchanged, which this checks, in every
structured-output mode (judge.providers.response_format)."""

from __future__ import annotations

import asyncio

import pytest
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params

from judge.items import Item
from judge.prompts import load_prompt, render
from judge.providers.openai_provider import chat_body
from judge.request import ModelParams


def item() -> Item:
    events = ({"seq": 1, "turn": 1, "kind": "user", "text": "Refund order-17 once, please."},
              {"seq": 2, "turn": 1, "kind": "tool_call", "tool": "refund_order",
               "args": {"orderId": "order-17", "amountCents": 4200}, "call_id": "c1"})
    ledger = {"turn": 1, "active": [{
        "key": "refundOnce", "value": True, "class": "constraint", "persistence": "task",
        "sensitivity": "safety_critical", "source": "user", "since_turn": 1, "status": "active",
        "aliases": []}], "completed": [], "revoked": [], "failed": [], "expired": [],
        "superseded": []}
    return Item(item_id="t#2:scope_fidelity", trace_id="t", seq=2, turn=1,
                rubric="scope_fidelity", kind="tool_call", goal="Refund order-17 once.",
                ledger=ledger, events=events, target=events[1],
                ledger_keys=frozenset({"refundOnce"}), slice_seqs=frozenset({1, 2}))


def test_the_sdk_transform_leaves_the_chat_body_unchanged() -> None:
    request = render(load_prompt("scope_fidelity"), item(), ModelParams(seed=None))
    for field in ("max_tokens", "max_completion_tokens"):
        body = chat_body(request, "gpt-4.1-mini", token_field=field)
        sent = asyncio.run(async_maybe_transform(
            body, completion_create_params.CompletionCreateParamsNonStreaming))
        assert sent == body
    seeded = chat_body(render(load_prompt("scope_fidelity"), item(), ModelParams(seed=7)),
                       "m")
    assert asyncio.run(async_maybe_transform(
        seeded, completion_create_params.CompletionCreateParamsNonStreaming)) == seeded


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "guided_json", "prompt"])
def test_the_transform_leaves_every_modes_body_unchanged(mode: str) -> None:
    request = render(load_prompt("scope_fidelity"), item(), ModelParams())
    body = chat_body(request, "gemma-270m", token_field="max_tokens", mode=mode)
    sent = asyncio.run(async_maybe_transform(
        body, completion_create_params.CompletionCreateParamsNonStreaming))
    assert sent == body
    assert ("response_format" in body) == (mode in ("json_schema", "json_object"))
    assert ("guided_json" in body) == (mode == "guided_json")
    prompt_text = "follows this JSON Schema" in body["messages"][0]["content"]
    assert prompt_text == (mode == "prompt")
