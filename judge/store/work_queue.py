"""Grading work of a distributed run, shared by `judge worker` processes through the database.

One row per item of the run (unique per (run_id, item_id)); workers lease rows in chunks
(judge.store.lease), grade them, store the verdicts and mark the rows done. A killed worker's
lease expires and another worker takes its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine

from judge.store.db import insert_ignore, store_errors, utcnow
from judge.store.lease import Leases, LeaseTable
from judge.store.records import WORK_LEASE_S
from judge.store.tables import WorkRow

W: Any = WorkRow.__table__

DEFAULT_LEASE_S = WORK_LEASE_S
_CHUNK = 1000

LEASES = LeaseTable(name="grading_work", key="id", free="queued", held="leased",
                    owner="lease_owner", order="q.id", on_claim="attempts = attempts + 1")


@dataclass(frozen=True)
class WorkItem:
    """One leased piece of grading work: an item of a run, and whether its trace was vetoed."""

    run_id: str
    item_id: str
    rubric: str
    vetoed: bool


class WorkQueue:
    """The grading-work queue of one database (`Store.work`)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self._leases = Leases(engine, url, LEASES)

    def enqueue(self, run_id: str, work: Sequence[tuple[str, str, bool]]) -> int:
        """Queue (item id, rubric, vetoed) rows of a run; rows already queued are kept."""
        now = utcnow()
        rows = [{"run_id": run_id, "item_id": item_id, "rubric": rubric, "state": "queued",
                 "vetoed": vetoed, "lease_owner": None, "lease_expires_at": None,
                 "attempts": 0, "updated_at": now} for item_id, rubric, vetoed in work]
        with store_errors(self._url), self._engine.begin() as conn:
            for i in range(0, len(rows), _CHUNK):
                conn.execute(insert_ignore(W, conn.dialect.name), rows[i:i + _CHUNK])
        return len(rows)

    def claim(self, owner: str, n: int, *, run_id: str | None = None,
              lease_s: float = DEFAULT_LEASE_S, exclude: Sequence[str] = ()) -> list[WorkItem]:
        """Lease up to `n` queued rows (or rows whose lease expired) to `owner`; only
        `run_id`'s when given, never those of the runs in `exclude`."""
        clauses: list[str] = []
        params: dict[str, Any] = {}
        if run_id is not None:
            clauses.append("q.run_id = :run")
            params["run"] = run_id
        if exclude:
            names = [f":ex{i}" for i in range(len(exclude))]
            clauses.append(f"q.run_id NOT IN ({', '.join(names)})")
            params.update({f"ex{i}": r for i, r in enumerate(exclude)})
        where = " AND ".join(clauses)
        rows = self._leases.claim(owner, lease_s=lease_s, n=n, where=where, params=params,
                                  returning=[W.c.run_id, W.c.item_id, W.c.rubric, W.c.vetoed])
        return [WorkItem(r["run_id"], r["item_id"], r["rubric"], bool(r["vetoed"]))
                for r in rows]

    def complete(self, done: Sequence[WorkItem]) -> None:
        """Mark leased rows done (the owner stays recorded: who graded it)."""
        if not done:
            return
        with store_errors(self._url), self._engine.begin() as conn:
            for run_id in {w.run_id for w in done}:
                ids = [w.item_id for w in done if w.run_id == run_id]
                conn.execute(update(W).where(W.c.run_id == run_id, W.c.item_id.in_(ids))
                             .values(state="done", updated_at=utcnow()))

    def release(self, items: Sequence[WorkItem], owner: str) -> None:
        """Give `owner`'s leases on these rows back to the queue, now (a worker that cannot
        grade them must not hold them until the lease expires)."""
        if not items:
            return
        with store_errors(self._url), self._engine.begin() as conn:
            for run_id in {w.run_id for w in items}:
                ids = [w.item_id for w in items if w.run_id == run_id]
                conn.execute(update(W).where(W.c.run_id == run_id, W.c.item_id.in_(ids),
                                             W.c.state == "leased", W.c.lease_owner == owner)
                             .values(state="queued", lease_owner=None, lease_expires_at=None,
                                     updated_at=utcnow()))

    def outstanding(self, run_id: str) -> int:
        """Rows of the run not done yet (queued or leased)."""
        with store_errors(self._url), self._engine.connect().execution_options(
                judge_read=True) as conn:
            return int(conn.execute(select(func.count()).select_from(W).where(
                W.c.run_id == run_id, W.c.state != "done")).scalar_one())
