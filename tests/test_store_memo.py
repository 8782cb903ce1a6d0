"""The database call cache's render memo: a rerun answers from stored calls without rendering,
on SQLite and PostgreSQL, also through the write-behind cache `judge run` uses."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from judge.grading.engine import GradingStats, grade_items
from judge.grading.writebehind import WriteBehindCache
from judge.items import extract_items
from judge.ledger import load_scenario
from judge.prompts import load_prompt
from judge.providers.base import ModelParams
from judge.providers.scripted import ScriptedProvider
from judge.store import Store
from judge.testing.verdicts import default_completion
from judge.trace import iter_traces

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"


def _items() -> list:
    loaded = load_scenario(REFUND)
    out = []
    for path in sorted(REFUND.glob("*.json")):
        for trace in iter_traces(path):
            out.extend(extract_items(loaded, trace, ["scope_fidelity"]))
    return out


def _grade(items: list, cache: object, provider: ScriptedProvider) -> GradingStats:
    stats = GradingStats()
    asyncio.run(grade_items(items, load_prompt("scope_fidelity"), provider, cache,  # type: ignore[arg-type]
                            params=ModelParams(), concurrency=4, rpm=None, retries=0,
                            stats=stats))
    return stats


@pytest.mark.parametrize("write_behind", [False, True])
def test_rerun_from_the_database_renders_nothing_and_calls_nothing(
        store: Store, write_behind: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items()
    assert len(items) >= 4
    first = WriteBehindCache(store.calls) if write_behind else store.calls
    _grade(items, first, ScriptedProvider(default=default_completion))
    if isinstance(first, WriteBehindCache):
        first.close()
    assert store.calls.count() >= 1

    import judge.grading.engine as engine

    def no_render(*_: object, **__: object) -> None:
        raise AssertionError("a memo hit must not render the prompt")

    monkeypatch.setattr(engine, "render", no_render)
    silent = ScriptedProvider()  # any call would fail its item
    stats = _grade(items, store.calls, silent)
    assert stats.provider_calls == 0 and not silent.requests
    assert stats.cache_hits == len(items) and stats.unscored == 0


def test_calls_and_their_memos_are_stored_in_one_transaction(store: Store) -> None:
    """One commit per batch of the write-behind cache: the memos (which point at calls) go
    with the calls, after them."""
    from sqlalchemy import event

    from judge.providers.base import CallRecord

    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))
    records = [CallRecord(cache_key=f"k-{k}", item_id=f"t#{k}:r", prompt_hash="p", model="m",
                          params={}, request={}, response_text="{}", usage={}, latency_s=0.0)
               for k in ("a", "b", "c")]
    store.calls.put_batch(records, [("memo:a", "k-a"), ("memo:b", "k-b")])
    assert len(commits) == 1
    assert store.calls.count() == 3
    assert store.calls.get_memo("memo:a") == ("k-a", "{}")
    assert store.calls.get_memo("memo:b") == ("k-b", "{}")
    cache = WriteBehindCache(store.calls, interval_s=60.0)
    try:
        cache.put_memo("memo:c", "k-c", "{}")
        cache.flush()
    finally:
        cache.close()
    assert store.calls.get_memo("memo:c") == ("k-c", "{}")
