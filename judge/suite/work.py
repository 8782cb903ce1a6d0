"""Grading work shared by `judge worker` processes through the database.

A distributed run stores its items and enqueues one work row per item. Workers claim chunks
as leases (`FOR UPDATE SKIP LOCKED` on PostgreSQL; one conditional UPDATE under SQLite's
single writer), grade them through the shared provider-call cache, store the verdicts and
mark the rows done. A killed worker's lease expires and another worker takes its rows; the
verdicts' unique (run_id, item_id) and the call cache make a re-graded row cost nothing twice.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.types import DateTime

from judge.grading.engine import GradingStats, grade_items
from judge.items import Item
from judge.prompts import load_prompt
from judge.providers.base import Provider
from judge.routing import RoutingPolicy
from judge.settings import Settings
from judge.store.db import insert_ignore, store_errors, utcnow
from judge.store.repo import Store
from judge.store.tables import VerdictRow, WorkRow

W: Any = WorkRow.__table__  # type: ignore[attr-defined]
V: Any = VerdictRow.__table__  # type: ignore[attr-defined]
DEFAULT_LEASE_S = 300.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def enqueue(store: Store, run_id: str, items: list[Item], vetoed: set[str]) -> int:
    """One work row per item not yet graded in this run (idempotent)."""
    done = store.stored_item_ids(run_id)
    now = utcnow()
    rows = [{"run_id": run_id, "item_id": it.item_id, "rubric": it.rubric, "state": "queued",
             "vetoed": it.trace_id in vetoed, "lease_owner": None, "lease_expires_at": None,
             "attempts": 0, "updated_at": now}
            for it in items if it.item_id not in done]
    with store_errors(store.url), store.engine.begin() as conn:
        for i in range(0, len(rows), 1000):
            conn.execute(insert_ignore(W, store.dialect), rows[i:i + 1000])
    return len(rows)


@dataclass(frozen=True)
class Claimed:
    run_id: str
    item_id: str
    rubric: str
    vetoed: bool


def claim(store: Store, owner: str, n: int, *, run_id: str | None = None,
          lease_s: float = DEFAULT_LEASE_S) -> list[Claimed]:
    """Lease up to `n` queued rows (or rows whose lease expired) for `owner`."""
    now = utcnow()
    params: dict[str, Any] = {"o": owner, "exp": now + timedelta(seconds=lease_s),
                              "now": now, "n": n}
    cond = "(w.state = 'queued' OR (w.state = 'leased' AND w.lease_expires_at < :now))"
    if run_id is not None:
        cond += " AND w.run_id = :run"
        params["run"] = run_id
    binds = [bindparam("exp", type_=DateTime(timezone=True)),
             bindparam("now", type_=DateTime(timezone=True))]
    if store.dialect == "postgresql":
        sql = (f"WITH pick AS (SELECT w.id FROM grading_work w WHERE {cond} ORDER BY w.id "
               "LIMIT :n FOR UPDATE SKIP LOCKED) UPDATE grading_work SET state = 'leased', "
               "lease_owner = :o, lease_expires_at = :exp, attempts = attempts + 1 FROM pick "
               "WHERE grading_work.id = pick.id RETURNING grading_work.run_id, "
               "grading_work.item_id, grading_work.rubric, grading_work.vetoed")
    else:
        sql = (f"UPDATE grading_work SET state = 'leased', lease_owner = :o, "
               f"lease_expires_at = :exp, attempts = attempts + 1 WHERE id IN "
               f"(SELECT w.id FROM grading_work w WHERE {cond} ORDER BY w.id LIMIT :n) "
               "RETURNING run_id, item_id, rubric, vetoed")
    with store_errors(store.url), store.engine.begin() as conn:
        rows = conn.execute(text(sql).bindparams(*binds), params).all()
    return [Claimed(r[0], r[1], r[2], bool(r[3])) for r in rows]


def complete(store: Store, owner: str, done: list[Claimed]) -> None:
    if not done:
        return
    with store_errors(store.url), store.engine.begin() as conn:
        for run_id in {c.run_id for c in done}:
            ids = [c.item_id for c in done if c.run_id == run_id]
            conn.execute(update(W).where(W.c.run_id == run_id, W.c.item_id.in_(ids))
                         .values(state="done", updated_at=utcnow()))


def _has_verdict(store: Store, run_id: str, item_id: str) -> bool:
    with store_errors(store.url), store.engine.connect() as conn:
        return conn.execute(select(V.c.id).where(V.c.run_id == run_id,
                                                 V.c.item_id == item_id)).first() is not None


def outstanding(store: Store, run_id: str) -> int:
    with store_errors(store.url), store.engine.connect() as conn:
        n = conn.execute(select(func.count()).select_from(W).where(
            W.c.run_id == run_id, W.c.state != "done")).scalar_one()
    return int(n)


def work_loop(store: Store, provider_for: Callable[[str], Provider], settings: Settings, *,
              run_id: str | None = None, lease_s: float = DEFAULT_LEASE_S,
              idle_exit_s: float = 5.0, poll_s: float = 0.5,
              policy: RoutingPolicy | None = None, owner: str | None = None,
              stop_when_run_done: bool = False) -> GradingStats:
    """Claim, grade, store, repeat; stop after `idle_exit_s` with nothing to claim.

    One event loop for the worker's life: up to `concurrency` items are graded at once and
    about as many more are claimed ahead, so the pipe never drains between claims.
    """
    worker = _Worker(store, provider_for, settings, lease_s=lease_s,
                     policy=policy or RoutingPolicy(), owner=owner or worker_name())
    return asyncio.run(worker.run(run_id, idle_exit_s, poll_s, stop_when_run_done))


class _Worker:
    def __init__(self, store: Store, provider_for: Callable[[str], Provider],
                 settings: Settings, *, lease_s: float, policy: RoutingPolicy,
                 owner: str) -> None:
        self.store, self.settings, self.policy, self.owner = store, settings, policy, owner
        self.provider_for = provider_for
        self.lease_s = lease_s
        self.stats = GradingStats()
        self.prompts: dict[str, Any] = {}
        self.bounded: dict[str, Provider] = {}
        self.slots = asyncio.Semaphore(settings.concurrency)

    async def run(self, run_id: str | None, idle_exit_s: float, poll_s: float,
                  stop_when_run_done: bool) -> GradingStats:
        running: set[asyncio.Task[None]] = set()
        ahead = self.settings.concurrency * 2
        idle_since: float | None = None
        try:
            while True:
                want = ahead - len(running)
                claimed = claim(self.store, self.owner, want, run_id=run_id,
                                lease_s=self.lease_s) if want > 0 else []
                for c in claimed:
                    task = asyncio.create_task(self._one(c))
                    running.add(task)
                    task.add_done_callback(running.discard)
                if claimed:
                    idle_since = None
                if len(running) >= ahead or (running and not claimed):
                    await asyncio.wait(running, timeout=poll_s,
                                       return_when=asyncio.FIRST_COMPLETED)
                    continue
                if running:
                    await asyncio.sleep(0)
                    continue
                if stop_when_run_done and run_id is not None and \
                        outstanding(self.store, run_id) == 0:
                    break
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= idle_exit_s:
                    break
                await asyncio.sleep(poll_s)
        finally:
            if running:
                await asyncio.gather(*running, return_exceptions=True)
            for provider in self.bounded.values():
                await provider.aclose()
        return self.stats

    def _provider(self, run_id: str) -> Provider:
        if run_id not in self.bounded:
            from judge.suite.pipeline import SharedBound

            # the slots bound requests in flight; this shares the rate limit across items
            self.bounded[run_id] = SharedBound(self.provider_for(run_id),
                                               self.settings.concurrency, self.settings.rpm)
        return self.bounded[run_id]

    async def _one(self, c: Claimed) -> None:
        async with self.slots:
            if c.rubric not in self.prompts:
                self.prompts[c.rubric] = load_prompt(c.rubric)
            data = self.store.get_item(c.item_id)
            if data is not None and not _has_verdict(self.store, c.run_id, c.item_id):
                vetoed = {c.item_id.rpartition("#")[0]} if c.vetoed else set()
                verdicts = await grade_items(
                    [Item.from_dict(data)], self.prompts[c.rubric], self._provider(c.run_id),
                    self.store.calls, params=self.settings.model_params(), concurrency=1,
                    rpm=None, retries=self.settings.retries, stats=self.stats,
                    redaction=self.settings.redaction())
                self.store.save_verdicts(verdicts, c.run_id, vetoed_traces=vetoed,
                                         policy=self.policy)
            complete(self.store, self.owner, [c])


class RunProviders:
    """One provider per run, built from the model spec stored on the run."""

    def __init__(self, store: Store, settings: Settings, fixed: Provider | None = None) -> None:
        self.store, self.settings, self.fixed = store, settings, fixed
        self._by_run: dict[str, Provider] = {}

    def __call__(self, run_id: str) -> Provider:
        if self.fixed is not None:
            return self.fixed
        if run_id not in self._by_run:
            from judge.providers.registry import default_model_spec, make_provider

            run = self.store.get_run(run_id) or {}
            spec = (run.get("config") or {}).get("model") or default_model_spec(self.settings)
            self._by_run[run_id] = make_provider(spec, self.settings)
        return self._by_run[run_id]
