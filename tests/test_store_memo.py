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
