"""Inside one process, nothing the grading path starts outlives the call that started it
(issue 28): a failed grading worker's siblings stop taking jobs, a failed batch's sibling
pollers stop polling, and the call cache's writer thread ends even when the pipeline fails
before grading begins; `grade_traces` and `work_loop` leave no thread or child behind."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading
from pathlib import Path

import pytest
from test_pipeline_grade import source

from judge.errors import InputError, StoreError
from judge.formats import Verdict
from judge.grading.tasks import gather_or_cancel
from judge.items import Item
from judge.pipeline import GradeOptions, grade_traces
from judge.pipeline.pool import GradingPool, Job
from judge.pipeline.worker import RunProviders, enqueue_run, work_loop
from judge.prompts import load_prompt
from judge.providers.base import JudgeRequest
from judge.providers.heuristic import HeuristicProvider
from judge.settings import Settings
from judge.store import Store


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


# -- gather_or_cancel --------------------------------------------------------------------------

async def test_a_failure_cancels_the_others_and_waits_for_them() -> None:
    ended: list[str] = []

    async def slow() -> str:
        try:
            await asyncio.sleep(30)
            return "slow"
        finally:
            ended.append("slow")

    async def failing() -> str:
        await asyncio.sleep(0.01)
        raise StoreError("disk full")

    with pytest.raises(StoreError, match="disk full"):  # the error itself, not a group
        await gather_or_cancel(slow(), failing(), slow())
    assert ended == ["slow", "slow"]  # both had ended before the error reached us


async def test_results_come_in_order_as_gather_gives_them() -> None:
    async def value(x: int, delay: float) -> int:
        await asyncio.sleep(delay)
        return x

    assert await gather_or_cancel(value(1, 0.03), value(2, 0.0), value(3, 0.01)) == [1, 2, 3]
    assert await gather_or_cancel() == []


async def test_cancelling_the_call_cancels_every_one() -> None:
    ended: list[int] = []

    async def slow(i: int) -> None:
        try:
            await asyncio.sleep(30)
        finally:
            ended.append(i)

    task = asyncio.ensure_future(gather_or_cancel(slow(1), slow(2)))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(ended) == [1, 2]


# -- the grading pool --------------------------------------------------------------------------

#: how long a sibling of the failing job takes: long beside the failure's 0.05 s, so only a
#: pause of the loop longer than ~1 s lets a sibling finish before it is cancelled (with
#: 0.2 s, a 0.15 s pause could)
SIBLING_S = 1.0


class _Grader:
    """A grader whose first item fails (as a store write can) and whose others are slow."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []

    async def grade(self, item: Item, request: JudgeRequest | None = None) -> Verdict:
        self.started.append(item.item_id)
        if item.item_id.endswith("#0"):
            await asyncio.sleep(0.05)
            raise StoreError("disk full")
        await asyncio.sleep(SIBLING_S)
        self.finished.append(item.item_id)
        raise AssertionError("not reached in this test")


def _items(n: int) -> list[Item]:
    """`n` copies of a real item, each under its own id (`...#0` first)."""
    from dataclasses import replace

    from judge.pipeline.collect import Checker

    errors: list[InputError] = []
    template = Checker([source(errors)], None, errors=errors).run().items[0]
    return [replace(template, item_id=f"{template.trace_id}#{i}") for i in range(n)]


async def test_a_failed_worker_stops_its_siblings_before_the_pool_returns() -> None:
    grader = _Grader()
    pool = GradingPool(3, lambda job, v: None)
    for item in _items(30):
        pool.put(Job("run", item, grader))  # type: ignore[arg-type]
    pool.close()
    with pytest.raises(StoreError):
        await pool.run()
    taken = len(grader.started)
    # a sibling left running would finish and take (and "grade") more jobs meanwhile
    await asyncio.sleep(SIBLING_S + 0.5)
    assert len(grader.started) == taken <= 3
    assert grader.finished == []  # the two in flight were cancelled, not finished


# -- the pipeline and the worker loop ----------------------------------------------------------

def test_a_pipeline_that_fails_before_grading_leaves_no_writer_thread(store: Store) -> None:
    before = _threads()

    def boom(prompt: object) -> None:
        raise StoreError("disk full")

    store.save_prompt = boom  # type: ignore[method-assign]
    errors: list[InputError] = []
    with pytest.raises(StoreError, match="disk full"):
        grade_traces([source(errors)], prompts={"scope_fidelity": load_prompt("scope_fidelity")},
                     provider=HeuristicProvider(), settings=Settings.load(environ={}),
                     store=store, run_id=store.save_run(), errors=errors)
    left = [t.name for t in _threads() - before]
    assert left == [], f"threads outlived the failed grade_traces: {left}"
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("child", [True, False])
def test_grade_traces_and_work_loop_leave_nothing_running(store: Store, child: bool,
                                                          tmp_path: Path) -> None:
    before = _threads()
    errors: list[InputError] = []
    run_id = store.save_run()
    result = grade_traces([source(errors)], prompts={"scope_fidelity": load_prompt(
        "scope_fidelity")}, provider=HeuristicProvider(), settings=Settings.load(environ={}),
        store=store, run_id=run_id, errors=errors, options=GradeOptions(check_process=child))
    assert result.stats.items > 0
    assert [t.name for t in _threads() - before] == []
    assert multiprocessing.active_children() == []

    other = store.save_run(config={"model": "heuristic"})
    assert enqueue_run(store, other, result.checked.items, set()) > 0
    settings = Settings.load(environ={})
    stats = work_loop(store, RunProviders(store, settings), settings, run_id=other,
                      stop_when_run_done=True, idle_exit_s=5, poll_s=0.01)
    assert stats.items == len(result.checked.items)
    assert [t.name for t in _threads() - before] == []
    assert multiprocessing.active_children() == []


class _Interrupted(HeuristicProvider):
    """The heuristic judge, until its `n`th call: then Ctrl-C (as a KeyboardInterrupt)."""

    remote = True  # so the worker grades several items at once

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.calls = 0

    async def generate(self, request: JudgeRequest):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls >= self.n:
            raise KeyboardInterrupt
        await asyncio.sleep(0.01)
        return await super().generate(request)


class _Jittered(_Interrupted):
    """`_Interrupted`, each call first waiting 0-20 ms (seeded): where the interrupt meets
    the loop's other tasks varies from run to run, as it does under load."""

    def __init__(self, n: int, seed: int) -> None:
        super().__init__(n)
        self.rng = random.Random(seed)

    async def generate(self, request: JudgeRequest):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.rng.random() * 0.02)
        return await super().generate(request)


def test_an_interrupted_worker_gives_its_leases_back_whatever_the_timing(store: Store) -> None:
    """A KeyboardInterrupt raised inside a grading task leaves the event loop from that
    task, and again from the pool's task while asyncio.run cancels the rest: the worker's
    own cleanup is then never reached. Before work_loop settled after the loop, 9 of 100
    such runs kept every lease (the next worker could claim nothing for 300 s)."""
    errors: list[InputError] = []
    from judge.pipeline.collect import Checker

    items = Checker([source(errors)], store, errors=errors).run().items
    for seed in range(25):
        # a seed of its own: no call is in the cache from the runs before
        settings = Settings.load(environ={}).model_copy(update={"concurrency": 3,
                                                                "seed": 1000 + seed})
        run_id = store.save_run(config={"model": "heuristic"})
        enqueue_run(store, run_id, items, set())
        with pytest.raises(KeyboardInterrupt):
            work_loop(store, lambda _run, s=seed: _Jittered(3, s), settings, run_id=run_id,
                      lease_s=300, poll_s=0.01, idle_exit_s=0.5)
        held = store.work.claim(f"another-worker-{seed}", 1000, run_id=run_id, lease_s=300)
        graded = len(store.stored_item_ids(run_id))
        assert len(held) == len(items) - graded > 0, f"seed {seed}"


def test_an_interrupted_worker_gives_its_leases_back_at_once(store: Store) -> None:
    errors: list[InputError] = []
    from judge.pipeline.collect import Checker

    items = Checker([source(errors)], store, errors=errors).run().items
    run_id = store.save_run(config={"model": "heuristic"})
    enqueue_run(store, run_id, items, set())
    settings = Settings.load(environ={}).model_copy(update={"concurrency": 3})
    provider = _Interrupted(4)
    with pytest.raises(KeyboardInterrupt):
        work_loop(store, lambda _run: provider, settings, run_id=run_id, lease_s=300,
                  poll_s=0.01)
    held = store.work.claim("another-worker", 1000, run_id=run_id, lease_s=300)
    graded = len(store.stored_item_ids(run_id))
    # every item not graded is free for another worker now, not in 300 s
    assert len(held) == len(items) - graded > 0
