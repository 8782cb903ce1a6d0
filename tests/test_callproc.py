"""Provider calls stored by a forked child (judge.pipeline.callproc), against real databases:
the write-behind contract (pending calls visible, stored once acknowledged, at most one
unstored call per grading worker however slow the store), one message per turn of the loop,
failures and the child's death surfacing as StoreError, and a child that holds no other
child's pipe and ends with its parent's `close`."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_grading_engine import PASS, make_item

import judge.pipeline.callproc as callproc
from judge.errors import StoreError
from judge.pipeline.callproc import CallWriterProcess
from judge.providers.base import CallRecord, JudgeRequest, ModelParams, Provider, ProviderResponse
from judge.store import Store, open_store

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")


def record(i: int) -> CallRecord:
    return CallRecord(cache_key=f"k{i}", item_id=f"t#{i}:r", prompt_hash="sha256:p",
                      model="m", params={"temperature": 0}, request={"system": "s" * 5000},
                      response_text=f'{{"n": {i}}}', usage={"total_tokens": i}, latency_s=0.1)


def stored(url: str) -> int:
    """The calls another connection sees (the child commits on its own connection)."""
    other = open_store(url)
    try:
        return other.calls.count()
    finally:
        other.close()


def test_pending_calls_are_visible_and_stored_once_acknowledged(store: Store) -> None:
    async def go() -> None:
        cache = CallWriterProcess(store)
        cache.start()
        try:
            cache.put(record(1))
            cache.put_memo("memo:1", "k1", '{"n": 1}')
            got = cache.get("k1")
            assert got is not None and got.response_text == '{"n": 1}'
            assert cache.get_memo("memo:1") == ("k1", '{"n": 1}')
            await cache.wait_stored("k1")
            assert stored(store.url) == 1
            await cache.wait_stored("k1")  # stored: at once
            await cache.wait_stored("never-put")  # nothing pending under it: at once
            for i in range(2, 6):
                cache.put(record(i))
        finally:
            cache.close()  # stores what is left before the child ends
        assert not cache.running

    asyncio.run(go())
    assert store.calls.count() == 5
    assert store.calls.get("k4") is not None and store.calls.get("k4").usage == {
        "total_tokens": 4}
    assert store.calls.get_memo("memo:1") == ("k1", '{"n": 1}')


def test_what_is_put_in_one_turn_of_the_loop_is_one_message(store: Store) -> None:
    async def go() -> int:
        cache = CallWriterProcess(store)
        cache.start()
        try:
            async def one(i: int) -> None:
                cache.put(record(i))
                await cache.wait_stored(f"k{i}")

            await asyncio.gather(*(one(i) for i in range(50)))
            return cache._messages
        finally:
            cache.close()

    messages = asyncio.run(go())
    assert store.calls.count() == 50 and messages == 1


class Watched(Provider):
    """A remote judge that, at every request, counts the earlier replies not stored yet:
    what a SIGKILL at that moment would lose."""

    spec = "watched:test"
    display_name = "watched"

    def __init__(self, url: str) -> None:
        self.url = url
        self.sent = 0
        self.worst = 0

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.sent += 1  # this one has reached the provider, and is not stored
        self.worst = max(self.worst, self.sent - stored(self.url))
        await asyncio.sleep(0.005)
        return ProviderResponse(text=PASS, model=self.spec)


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_at_most_one_unstored_call_per_worker_however_slow_the_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int) -> None:
    """The bound tests/test_suite_run.py checks after a SIGKILL, with a child that takes
    100 ms to store each message against 5 ms a call."""
    from judge.grading.engine import grade_items
    from judge.prompts import load_prompt

    real = callproc.store_batch

    def slow(store: Store, records: Sequence[CallRecord],
             memos: Sequence[tuple[str, str]]) -> None:
        time.sleep(0.1)
        real(store, records, memos)

    monkeypatch.setattr(callproc, "store_batch", slow)  # the forked child runs it
    url = f"sqlite:///{tmp_path / 'j.db'}"
    store = open_store(url)
    provider = Watched(url)
    items = [make_item(i) for i in range(40)]

    async def go() -> list[str]:
        cache = CallWriterProcess(store)
        cache.start()
        try:
            out = await grade_items(items, load_prompt("scope_fidelity"), provider, cache,
                                    params=ModelParams(), concurrency=concurrency, rpm=None,
                                    retries=0)
        finally:
            cache.close()
        return [v.label for v in out]

    try:
        assert asyncio.run(go()) == ["pass"] * 40
        assert store.calls.count() == 40
    finally:
        store.close()
    assert 1 <= provider.worst <= concurrency


def test_a_failure_to_store_is_the_childs_store_error(store: Store,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_: object) -> None:
        raise StoreError("database x: disk full")

    monkeypatch.setattr(callproc, "store_batch", full)

    async def go() -> None:
        cache = CallWriterProcess(store)
        cache.start()
        try:
            cache.put(record(1))
            with pytest.raises(StoreError, match="disk full"):
                await cache.wait_stored("k1")
            with pytest.raises(StoreError, match="disk full"):
                cache.put(record(2))
        finally:
            with pytest.raises(StoreError, match="disk full"):
                cache.close()
        assert not cache.running

    asyncio.run(go())


def test_the_childs_death_fails_its_waiters(store: Store,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def hang(*_: object) -> None:
        time.sleep(60)

    monkeypatch.setattr(callproc, "store_batch", hang)

    async def go() -> None:
        cache = CallWriterProcess(store)
        cache.start()
        try:
            cache.put(record(1))
            await asyncio.sleep(0.2)
            assert cache.pid is not None
            os.kill(cache.pid, signal.SIGKILL)
            with pytest.raises(StoreError, match="ended before storing every call"):
                await asyncio.wait_for(cache.wait_stored("k1"), 10)
        finally:
            with pytest.raises(StoreError):
                cache.close()

    asyncio.run(go())


def _pipes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            out.add(target)
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc")
def test_the_child_holds_no_end_of_another_childs_pipe(tmp_path: Path) -> None:
    """Forked after the checking child, it closes this process's end of that child's pipe
    (held elsewhere, the pipe would not break when this process closes it), and its own
    pipes' far ends."""
    import multiprocessing

    url = f"sqlite:///{tmp_path / 'j.db'}"
    store = open_store(url)
    ctx = multiprocessing.get_context("fork")
    theirs, other = ctx.Pipe(duplex=False)  # stands for the checking child's pipe
    other.close()  # the checking child's end: only that child holds it
    mine = {os.readlink(f"/proc/self/fd/{theirs.fileno()}")}

    async def go() -> set[str]:
        cache = CallWriterProcess(store)
        cache.start(close_in_child=(theirs,))
        try:
            # the child closes what it must before it serves anything: once a call is
            # stored, it has (a fixed sleep here could end first on a loaded machine)
            cache.put(record(1))
            await cache.wait_stored("k1")
            assert cache.pid is not None
            return _pipes(cache.pid)
        finally:
            cache.close()

    try:
        held = asyncio.run(go())
    finally:
        theirs.close()
        store.close()
    assert held and not (held & mine)
