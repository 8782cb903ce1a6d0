"""The engine driving the real openai and anthropic SDKs against the local fake server, with
injected faults: every item ends scored (after retry or re-ask) or unscored with a reason."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from judge.formats import Verdict
from judge.grading.cache import JsonlCache, MemoryCache
from judge.grading.engine import REPLAY_MISS, GradingStats, grade_items_sync
from judge.items import Item
from judge.prompts import Prompt, load_prompt
from judge.providers.base import CallCache, Provider
from judge.providers.registry import make_provider
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import (
    hang,
    malformed,
    outside_slice_verdict,
    rate_limited,
    server_error,
    unknown_key_verdict,
)

LEDGER = {
    "turn": 1,
    "active": [
        {"key": "order", "value": "order-17", "class": "goal", "persistence": "task",
         "sensitivity": "normal", "source": "user", "since_turn": 1, "status": "active",
         "aliases": []},
        {"key": "refundOnce", "value": "one refund", "class": "constraint",
         "persistence": "task", "sensitivity": "safety_critical", "source": "user",
         "since_turn": 1, "status": "active", "aliases": []},
    ],
    "completed": [], "revoked": [], "failed": [], "expired": [], "superseded": [],
}


def make_item(n: int) -> Item:
    events = (
        {"seq": 1, "turn": 1, "kind": "user", "text": f"Please refund order-{n}."},
        {"seq": 2, "turn": 1, "kind": "tool_call", "tool": "refund_order",
         "args": {"orderId": f"order-{n}"}, "call_id": "c1"},
    )
    return Item(item_id=f"t-{n}#2:scope_fidelity", trace_id=f"t-{n}", seq=2, turn=1,
                rubric="scope_fidelity", kind="tool_call", goal=f"Refund order-{n} once.",
                ledger=LEDGER, events=events, target=events[1],
                ledger_keys=frozenset({"order", "refundOnce"}), slice_seqs=frozenset({1, 2}),
                candidate={"model": "candidate-x"})


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.fixture
def prompt() -> Prompt:
    return load_prompt("scope_fidelity")


def provider_for(kind: str, srv: FakeProviderServer, timeout: float = 5.0) -> Provider:
    if kind == "openai":
        settings = Settings.load(environ={}, base_url=srv.openai_base_url, timeout=timeout)
        return make_provider("openai:judge-test", settings)
    settings = Settings.load(environ={"ANTHROPIC_API_KEY": "test-key"},
                             base_url=srv.anthropic_base_url, timeout=timeout)
    return make_provider("anthropic:judge-test", settings)


def grade(kind: str, srv: FakeProviderServer, prompt: Prompt, items: list[Item],
          cache: CallCache | None = None, timeout: float = 5.0, **kw: Any) -> list[Verdict]:
    opts: dict[str, Any] = {"params": prompt_params(), "concurrency": 4, "rpm": None,
                            "retries": 2, "retry_base_delay": 0.01}
    opts.update(kw)
    return grade_items_sync(items, prompt, provider_for(kind, srv, timeout),
                            cache if cache is not None else MemoryCache(), **opts)


def prompt_params() -> Any:
    return Settings.load(environ={}).model_params()


KINDS = ["openai", "anthropic"]


@pytest.mark.parametrize("kind", KINDS)
def test_valid_verdicts_over_the_wire(kind: str, server: FakeProviderServer,
                                      prompt: Prompt) -> None:
    out = grade(kind, server, prompt, [make_item(i) for i in range(5)])
    assert [v.label for v in out] == ["pass"] * 5
    assert all(v.evidence_event is None for v in out)  # a pass cites no evidence
    assert server.generation_count == 5
    body = server.generations()[0].body
    assert body["model"] == "judge-test"
    assert "candidate-x" not in server.generations()[0].text


@pytest.mark.parametrize("kind", KINDS)
def test_429_with_retry_after_is_waited_for_then_scored(kind: str, server: FakeProviderServer,
                                                        prompt: Prompt) -> None:
    server.enqueue(rate_limited(0.3))
    started = time.perf_counter()
    (v,) = grade(kind, server, prompt, [make_item(1)])
    assert v.label == "pass"
    assert server.generation_count == 2
    assert time.perf_counter() - started >= 0.3


@pytest.mark.parametrize("kind", KINDS)
def test_500_is_retried(kind: str, server: FakeProviderServer, prompt: Prompt) -> None:
    server.enqueue(server_error(500), server_error(503))
    stats = GradingStats()
    (v,) = grade(kind, server, prompt, [make_item(1)], stats=stats)
    assert v.label == "pass" and server.generation_count == 3 and stats.provider_calls == 3


@pytest.mark.parametrize("kind", KINDS)
def test_timeout_is_retried(kind: str, server: FakeProviderServer, prompt: Prompt) -> None:
    server.enqueue(hang(6.0))
    started = time.perf_counter()
    (v,) = grade(kind, server, prompt, [make_item(1)], timeout=1.5)
    # two requests: the first timed out and was asked again. That is the proof: a client that
    # waited out the 6 s hang would have had its answer from the first request. The timeout
    # leaves the second, normal request 1.5 s (0.4 s could be taken by a pause of the test
    # process on a loaded machine, and a third request sent); the clock is only a sanity
    # bound, loose for a loaded machine (2.5 s failed once at load 8).
    assert v.label == "pass" and server.generation_count == 2
    assert time.perf_counter() - started < 20.0


@pytest.mark.parametrize("kind", KINDS)
def test_exhausted_retries_end_unscored_with_the_status(kind: str, server: FakeProviderServer,
                                                         prompt: Prompt) -> None:
    server.enqueue(server_error(500), server_error(500), server_error(500))
    (v,) = grade(kind, server, prompt, [make_item(1)], retries=2)
    assert v.label == "unscored" and v.reason is not None
    assert "3 attempts" in v.reason and "500" in v.reason
    assert server.generation_count == 3


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_json_is_reasked_then_scored(kind: str, server: FakeProviderServer,
                                               prompt: Prompt) -> None:
    server.enqueue(malformed())
    (v,) = grade(kind, server, prompt, [make_item(1)])
    assert v.label == "pass" and v.metadata["reasked"] is True
    assert server.generation_count == 2
    reask_text = server.generations()[1].text
    assert "not a valid verdict" in reask_text


def test_malformed_twice_ends_unscored_with_raw(server: FakeProviderServer,
                                                prompt: Prompt) -> None:
    server.enqueue(malformed('{"label": "pass"'), malformed("no idea"))
    (v,) = grade("openai", server, prompt, [make_item(1)])
    assert v.label == "unscored" and v.raw_completion == "no idea"
    assert v.reason is not None and "JSON" in v.reason


@pytest.mark.parametrize("kind", KINDS)
def test_key_not_in_ledger_twice_ends_unscored(kind: str, server: FakeProviderServer,
                                               prompt: Prompt) -> None:
    server.enqueue(unknown_key_verdict("ghostKey"), unknown_key_verdict("ghostKey"))
    (v,) = grade(kind, server, prompt, [make_item(1)])
    assert v.label == "unscored"
    assert v.reason is not None and "ghostKey" in v.reason
    assert v.raw_completion is not None and "ghostKey" in v.raw_completion


@pytest.mark.parametrize("kind", KINDS)
def test_evidence_outside_slice_is_reasked_then_scored(kind: str, server: FakeProviderServer,
                                                       prompt: Prompt) -> None:
    server.enqueue(outside_slice_verdict(987))
    (v,) = grade(kind, server, prompt, [make_item(1)])
    assert v.label == "pass" and v.evidence_event is None
    assert "987" in v.metadata["reask_reason"]


def test_faults_never_lose_an_item(server: FakeProviderServer, prompt: Prompt) -> None:
    server.enqueue(server_error(500), malformed(), unknown_key_verdict(), rate_limited(0.05),
                   outside_slice_verdict())
    items = [make_item(i) for i in range(12)]
    out = grade("openai", server, prompt, items, concurrency=3)
    assert [v.item_id for v in out] == [it.item_id for it in items]
    assert all(v.label == "pass" or (v.label == "unscored" and v.reason) for v in out)


@pytest.mark.parametrize("kind", KINDS)
def test_cached_rerun_makes_zero_requests(kind: str, server: FakeProviderServer,
                                          prompt: Prompt, tmp_path: Any) -> None:
    items = [make_item(i) for i in range(6)]
    server.enqueue(malformed())  # one item is re-asked: both of its calls are stored
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as cache:
        first = grade(kind, server, prompt, items, cache=cache)
    sent = server.generation_count
    assert sent == 7
    stats = GradingStats()
    with JsonlCache(path) as cache:
        second = grade(kind, server, prompt, items, cache=cache, stats=stats)
    assert server.generation_count == sent  # nothing reached the server
    assert stats.provider_calls == 0 and stats.cache_hits == 7
    assert [v.label for v in second] == [v.label for v in first] == ["pass"] * 6


def test_replay_only_never_calls(server: FakeProviderServer, prompt: Prompt) -> None:
    cache = MemoryCache()
    grade("openai", server, prompt, [make_item(1)], cache=cache)
    out = grade("openai", server, prompt, [make_item(1), make_item(2)], cache=cache,
                replay_only=True)
    assert server.generation_count == 1
    assert [v.label for v in out] == ["pass", "unscored"] and out[1].reason == REPLAY_MISS
