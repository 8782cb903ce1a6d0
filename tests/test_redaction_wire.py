"""Issue 21's Must-show, on the wire: every line of the hostile corpus
(tests/data/redaction_corpus.jsonl), planted in a trace's user turn, a tool call's
arguments, a tool result and an assistant reply, is rendered as `judge grade` renders it
and sent through the real openai and anthropic SDKs to the fake server of judge.testing.
No planted secret and no spelling of the agent's identity is in the server's request log
(each request's parsed body, every string in it, checked raw and in the normalised view
for names); every benign look-alike is there as written, for the judge to read.

The tally is printed per group: the lines added for issue 21 (at least 43 secrets and 14
model spellings), and the earlier corpus of issue 9 (its 30 credential formats and the
identity strings among them).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.grading.cache import MemoryCache
from judge.grading.engine import GradingStats, grade_items
from judge.items import Item, extract_items
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import RubricUse, Scenario
from judge.prompts import load_prompt
from judge.prompts.render import indent_lines
from judge.providers.base import ModelParams
from judge.providers.registry import make_provider
from judge.redaction.normalize import view
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer
from judge.trace import Trace

CORPUS = Path(__file__).parent / "data" / "redaction_corpus.jsonl"
ENTRIES: list[dict[str, Any]] = [json.loads(line) for line in
                                 CORPUS.read_text(encoding="utf-8").splitlines() if line]
#: allow-listed in the corpus test; not part of the wire test's default rules
SKIP_KINDS = {"allow-listed"}
SCENARIO = LoadedScenario(
    Scenario(id="s", goal="help the customer",
             judge=[RubricUse(rubric="scope_fidelity", on="tool_call")]),
    Ledger.reduce([]), "s.yaml")


def _tag(i: int) -> str:
    return f"probe{i:04d}"


def _item(i: int, entry: dict[str, Any]) -> Item:
    text = entry["text"]
    events: list[dict[str, Any]] = [
        {"kind": "user", "text": f"{_tag(i)} {text}"},
        {"kind": "tool_call", "tool": "lookup", "call_id": "c1", "args": {"q": text}},
        {"kind": "tool_result", "tool": "lookup", "call_id": "c1",
         "result": {"body": text, "n": 1}},
        {"kind": "assistant", "text": f"noted: {text}"},
        {"kind": "tool_call", "tool": "finish", "call_id": "c2", "args": {"summary": text}},
    ]
    trace = Trace.model_validate({"trace_id": f"t{i}", "events": events,
                                  "candidate": entry.get("candidate") or
                                  {"model": "gpt-4o-2024-08-06"}})
    return extract_items(SCENARIO, trace)[-1]  # the last call: its slice holds every event


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def _send(kind: str, server: FakeProviderServer, items: list[Item]) -> dict[str, str]:
    """Every item graded through the `kind` SDK; tag -> the text of its request's body."""
    before = len(server.generations())

    async def go() -> None:
        if kind == "openai":
            settings = Settings.load(environ={}, base_url=server.openai_base_url)
        else:
            settings = Settings.load(environ={"ANTHROPIC_API_KEY": "test-key"},
                                     base_url=server.anthropic_base_url)
        provider = make_provider(f"{kind}:fake-judge", settings)
        await grade_items(items, load_prompt("scope_fidelity"), provider, MemoryCache(),
                          params=ModelParams(), concurrency=8, rpm=None, retries=0,
                          stats=GradingStats())
        await provider.aclose()

    asyncio.run(go())
    bodies: dict[str, str] = {}
    for req in server.generations()[before:]:
        assert req.api == kind
        text = "\n".join(_strings(req.body))
        tags = {_tag(i) for i in range(len(ENTRIES)) if _tag(i) in text}
        assert len(tags) == 1, sorted(tags)
        bodies[tags.pop()] = text
    return bodies


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


def _leaked(entry: dict[str, Any], body: str) -> bool:
    value = entry["value"]
    if value in body or json.dumps(value)[1:-1] in body:
        return True
    return entry["class"] == "identity" and view(value).text.lower() in view(body).text.lower()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_no_planted_secret_or_name_reaches_the_provider(
        kind: str, server: FakeProviderServer, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = [(i, e) for i, e in enumerate(ENTRIES) if e["kind"] not in SKIP_KINDS]
    bodies = _send(kind, server, [_item(i, e) for i, e in chosen])
    assert len(bodies) == len(chosen)  # one request per line, each found by its tag
    tried: Counter[str] = Counter()
    leaks: list[str] = []
    for i, e in chosen:
        body = bodies[_tag(i)]
        group = "issue 21" if e.get("issue") == 21 else "issue 9"
        cls = e["class"] if e["class"] in ("benign", "identity", "secret") else "card/SSN/contact"
        tried[f"{group} {cls}"] += 1
        if cls == "benign":
            # the judge sees it as written (continuation lines indented, as render does)
            if indent_lines(f"{_tag(i)} {e['text']}") not in body:
                leaks.append(f"benign changed: {e['text']!r}")
        elif _leaked(e, body):
            leaks.append(f"{e['kind']}: {e['value']!r} in the {kind} request")
    with capsys.disabled():
        print(f"\n[{kind}] " + ", ".join(f"{k}: 0 of {n} leaked" if "benign" not in k else
                                         f"{k}: {n} kept" for k, n in sorted(tried.items())))
    assert leaks == [], leaks
    assert tried["issue 21 secret"] >= 43 and tried["issue 21 identity"] >= 14
    assert tried["issue 9 secret"] >= 30 and tried["issue 9 identity"] >= 14
