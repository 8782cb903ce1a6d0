"""The openai provider posts chat_body's JSON without the SDK's request transform; that is
only right while the transform leaves such a body unchanged, which this checks."""

from __future__ import annotations

import asyncio

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
