"""The call cache and invalid replies (issue 9, item 10): an invalid reply is stored with its
reason, never a final answer on a later run; a stored chain that ended invalid is asked again
(the new replies take the keys, the old ones stay aside); replay-only replays what is stored;
the endpoint is part of every key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from test_grading_engine import PASS, make_item, verdict_text
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import Verdict
from judge.grading.cache import JsonlCache, MemoryCache
from judge.grading.engine import REPLAY_MISS, GradingStats, grade_items_sync
from judge.grading.keys import endpoint_of
from judge.items import Item
from judge.prompts import Prompt, load_prompt
from judge.providers.base import CallCache, CallRecord, ModelParams, Provider, ProviderFailure
from judge.providers.registry import make_provider
from judge.providers.scripted import ScriptedProvider
from judge.settings import Settings
from judge.store import open_store
from judge.store.tables import CallRow
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import FakeRequest, Reply, malformed

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
GARBAGE = "I think it is fine, probably."
GARBAGE_2 = '{"label": "maybe"}'


@pytest.fixture
def prompt() -> Prompt:
    return load_prompt("scope_fidelity")


def grade(items: list[Item], prompt: Prompt, provider: Provider, cache: CallCache,
          **kw: Any) -> list[Verdict]:
    opts: dict[str, Any] = {"params": ModelParams(), "concurrency": 2, "rpm": None,
                            "retries": 0, "retry_base_delay": 0.001}
    opts.update(kw)
    return grade_items_sync(items, prompt, provider, cache, **opts)


# -- the engine ------------------------------------------------------------------------------

def test_an_invalid_reply_is_stored_with_its_reason(prompt: Prompt) -> None:
    cache = MemoryCache()
    (v,) = grade([make_item(1)], prompt, ScriptedProvider([GARBAGE, GARBAGE_2]), cache)
    assert v.label == "unscored" and v.raw_completion == GARBAGE_2
    records = sorted(cache.records.values(), key=lambda r: len(r.request["messages"]))
    assert [r.response_text for r in records] == [GARBAGE, GARBAGE_2]
    assert all(r.invalid_reason for r in records)
    assert records[0].invalid_reason is not None and records[0].invalid_reason in (v.reason or "")
    good = MemoryCache()
    grade([make_item(1)], prompt, ScriptedProvider(default=PASS), good)
    (rec,) = good.records.values()
    assert rec.invalid_reason is None and rec.replaces_invalid is None


def test_a_chain_that_ended_invalid_is_asked_again_on_a_later_run(prompt: Prompt) -> None:
    """The issue's case: a garbage reply used to be cached for good (0 calls, unscored for
    ever); a later run against a healthy judge now asks again and scores the item."""
    cache = MemoryCache()
    broken = ScriptedProvider([GARBAGE, GARBAGE_2])
    (first,) = grade([make_item(1)], prompt, broken, cache)
    assert first.label == "unscored"
    healthy = ScriptedProvider(default=PASS)
    stats = GradingStats()
    (second,) = grade([make_item(1)], prompt, healthy, cache, stats=stats)
    assert second.label == "pass" and second.metadata["asked_again"] is True
    assert second.metadata["cached"] is False
    assert len(healthy.requests) == 1  # the first request again, not a re-ask of garbage
    assert healthy.requests[0].messages == broken.requests[0].messages
    assert (stats.provider_calls, stats.asked_again, stats.cache_hits) == (1, 1, 0)
    # the old replies stay stored (for audit); the new one is served from now on
    assert [r.response_text for r in cache.replaced] == [GARBAGE]
    assert len(cache) == 2  # the new first reply, and the invalid re-ask still stored
    again = ScriptedProvider()  # no answers: any call would fail the item
    (third,) = grade([make_item(1)], prompt, again, cache)
    assert third.label == "pass" and again.requests == []


def test_a_fresh_chain_reads_no_cache(prompt: Prompt) -> None:
    """A deterministic garbage reply makes the same re-ask as last time; asked again, that
    re-ask goes to the provider too instead of the stored invalid reply."""
    cache = MemoryCache()
    grade([make_item(1)], prompt, ScriptedProvider([GARBAGE, GARBAGE_2]), cache)
    provider = ScriptedProvider([GARBAGE, PASS])
    (v,) = grade([make_item(1)], prompt, provider, cache)
    assert v.label == "pass" and v.metadata["reasked"] and v.metadata["asked_again"]
    assert len(provider.requests) == 2
    assert sorted(r.response_text for r in cache.replaced) == [GARBAGE, GARBAGE_2]
    assert sorted(r.response_text for r in cache.records.values()) == sorted([GARBAGE, PASS])
    assert all(r.replaces_invalid for r in cache.records.values())


def test_a_chain_that_ended_valid_replays_with_no_call(prompt: Prompt) -> None:
    """An invalid first reply whose re-ask was valid is not a final answer: the chain
    replays to the re-ask's verdict, as before."""
    cache = MemoryCache()
    grade([make_item(1)], prompt, ScriptedProvider([GARBAGE, PASS]), cache)
    stats = GradingStats()
    again = ScriptedProvider()
    (v,) = grade([make_item(1)], prompt, again, cache, stats=stats)
    assert again.requests == [] and v.label == "pass" and v.metadata["cached"] is True
    assert v.metadata["reasked"] is True and "asked_again" not in v.metadata
    assert (stats.cache_hits, stats.reasks, stats.provider_calls) == (2, 1, 0)


def test_a_chain_stopped_short_asks_only_the_reask(prompt: Prompt) -> None:
    """The first reply stored, the re-ask never (the re-ask failed, or a run was killed
    between them, or the reply came from a batch): the chain goes on from where it stopped."""
    cache = MemoryCache()
    fails = ScriptedProvider([GARBAGE, ProviderFailure("down", retryable=False, status=400)])
    (v,) = grade([make_item(1)], prompt, fails, cache)
    assert v.label == "unscored" and "provider failed" in (v.reason or "")
    provider = ScriptedProvider(default=PASS)
    (v2,) = grade([make_item(1)], prompt, provider, cache)
    assert v2.label == "pass" and v2.metadata["reasked"] is True
    (sent,) = provider.requests
    assert GARBAGE in "\n".join(m["content"] for m in sent.messages)  # the re-ask itself


def test_replay_only_replays_stored_chains_invalid_ones_included(prompt: Prompt) -> None:
    cache = MemoryCache()
    items = [make_item(1), make_item(2), make_item(3)]
    (bad,) = grade(items[:1], prompt, ScriptedProvider([GARBAGE, GARBAGE_2]), cache)
    grade(items[1:2], prompt, ScriptedProvider([GARBAGE, PASS]), cache)
    provider = ScriptedProvider(default=PASS)
    out = grade(items, prompt, provider, cache, replay_only=True)
    assert provider.requests == []
    assert [v.label for v in out] == ["unscored", "pass", "unscored"]
    assert (out[0].reason, out[0].raw_completion) == (bad.reason, bad.raw_completion)
    assert out[2].reason == REPLAY_MISS
    # and a chain stopped short cannot be finished without a call
    short = MemoryCache()
    grade(items[:1], prompt, ScriptedProvider(
        [GARBAGE, ProviderFailure("down", retryable=False, status=400)]), short)
    (v,) = grade(items[:1], prompt, provider, short, replay_only=True)
    assert v.reason == REPLAY_MISS and provider.requests == []


def test_the_render_memo_leads_only_to_valid_replies(prompt: Prompt,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = MemoryCache()
    grade([make_item(1)], prompt, ScriptedProvider([GARBAGE, GARBAGE_2]), cache)
    assert cache.memos == {}  # no memo for an item with no valid first reply
    grade([make_item(2)], prompt, ScriptedProvider([GARBAGE, PASS]), cache)
    assert cache.memos == {}  # nor for a chain that needed its re-ask
    grade([make_item(1)], prompt, ScriptedProvider([PASS]), cache)  # asked again: valid
    ((key, text),) = cache.memos.values()
    assert text == PASS and cache.records[key].response_text == PASS

    def no_render(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("rendered although the memo knew the answer")

    import judge.grading.engine as engine
    monkeypatch.setattr(engine, "render", no_render)
    provider = ScriptedProvider()
    (v,) = grade([make_item(1)], prompt, provider, cache, replay_only=True)
    assert v.label == "pass" and provider.requests == []


def test_a_memo_whose_reply_is_no_longer_valid_takes_the_full_path(prompt: Prompt) -> None:
    """Validation got stricter since the reply was stored (issue 9 tightened it): the memo's
    reply is re-validated, the stored first reply is now invalid, and its re-ask is asked."""
    cache = MemoryCache()
    lax = verdict_text("fail", key="refundOnce", seq=2)
    grade([make_item(1)], prompt, ScriptedProvider([lax]), cache)
    (key, _), = cache.memos.values()
    stricter = verdict_text("fail", key="refundOnce", seq=77)  # evidence outside the slice
    cache.memos = {m: (k, stricter) for m, (k, _t) in cache.memos.items()}
    cache.records[key].response_text = stricter
    provider = ScriptedProvider([PASS])
    (v,) = grade([make_item(1)], prompt, provider, cache)
    assert v.label == "pass" and v.metadata["reasked"] is True and len(provider.requests) == 1


def test_a_crashing_validator_still_stores_the_call(prompt: Prompt,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.grading.engine as engine

    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("validator bug")

    monkeypatch.setattr(engine, "parse_verdict", boom)
    cache = MemoryCache()
    (v,) = grade([make_item(1)], prompt, ScriptedProvider(default=PASS), cache)
    assert v.label == "unscored" and "validator bug" in (v.reason or "")
    (rec,) = cache.records.values()
    assert rec.response_text == PASS and rec.invalid_reason == "RuntimeError: validator bug"


def test_the_jsonl_cache_keeps_the_replaced_line(prompt: Prompt, tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as cache:
        grade([make_item(1)], prompt, ScriptedProvider([GARBAGE, GARBAGE_2]), cache)
    with JsonlCache(path) as cache:
        (v,) = grade([make_item(1)], prompt, ScriptedProvider([PASS]), cache)
        assert v.label == "pass"
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.startswith('{"cache_')]
    assert [x["response_text"] for x in lines] == [GARBAGE, GARBAGE_2, PASS]
    assert lines[0]["invalid_reason"] and lines[2]["replaces_invalid"]
    assert lines[0]["cache_key"] == lines[2]["cache_key"]
    with JsonlCache(path) as cache:
        again = ScriptedProvider()
        (v,) = grade([make_item(1)], prompt, again, cache)
        assert v.label == "pass" and again.requests == []


# -- the database ----------------------------------------------------------------------------

def call(key: str, text: str, *, invalid: str | None = None,
         replaces: str | None = None) -> CallRecord:
    return CallRecord(cache_key=key, item_id="t#1:r", prompt_hash="sha256:p", model="m",
                      params={}, request={"system": "s"}, response_text=text, usage={},
                      latency_s=0.1, invalid_reason=invalid, replaces_invalid=replaces)


def test_the_store_keeps_a_replaced_call_aside(store_url: str) -> None:
    with open_store(store_url) as store:
        store.calls.put(call("k", GARBAGE, invalid="not JSON"))
        got = store.calls.get("k")
        assert got is not None and got.invalid_reason == "not JSON"
        store.calls.put(call("k", "other answer"))  # not a replacement: the first stays
        assert (store.calls.get("k") or call("", "")).response_text == GARBAGE
        store.calls.put_many([call("k", PASS, replaces="asked again"),
                              call("j", PASS)])
        got = store.calls.get("k")
        assert got is not None and (got.response_text, got.invalid_reason) == (PASS, None)
        store.calls.put(call("legacy", "valid once"))  # stored valid, found invalid later
        store.calls.put(call("legacy", PASS, replaces="stricter rules"))
        assert store.calls.count() == 5
        with store.engine.connect() as conn:
            t = CallRow.__table__
            rows = {r.cache_key: r for r in conn.execute(select(t.c.cache_key, t.c.response_text,
                                                                t.c.invalid_reason))}
    aside = {k: r for k, r in rows.items() if "#replaced-" in k}
    assert sorted((k.split("#")[0], r.response_text, r.invalid_reason)
                  for k, r in aside.items()) == [
        ("k", GARBAGE, "not JSON"), ("legacy", "valid once", "stricter rules")]


# -- end to end: judge grade against the fake server -----------------------------------------

class Switch:
    """A fake server responder that answers garbage until `healthy` is set."""

    def __init__(self) -> None:
        self.healthy = False

    def __call__(self, request: FakeRequest) -> Reply | None:
        return None if self.healthy else malformed("I think it is fine, probably.")


@pytest.fixture
def switch() -> Switch:
    return Switch()


@pytest.fixture
def server(switch: Switch) -> Iterator[FakeProviderServer]:
    with FakeProviderServer(responder=switch) as srv:
        yield srv


def judge_grade(server: FakeProviderServer, db: str, *extra: str) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["grade", str(REFUND), str(REFUND / "pass.json"), "--model",
                                   "openai:judge-test", "--base-url", server.openai_base_url,
                                   "--format", "json", "--db", db, *extra])
    assert res.exit_code in (0, 1), res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_a_rerun_against_a_healthy_server_scores_what_garbage_left_unscored(
        server: FakeProviderServer, switch: Switch, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'j.db'}"
    broken = judge_grade(server, db)
    n = len(broken["verdicts"])
    assert n >= 1 and {v["label"] for v in broken["verdicts"]} == {"unscored"}
    assert server.generation_count == 2 * n  # each first answer and its re-ask
    replay = judge_grade(server, db, "--replay-only")
    assert [v["reason"] for v in replay["verdicts"]] == [v["reason"] for v in
                                                          broken["verdicts"]]
    assert server.generation_count == 2 * n
    switch.healthy = True
    fixed = judge_grade(server, db)
    assert {v["label"] for v in fixed["verdicts"]} <= {"pass", "fail"}
    assert server.generation_count == 3 * n and fixed["summary"]["provider_calls"] == n
    cached = judge_grade(server, db)
    assert server.generation_count == 3 * n and cached["summary"]["provider_calls"] == 0
    with open_store(db) as store:
        assert store.calls.count() == 3 * n  # every reply is kept, the garbage aside
        with store.engine.connect() as conn:
            t = CallRow.__table__
            rows = conn.execute(select(t.c.cache_key, t.c.invalid_reason)).all()
    assert sum(1 for r in rows if "#replaced-" in r.cache_key) == n
    assert sum(1 for r in rows if r.invalid_reason) == 2 * n


def test_another_endpoint_under_the_same_model_name_is_not_served_old_replies(
        server: FakeProviderServer, switch: Switch, tmp_path: Path) -> None:
    switch.healthy = True
    db = f"sqlite:///{tmp_path / 'j.db'}"
    first = judge_grade(server, db)
    n = len(first["verdicts"])
    with FakeProviderServer() as other:
        second = judge_grade(other, db)
        assert other.generation_count == n and second["summary"]["provider_calls"] == n
        assert judge_grade(other, db)["summary"]["provider_calls"] == 0
    assert judge_grade(server, db)["summary"]["provider_calls"] == 0
    assert server.generation_count == n
    with open_store(db) as store, store.engine.connect() as conn:
        t = CallRow.__table__
        endpoints = {json.loads(r[0])["endpoint"] if isinstance(r[0], str) else r[0]["endpoint"]
                     for r in conn.execute(select(t.c.request))}
    assert endpoints == {server.openai_base_url.rstrip("/"), other.openai_base_url.rstrip("/")}


def test_providers_report_their_endpoint(server: FakeProviderServer) -> None:
    settings = Settings.load(base_url=server.openai_base_url + "/")
    openai_judge = make_provider("openai:judge-test", settings)
    anthropic_judge = make_provider("anthropic:judge-test",
                                    Settings.load(base_url=server.anthropic_base_url))
    assert endpoint_of(openai_judge) == server.openai_base_url.rstrip("/")
    assert endpoint_of(anthropic_judge) == server.anthropic_base_url.rstrip("/")
    assert endpoint_of(make_provider("heuristic", Settings.load())) == ""
