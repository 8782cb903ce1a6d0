"""The review queue: where people's time goes. Safety-critical items first, then the judge's
lowest confidence. A claim is a lease that expires; two annotators never hold the same item:
PostgreSQL picks with `SELECT … FOR UPDATE SKIP LOCKED`, SQLite with one atomic conditional
UPDATE (SQLite serialises writers, and `BEGIN IMMEDIATE` takes the write lock up front).
An item picked for double labelling stays in the queue until two distinct annotators have
labelled it; nobody is offered an item they already labelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.types import DateTime

from judge.errors import InputError
from judge.store.db import as_utc, insert_ignore, store_errors, utcnow
from judge.store.tables import LabelRow, QueueRow

Q: Any = QueueRow.__table__  # type: ignore[attr-defined]
L: Any = LabelRow.__table__  # type: ignore[attr-defined]

DEFAULT_LEASE_S = 900.0
EXPIRE_EVERY_S = 2.0
STATES = ("open", "claimed", "done")


@dataclass(frozen=True)
class QueueEntry:
    item_id: str
    rubric: str | None
    reason: str
    safety_critical: bool
    confidence: float | None
    state: str
    required: int
    n_labelled: int
    claimed_by: str | None
    lease_expires_at: datetime | None
    run_id: str | None
    verdict_id: int | None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> QueueEntry:
        return cls(item_id=row["item_id"], rubric=row["rubric"], reason=row["reason"],
                   safety_critical=bool(row["safety_critical"]), confidence=row["confidence"],
                   state=row["state"], required=row["required"], n_labelled=row["n_labelled"],
                   claimed_by=row["claimed_by"], lease_expires_at=as_utc(row["lease_expires_at"]),
                   run_id=row["run_id"], verdict_id=row["verdict_id"])

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["lease_expires_at"] = (self.lease_expires_at.isoformat()
                                 if self.lease_expires_at else None)
        return d


def queue_row(item_id: str, *, reason: str, rubric: str | None, safety_critical: bool,
              confidence: float | None, required: int = 1, run_id: str | None = None,
              verdict_id: int | None = None, now: datetime | None = None) -> dict[str, Any]:
    return {"item_id": item_id, "rubric": rubric, "run_id": run_id, "verdict_id": verdict_id,
            "reason": reason, "safety_critical": safety_critical, "confidence": confidence,
            "sort_confidence": 0.0 if confidence is None else float(confidence),
            "state": "open", "required": required, "n_labelled": 0, "claimed_by": None,
            "lease_expires_at": None, "created_at": now or utcnow(), "done_at": None}


def enqueue_rows(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Add entries; an item already queued (or already reviewed) keeps its entry."""
    if rows:
        conn.execute(insert_ignore(Q, conn.dialect.name), list(rows))


def record_label(conn: Connection, item_id: str, annotator: str) -> None:
    """After a label: count the item's distinct annotators; done when enough, else free it."""
    # Lock the entry first (PostgreSQL): two labels of one item committing at once then
    # count each other, so a double-labelled item is closed exactly when its second lands.
    entry = conn.execute(select(Q.c.required, Q.c.state, Q.c.claimed_by)
                         .where(Q.c.item_id == item_id).with_for_update()).first()
    if entry is None:
        return
    n = conn.execute(select(func.count(func.distinct(L.c.annotator)))
                     .where(L.c.item_id == item_id)).scalar_one()
    now = utcnow()
    if n >= entry.required:
        conn.execute(update(Q).where(Q.c.item_id == item_id).values(
            state="done", n_labelled=n, claimed_by=None, lease_expires_at=None, done_at=now))
    elif entry.state == "claimed" and entry.claimed_by == annotator:
        conn.execute(update(Q).where(Q.c.item_id == item_id).values(
            state="open", n_labelled=n, claimed_by=None, lease_expires_at=None))
    else:
        conn.execute(update(Q).where(Q.c.item_id == item_id).values(n_labelled=n))


_ORDER = "q.safety_critical DESC, q.sort_confidence ASC, q.item_id ASC"


class ReviewQueue:
    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self._last_expire: datetime | None = None

    # -- claiming -----------------------------------------------------------------------
    def claim(self, annotator: str, *, lease_s: float = DEFAULT_LEASE_S,
              rubric: str | None = None, exclude: Sequence[str] = ()) -> QueueEntry | None:
        """Lease the next item for `annotator`, or None when nothing is left for them."""
        if not annotator:
            raise InputError("an annotator name is required", field="annotator")
        now = utcnow()
        params: dict[str, Any] = {"a": annotator, "exp": now + timedelta(seconds=lease_s)}
        filters = ["q.state = 'open'",
                   "NOT EXISTS (SELECT 1 FROM labels l WHERE l.item_id = q.item_id "
                   "AND l.annotator = :a)"]
        if rubric:
            filters.append("q.rubric = :rubric")
            params["rubric"] = rubric
        binds = [bindparam("exp", type_=DateTime(timezone=True))]
        if exclude:
            filters.append("q.item_id NOT IN :exclude")
            params["exclude"] = list(exclude)
            binds.append(bindparam("exclude", expanding=True))
        where = " AND ".join(filters)
        if self._engine.dialect.name == "postgresql":
            # One statement, so it runs in autocommit: one round trip per claim.
            sql = (f"WITH pick AS (SELECT q.item_id FROM review_queue q WHERE {where} "
                   f"ORDER BY {_ORDER} LIMIT 1 FOR UPDATE SKIP LOCKED) "
                   "UPDATE review_queue SET state = 'claimed', claimed_by = :a, "
                   "lease_expires_at = :exp FROM pick "
                   "WHERE review_queue.item_id = pick.item_id RETURNING review_queue.*")
            conn_opts: dict[str, Any] = {"isolation_level": "AUTOCOMMIT"}
        else:
            sql = ("UPDATE review_queue SET state = 'claimed', claimed_by = :a, "
                   "lease_expires_at = :exp WHERE state = 'open' AND item_id = "
                   f"(SELECT q.item_id FROM review_queue q WHERE {where} "
                   f"ORDER BY {_ORDER} LIMIT 1) RETURNING *")
            conn_opts = {}
        stmt = text(sql).bindparams(*binds).columns(*Q.c)
        with store_errors(self._url), self._engine.connect().execution_options(
                **conn_opts) as conn:
            expired_now = self._expire_due(now)
            if expired_now:
                self._expire(conn, now)
            row = conn.execute(stmt, params).mappings().first()
            if row is None and not expired_now:  # maybe only expired leases are left
                self._expire(conn, now)
                row = conn.execute(stmt, params).mappings().first()
            if not conn_opts:
                conn.commit()
            return QueueEntry.from_row(row) if row is not None else None

    def _expire_due(self, now: datetime) -> bool:
        """Expired leases are returned to the queue at most every EXPIRE_EVERY_S per process
        (and whenever nothing else is left), keeping claims to one round trip."""
        if self._last_expire is None or (now - self._last_expire).total_seconds() \
                >= EXPIRE_EVERY_S:
            self._last_expire = now
            return True
        return False

    def reclaim(self, item_id: str, annotator: str, *,
                lease_s: float = DEFAULT_LEASE_S) -> QueueEntry | None:
        """Take back an item this annotator just labelled (undo) if nobody else holds it."""
        now = utcnow()
        with store_errors(self._url), self._engine.begin() as conn:
            self._expire(conn, now)
            res = conn.execute(
                update(Q).where(Q.c.item_id == item_id)
                .where((Q.c.state != "claimed") | (Q.c.claimed_by == annotator))
                .values(state="claimed", claimed_by=annotator,
                        lease_expires_at=now + timedelta(seconds=lease_s))
                .returning(*Q.c)).mappings().first()
            return QueueEntry.from_row(res) if res is not None else None

    def renew(self, item_id: str, annotator: str, *, lease_s: float = DEFAULT_LEASE_S) -> bool:
        now = utcnow()
        with store_errors(self._url), self._engine.begin() as conn:
            res = conn.execute(update(Q).where(Q.c.item_id == item_id, Q.c.state == "claimed",
                                               Q.c.claimed_by == annotator)
                               .values(lease_expires_at=now + timedelta(seconds=lease_s)))
            return bool(res.rowcount)

    def release(self, item_id: str, annotator: str | None = None) -> bool:
        """Give a claimed item back (only the holder's claim when `annotator` is given)."""
        cond = [Q.c.item_id == item_id, Q.c.state == "claimed"]
        if annotator:
            cond.append(Q.c.claimed_by == annotator)
        with store_errors(self._url), self._engine.begin() as conn:
            res = conn.execute(update(Q).where(*cond).values(
                state="open", claimed_by=None, lease_expires_at=None))
            return bool(res.rowcount)

    def release_expired(self) -> int:
        with store_errors(self._url), self._engine.begin() as conn:
            return self._expire(conn, utcnow())

    @staticmethod
    def _expire(conn: Connection, now: datetime) -> int:
        res = conn.execute(update(Q).where(Q.c.state == "claimed", Q.c.lease_expires_at < now)
                           .values(state="open", claimed_by=None, lease_expires_at=None))
        return int(res.rowcount or 0)

    # -- reading ------------------------------------------------------------------------
    def entries(self, *, state: str | None = "open", rubric: str | None = None,
                limit: int | None = None) -> list[QueueEntry]:
        """Entries in claim order (safety-critical first, then lowest confidence)."""
        stmt = select(Q).order_by(Q.c.safety_critical.desc(), Q.c.sort_confidence.asc(),
                                  Q.c.item_id.asc())
        if state:
            stmt = stmt.where(Q.c.state == state)
        if rubric:
            stmt = stmt.where(Q.c.rubric == rubric)
        if limit:
            stmt = stmt.limit(limit)
        with store_errors(self._url), self._read() as conn:
            return [QueueEntry.from_row(r) for r in conn.execute(stmt).mappings()]

    def get(self, item_id: str) -> QueueEntry | None:
        with store_errors(self._url), self._read() as conn:
            row = conn.execute(select(Q).where(Q.c.item_id == item_id)).mappings().first()
        return QueueEntry.from_row(row) if row is not None else None

    def remaining_for(self, annotator: str) -> int:
        """Open or claimed-by-them items this annotator has not labelled yet."""
        stmt = text(
            "SELECT count(*) FROM review_queue q WHERE (q.state = 'open' OR "
            "(q.state = 'claimed' AND q.claimed_by = :a)) AND NOT EXISTS (SELECT 1 FROM "
            "labels l WHERE l.item_id = q.item_id AND l.annotator = :a)")
        with store_errors(self._url), self._read() as conn:
            return int(conn.execute(stmt, {"a": annotator}).scalar_one())

    def stats(self) -> dict[str, Any]:
        """Counts by state and by reason, safety-critical open, double-labelling progress."""
        with store_errors(self._url), self._read() as conn:
            by_state = {s: 0 for s in STATES}
            for s, n in conn.execute(select(Q.c.state, func.count()).group_by(Q.c.state)):
                by_state[s] = int(n)
            by_reason = {r: int(n) for r, n in conn.execute(
                select(Q.c.reason, func.count()).group_by(Q.c.reason).order_by(Q.c.reason))}
            open_reason = {r: int(n) for r, n in conn.execute(
                select(Q.c.reason, func.count()).where(Q.c.state != "done")
                .group_by(Q.c.reason).order_by(Q.c.reason))}
            safety_open = int(conn.execute(select(func.count()).select_from(Q).where(
                Q.c.state != "done", Q.c.safety_critical.is_(True))).scalar_one())
            double = int(conn.execute(select(func.count()).select_from(Q).where(
                Q.c.required > 1)).scalar_one())
            double_done = int(conn.execute(select(func.count()).select_from(Q).where(
                Q.c.required > 1, Q.c.state == "done")).scalar_one())
        return {"total": sum(by_state.values()), "by_state": by_state, "by_reason": by_reason,
                "pending_by_reason": open_reason, "safety_critical_pending": safety_open,
                "double_labelled": {"items": double, "done": double_done}}

    def _read(self) -> Connection:
        return self._engine.connect().execution_options(judge_read=True)
