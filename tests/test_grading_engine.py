"""The grading engine on the production path with the scripted provider (no network)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest

from judge.formats import Verdict
from judge.grading.cache import MemoryCache
from judge.grading.engine import REPLAY_MISS, GradingStats, grade_items, grade_items_sync
from judge.items import Item
from judge.prompts import Prompt, load_prompt, render
from judge.providers.base import (
    JudgeRequest,
    ModelParams,
    Provider,
    ProviderFailure,
    ProviderResponse,
)
from judge.providers.scripted import ScriptedProvider

LEDGER = {
    "turn": 1,
    "active": [
        {"key": "order", "value": "order-17", "class": "goal", "persistence": "task",
         "sensitivity": "normal", "source": "user", "since_turn": 1, "status": "active",
         "aliases": []},
        {"key": "refundOnce", "value": True, "class": "constraint", "persistence": "task",
         "sensitivity": "safety_critical", "source": "user", "since_turn": 1,
         "status": "active", "aliases": []},
    ],
    "completed": [], "revoked": [], "failed": [], "expired": [], "superseded": [],
}


def make_item(n: int, trace: str = "t") -> Item:
    events = (
        {"seq": 1, "turn": 1, "kind": "user", "text": f"Please refund order-{n}."},
        {"seq": 2, "turn": 1, "kind": "tool_call", "tool": "refund_order",
         "args": {"orderId": f"order-{n}"}, "call_id": "c1"},
    )
    return Item(item_id=f"{trace}-{n}#2:scope_fidelity", trace_id=f"{trace}-{n}", seq=2, turn=1,
                rubric="scope_fidelity", kind="tool_call", goal=f"Refund order-{n} once.",
                ledger=LEDGER, events=events, target=events[1],
                ledger_keys=frozenset({"order", "refundOnce"}), slice_seqs=frozenset({1, 2}),
                safety_critical=True, candidate={"model": "secret-candidate-model"})


def verdict_text(label: str = "pass", key: str | None = None, seq: int | None = None,
                 confidence: float = 0.8) -> str:
    """A verdict reply; a fail cites seq 2 unless told (a pass cites no evidence)."""
    if seq is None and label == "fail":
        seq = 2
    return json.dumps({"label": label, "violated_key": key, "evidence_event": seq,
                       "confidence": confidence, "rationale": "because"})


PASS = verdict_text()


@pytest.fixture
def prompt() -> Prompt:
    return load_prompt("scope_fidelity")


def run(items: list[Item], prompt: Prompt, provider: Provider, cache: MemoryCache,
        **kw: Any) -> list[Verdict]:
    opts: dict[str, Any] = {"params": ModelParams(), "concurrency": 4, "rpm": None,
                            "retries": 2, "retry_base_delay": 0.001}
    opts.update(kw)
    return grade_items_sync(items, prompt, provider, cache, **opts)


class DelayedProvider(Provider):
    """Answers PASS after a random short delay; tracks requests in flight."""

    spec = "delayed:test"
    display_name = "delayed test judge"

    def __init__(self, delay: float = 0.01) -> None:
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0
        self.rng = random.Random(7)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.rng.uniform(0, self.delay))
        finally:
            self.in_flight -= 1
        return ProviderResponse(text=PASS, model=self.spec, usage={"prompt_tokens": 10})


def test_one_verdict_per_item_in_item_order_and_stamped(prompt: Prompt) -> None:
    items = [make_item(i) for i in range(30)]
    provider = DelayedProvider()
    seen: list[str] = []
    stats = GradingStats()
    out = run(items, prompt, provider, MemoryCache(), concurrency=5,
              on_result=lambda v: seen.append(v.item_id), stats=stats)
    assert [v.item_id for v in out] == [it.item_id for it in items]
    assert sorted(seen) == sorted(it.item_id for it in items)
    assert seen != [it.item_id for it in items]  # finished out of order, returned in order
    v = out[0]
    assert (v.label, v.evidence_event, v.confidence) == ("pass", None, 0.8)
    assert (v.rubric, v.prompt_version, v.prompt_hash, v.model) == (
        "scope_fidelity", prompt.version, prompt.hash, "delayed:test")
    assert v.metadata["display_name"] == "delayed test judge"
    assert v.metadata["cached"] is False
    assert stats.provider_calls == 30 and stats.cache_hits == 0
    assert stats.usage == {"prompt_tokens": 300}


def test_concurrency_bounds_requests_in_flight(prompt: Prompt) -> None:
    provider = DelayedProvider(delay=0.02)
    run([make_item(i) for i in range(40)], prompt, provider, MemoryCache(), concurrency=6)
    assert provider.max_in_flight == 6


def test_rpm_limit_spaces_requests(prompt: Prompt) -> None:
    provider = DelayedProvider(delay=0.0)
    started = time.perf_counter()
    run([make_item(i) for i in range(6)], prompt, provider, MemoryCache(), rpm=1200.0)
    assert time.perf_counter() - started >= 5 * 0.05 * 0.9  # 1200/min = one per 50 ms


def test_cached_rerun_makes_zero_provider_calls(prompt: Prompt) -> None:
    items = [make_item(i) for i in range(10)]
    cache = MemoryCache()
    first = run(items, prompt, ScriptedProvider(default=PASS), cache)
    again_provider = ScriptedProvider()  # no responses: any call would fail the item
    stats = GradingStats()
    second = run(items, prompt, again_provider, cache, stats=stats)
    assert again_provider.requests == []
    assert stats.provider_calls == 0 and stats.cache_hits == 10
    assert [v.label for v in second] == ["pass"] * 10
    assert all(v.metadata["cached"] for v in second)
    assert [v.model_dump(exclude={"metadata"}) for v in first] == [
        v.model_dump(exclude={"metadata"}) for v in second]


def test_cache_is_keyed_by_model_and_params(prompt: Prompt) -> None:
    items = [make_item(1)]
    cache = MemoryCache()
    run(items, prompt, ScriptedProvider(default=PASS), cache)
    other = ScriptedProvider(default=PASS, spec="scripted:other")
    run(items, prompt, other, cache)
    hotter = ScriptedProvider(default=PASS)
    run(items, prompt, hotter, cache, params=ModelParams(temperature=0.7))
    assert len(other.requests) == 1 and len(hotter.requests) == 1
    assert len(cache) == 3


def test_replay_only_marks_uncached_items_unscored(prompt: Prompt) -> None:
    items = [make_item(i) for i in range(4)]
    cache = MemoryCache()
    run(items[:2], prompt, ScriptedProvider(default=PASS), cache)
    provider = ScriptedProvider(default=PASS)
    out = run(items, prompt, provider, cache, replay_only=True)
    assert provider.requests == []
    assert [v.label for v in out] == ["pass", "pass", "unscored", "unscored"]
    assert out[2].reason == REPLAY_MISS and out[2].model == "scripted"


def test_invalid_verdict_is_reasked_once_with_the_error(prompt: Prompt) -> None:
    provider = ScriptedProvider(["this is not json", PASS])
    cache = MemoryCache()
    stats = GradingStats()
    (v,) = run([make_item(1)], prompt, provider, cache, stats=stats)
    assert v.label == "pass" and v.metadata["reasked"] is True
    assert stats.reasks == 1 and len(provider.requests) == 2
    second = provider.requests[1]
    assert len(second.messages) > len(provider.requests[0].messages)
    shown = "\n".join(m["content"] for m in second.messages)
    assert "this is not json" in shown
    assert v.metadata["reask_reason"] in shown
    # both calls were stored: the rerun replays the bad answer AND the re-ask, no calls
    again = ScriptedProvider()
    (v2,) = run([make_item(1)], prompt, again, cache)
    assert again.requests == [] and v2.label == "pass" and len(cache) == 2


def test_still_invalid_after_reask_is_unscored_with_raw_kept(prompt: Prompt) -> None:
    bad_key = verdict_text("fail", key="notALedgerKey")
    provider = ScriptedProvider(["{broken", bad_key])
    (v,) = run([make_item(1)], prompt, provider, MemoryCache())
    assert v.label == "unscored"
    assert v.reason is not None and "re-ask" in v.reason and "notALedgerKey" in v.reason
    assert v.raw_completion == bad_key
    assert len(provider.requests) == 2


def test_evidence_outside_the_slice_is_reasked(prompt: Prompt) -> None:
    provider = ScriptedProvider([verdict_text(seq=99), verdict_text(seq=99)])
    (v,) = run([make_item(1)], prompt, provider, MemoryCache())
    assert v.label == "unscored" and v.reason is not None and "99" in v.reason


def test_fail_verdict_carries_key_class_and_sensitivity(prompt: Prompt) -> None:
    provider = ScriptedProvider([verdict_text("fail", key="refundOnce", confidence=0.7)])
    (v,) = run([make_item(1)], prompt, provider, MemoryCache())
    assert (v.label, v.violated_key) == ("fail", "refundOnce")
    assert v.metadata["key_class"] == "constraint"
    assert v.metadata["key_sensitivity"] == "safety_critical"


def test_retryable_failure_is_retried_then_scored(prompt: Prompt) -> None:
    provider = ScriptedProvider([
        ProviderFailure("rate limited", retryable=True, retry_after=0.0, status=429),
        ProviderFailure("server error", retryable=True, status=500),
        PASS,
    ])
    stats = GradingStats()
    (v,) = run([make_item(1)], prompt, provider, MemoryCache(), retries=2, stats=stats)
    assert v.label == "pass" and stats.provider_calls == 3


def test_exhausted_retries_end_unscored_and_others_go_on(prompt: Prompt) -> None:
    def answer(req: JudgeRequest) -> str:
        if "order-1." in req.messages[-1]["content"]:
            raise ProviderFailure("server error", retryable=True, status=503)
        return PASS

    provider = ScriptedProvider(default=answer)
    stats = GradingStats()
    out = run([make_item(i) for i in range(3)], prompt, provider, MemoryCache(), retries=2,
              stats=stats)
    assert [v.label for v in out] == ["pass", "unscored", "pass"]
    assert out[1].reason is not None and "503" in out[1].reason
    assert stats.provider_calls == 2 + 3 and stats.failures == 1


def test_not_retryable_failure_is_not_retried(prompt: Prompt) -> None:
    provider = ScriptedProvider([ProviderFailure("bad request", retryable=False, status=400)])
    (v,) = run([make_item(1)], prompt, provider, MemoryCache(), retries=3)
    assert v.label == "unscored" and len(provider.requests) == 1
    assert v.reason is not None and "bad request" in v.reason


def test_any_exception_ends_the_item_unscored(prompt: Prompt) -> None:
    def boom(req: JudgeRequest) -> str:
        raise RuntimeError("provider bug")

    provider = ScriptedProvider([PASS, boom, PASS])
    out = run([make_item(i) for i in range(3)], prompt, provider, MemoryCache(), concurrency=1)
    assert [v.label for v in out] == ["pass", "unscored", "pass"]
    assert out[1].reason is not None and "provider bug" in out[1].reason


def test_no_candidate_identity_reaches_the_provider(prompt: Prompt) -> None:
    provider = ScriptedProvider(default=PASS)
    run([make_item(1)], prompt, provider, MemoryCache())
    req = provider.requests[0]
    assert "secret-candidate-model" not in req.system + json.dumps(req.messages)


def test_empty_item_list(prompt: Prompt) -> None:
    assert run([], prompt, ScriptedProvider(), MemoryCache()) == []


def test_async_api_and_bad_concurrency(prompt: Prompt) -> None:
    async def go() -> list[Verdict]:
        return await grade_items([make_item(1)], prompt, ScriptedProvider(default=PASS),
                                 MemoryCache(), params=ModelParams(), concurrency=1,
                                 rpm=None, retries=0)

    assert [v.label for v in asyncio.run(go())] == ["pass"]
    with pytest.raises(ValueError, match="concurrency"):
        run([make_item(1)], prompt, ScriptedProvider(), MemoryCache(), concurrency=0)


def test_rerun_skips_rendering_through_the_render_memo(prompt: Prompt,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    items = [make_item(i) for i in range(5)]
    cache = MemoryCache()
    run(items, prompt, ScriptedProvider(default=PASS), cache)
    assert len(cache.memos) == 5

    def no_render(*a: Any, **k: Any) -> Any:
        raise AssertionError("rendered on a cached rerun")

    import judge.grading.engine as engine
    monkeypatch.setattr(engine, "render", no_render)
    provider = ScriptedProvider()
    out = run(items, prompt, provider, cache, replay_only=True)
    assert [v.label for v in out] == ["pass"] * 5 and provider.requests == []


def test_a_request_rendered_ahead_is_found_by_its_key_and_still_leaves_a_memo(
        prompt: Prompt) -> None:
    """The pipeline renders ahead (judge.pipeline.checkproc): such an item is looked up by
    its cache key alone (the memo only spares rendering, already done), and its valid
    first reply still leaves a memo for a rerun that does not render ahead."""
    from judge.grading.engine import ItemGrader

    class Counting(MemoryCache):
        memo_reads = 0

        def get_memo(self, memo_key: str) -> tuple[str, str] | None:
            Counting.memo_reads += 1
            return super().get_memo(memo_key)

    items = [make_item(i) for i in range(3)]
    cache = Counting()
    grader = ItemGrader(prompt, ScriptedProvider(default=PASS), cache, params=ModelParams(),
                        retries=0)

    async def grade_all(ahead: bool) -> list[str]:
        return [(await grader.grade(it, render(prompt, it, ModelParams()) if ahead else None)
                 ).label for it in items]

    assert asyncio.run(grade_all(ahead=True)) == ["pass"] * 3
    assert Counting.memo_reads == 0 and len(cache.memos) == 3
    assert asyncio.run(grade_all(ahead=True)) == ["pass"] * 3  # cached, by key
    assert Counting.memo_reads == 0 and grader.stats.cache_hits == 3
    assert asyncio.run(grade_all(ahead=False)) == ["pass"] * 3  # by memo
    assert Counting.memo_reads == 3 and grader.stats.cache_hits == 6
    assert grader.stats.provider_calls == 3


def test_changed_item_misses_the_memo_and_is_graded_again(prompt: Prompt) -> None:
    cache = MemoryCache()
    run([make_item(1)], prompt, ScriptedProvider(default=PASS), cache)
    changed = make_item(1)
    object.__setattr__(changed, "goal", "Refund order-1 twice.")
    provider = ScriptedProvider(default=PASS)
    run([changed], prompt, provider, cache)
    assert len(provider.requests) == 1 and len(cache) == 2


def test_a_changed_redaction_block_misses_the_memo(prompt: Prompt) -> None:
    """The scenario's redaction block decides what the judge sees: an item under another
    block is another render (here the secret pattern matches nothing, so the request is the
    same and the call cache answers it), never a memo hit for the old one."""
    from judge.grading.keys import MemoMaker
    from judge.providers.base import ModelParams

    plain = make_item(1)
    blocked = make_item(1)
    object.__setattr__(blocked, "redaction", {"secret_patterns": ("zzz-[0-9]+",)})
    memo = MemoMaker(prompt.hash, "scripted", ModelParams(), None, endpoint="")
    assert memo.key(plain) != memo.key(blocked)
    cache = MemoryCache()
    run([plain], prompt, ScriptedProvider(default=PASS), cache)
    provider = ScriptedProvider(default=PASS)
    run([blocked], prompt, provider, cache)
    assert len(cache.memos) == 2 and provider.requests == []


class PlainCache:
    """A CallCache with only get/put (no render memo), like a minimal store."""

    def __init__(self) -> None:
        self.records: dict[str, Any] = {}

    def get(self, cache_key: str) -> Any:
        return self.records.get(cache_key)

    def put(self, record: Any) -> None:
        self.records[record.cache_key] = record


def test_a_cache_without_the_memo_still_serves_reruns(prompt: Prompt) -> None:
    cache = PlainCache()
    items = [make_item(i) for i in range(3)]
    run(items, prompt, ScriptedProvider(default=PASS), cache)  # type: ignore[arg-type]
    provider = ScriptedProvider()
    out = run(items, prompt, provider, cache)  # type: ignore[arg-type]
    assert provider.requests == [] and [v.label for v in out] == ["pass"] * 3
