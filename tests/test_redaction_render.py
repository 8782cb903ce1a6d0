"""judge/redaction as the renderer uses it (render.py's `Scrubber` and
`may_hold_secret_fields` are judge.redaction's, through judge.prompts.redact):

- issue 9 item 3: a candidate `agent: "order"`, `max_tokens: 4200` leaves every ledger key,
  tool name, JSON key and number of the request intact;
- the renderer's own expectations hold (secret-named ledger values, `apiToken = …`);
- end to end: secrets from the generators of tests/test_redaction_properties.py, planted in
  trace events, never reach the fake provider's request log (real openai SDK, real engine).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_redaction_properties import SECRETS, SEPARATOR

from judge.grading.cache import MemoryCache
from judge.grading.engine import GradingStats, grade_items
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import RubricUse, Scenario
from judge.prompts import load_prompt, render
from judge.providers.base import JudgeRequest, ModelParams
from judge.providers.registry import make_provider
from judge.redaction import compat
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer
from judge.trace import Trace, load_traces

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
RENDER = sys.modules["judge.prompts.render"]


@contextmanager
def wired() -> Iterator[None]:
    """Once a patch of render.py; now the renderer's own wiring, checked here."""
    assert RENDER.Scrubber is compat.Scrubber
    assert RENDER.may_hold_secret_fields is compat.may_hold_secret_fields
    yield


def _text(req: JudgeRequest) -> str:
    return req.system + "\n" + "\n".join(m["content"] for m in req.messages)


def _refund_items(candidate: dict[str, Any]) -> list[Item]:
    trace = load_traces([REFUND / "fail-second-refund.json"])[0]
    trace = trace.model_copy(update={"candidate": candidate})
    return extract_items(load_scenario(REFUND), trace)


def test_issue9_item3_candidate_values_do_not_corrupt_the_request() -> None:
    items = _refund_items({"model": "gpt-4o-2024-08-06", "agent": "order", "max_tokens": 4200})
    with wired():
        texts = [_text(render(load_prompt(it.rubric), it)) for it in items]
    for item, text in zip(items, texts, strict=True):
        assert "[agent]" not in text and "[candidate]" not in text
        assert "- refundOrder (" in text and "- orderPaidCents (" in text
        assert '"orderId":"order-17"' in text and '"paidCents":4200' in text
        assert "tool_call refund_order" in text
        assert ", ".join(sorted(item.ledger_keys)) in text  # the footer's list of valid keys


def test_candidate_model_is_scrubbed_in_every_spelling() -> None:
    events = [{"kind": "user", "text": "which model?"},
              {"kind": "assistant", "text": "I am gpt-4o, GPT\u20114o here (g\u200bpt-4o, "
                                            "gpt4o, ChatGPT) made by OpenAI"},
              {"kind": "tool_call", "tool": "note", "args": {"text": "claude-3-5-sonnet"}}]
    trace = Trace.model_validate({"trace_id": "t", "events": events,
                                  "candidate": {"model": "gpt-4o-2024-08-06"}})
    sc = Scenario(id="s", goal="g", judge=[RubricUse(rubric="scope_fidelity", on="tool_call")])
    item = extract_items(LoadedScenario(sc, Ledger.reduce([]), "x"), trace)[0]
    with wired():
        text = _text(render(load_prompt("scope_fidelity"), item))
    data = text.split("<<<DATA", 1)[1]  # the prompt's own text may name no model either
    for leak in ("gpt-4o", "GPT\u20114o", "g\u200bpt-4o", "gpt4o", "ChatGPT", "OpenAI",
                 "claude-3-5-sonnet"):
        assert leak not in data, leak
    assert data.count("[agent]") >= 7


def test_request_stays_deterministic_and_counts_are_kept() -> None:
    items = _refund_items({"model": "example-model"})
    with wired():
        a = render(load_prompt(items[0].rubric), items[0])
        b = render(load_prompt(items[0].rubric), items[0])
    assert a == b
    scrub = compat.Scrubber(None, {"model": "m"})
    scrub.texts(["mail bob@example.com, card 4111 1111 1111 1111"])
    assert scrub.counts == {"secret": 0, "card": 1, "ssn": 0, "email": 1, "phone": 0,
                            "identity": 0}


_JWT = ("eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAid293Q05NOWZSMnNjIn0."
        "fqeozeFKBTgbcrdSUzlXtf1tgrA-iwDhvgKMNhaYJoL")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


def _grade(items: list[Item], base_url: str) -> None:
    async def go() -> None:
        provider = make_provider("openai:fake-judge", Settings.load(environ={},
                                                                     base_url=base_url))
        await grade_items(items, load_prompt("scope_fidelity"), provider, MemoryCache(),
                          params=ModelParams(), concurrency=4, rpm=None, retries=0,
                          stats=GradingStats())
        await provider.aclose()

    asyncio.run(go())


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(SECRETS, min_size=1, max_size=4), SEPARATOR)
# found by this property in a full run (2026-12-01): after a newline, rendered JSON reads
# `\\neyJ…`, and the escape's `n` began a longer opaque match that hid the JWT
@example(secrets=[(_JWT, _JWT)], sep="\n")
def test_generated_secrets_never_reach_the_provider(
        server: FakeProviderServer, secrets: list[tuple[str, str]], sep: str) -> None:
    texts = [t for t, _ in secrets]
    events: list[dict[str, Any]] = [{"kind": "user", "text": "hi" + sep + texts[0]}]
    for i, t in enumerate(texts):
        events.append({"kind": "tool_call", "tool": "lookup", "call_id": f"c{i}",
                       "args": {"q": "x" + sep + t}})
        events.append({"kind": "tool_result", "tool": "lookup", "call_id": f"c{i}",
                       "result": {"body": t, "n": i}})
        events.append({"kind": "assistant", "text": f"noted{sep}{t}{sep}ok"})
    events.append({"kind": "tool_call", "tool": "finish", "args": {"summary": texts[-1]}})
    trace = Trace.model_validate({"trace_id": "t", "events": events,
                                  "candidate": {"model": "zz-model-9"}})
    sc = Scenario(id="s", goal="g", judge=[RubricUse(rubric="scope_fidelity", on="tool_call")])
    items = extract_items(LoadedScenario(sc, Ledger.reduce([]), "x"), trace)
    before = len(server.generations())
    with wired():
        _grade(items, server.openai_base_url)
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in server.generations()[before:]]
    assert len(bodies) == len(items)
    for _, value in secrets:
        escaped = json.dumps(json.dumps(value)[1:-1])[1:-1]
        for body in bodies:
            assert value not in body and json.dumps(value)[1:-1] not in body
            assert escaped not in body
