"""The review queue: where people's time goes. Safety-critical items first, then the judge's
lowest confidence. A claim is a lease that expires (judge.store.lease); two annotators never
hold the same item. An item picked for double labelling stays in the queue until two distinct
annotators have labelled it; nobody is offered an item they already labelled.

What enters the queue, and why, is decided by the router (judge.pipeline.route); the store
writes the `ReviewRequest`s it is given beside the verdicts (`Store.save_verdicts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.elements import BindParameter

from judge.errors import InputError
from judge.store.db import as_utc, bulk_insert, store_errors, utcnow
from judge.store.lease import Leases, LeaseTable
from judge.store.records import REVIEW_LEASE_S, ReviewRequest
from judge.store.tables import LabelRow, QueueRow

Q: Any = QueueRow.__table__
L: Any = LabelRow.__table__

DEFAULT_LEASE_S = REVIEW_LEASE_S
STATES = ("open", "claimed", "done")
#: the sort key of the first entry `ReviewQueue.serve_first` puts at the front
FRONT = -2.0

LEASES = LeaseTable(name="review_queue", key="item_id", free="open", held="claimed",
                    owner="claimed_by",
                    order="q.safety_critical DESC, q.sort_confidence ASC, q.item_id ASC")


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


def enqueue(conn: Connection, requests: Sequence[ReviewRequest], *, run_id: str | None = None,
            now: datetime | None = None) -> None:
    """Add entries in the caller's transaction; an item already queued (or already reviewed)
    keeps its entry."""
    when = now or utcnow()
    bulk_insert(conn, Q, [{
        "item_id": r.item_id, "rubric": r.rubric, "run_id": run_id, "verdict_id": None,
        "reason": r.reason, "safety_critical": r.safety_critical, "confidence": r.confidence,
        "sort_confidence": 0.0 if r.confidence is None else float(r.confidence),
        "state": "open", "required": r.required, "n_labelled": 0, "claimed_by": None,
        "lease_expires_at": None, "created_at": when, "done_at": None} for r in requests])


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


class ReviewQueue:
    """The review queue of one database (`Store.queue`)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self._leases = Leases(engine, url, LEASES)

    # -- claiming -----------------------------------------------------------------------
    def claim(self, annotator: str, *, lease_s: float = DEFAULT_LEASE_S,
              rubric: str | None = None, exclude: Sequence[str] = ()) -> QueueEntry | None:
        """Lease the next item for `annotator`, or None when nothing is left for them."""
        if not annotator:
            raise InputError("an annotator name is required", field="annotator")
        filters = ["NOT EXISTS (SELECT 1 FROM labels l WHERE l.item_id = q.item_id "
                   "AND l.annotator = :owner)"]
        params: dict[str, Any] = {}
        binds: list[BindParameter[Any]] = []
        if rubric:
            filters.append("q.rubric = :rubric")
            params["rubric"] = rubric
        if exclude:
            filters.append("q.item_id NOT IN :exclude")
            params["exclude"] = list(exclude)
            binds.append(bindparam("exclude", expanding=True))
        rows = self._leases.claim(annotator, lease_s=lease_s, where=" AND ".join(filters),
                                  params=params, binds=binds, returning=list(Q.c))
        return QueueEntry.from_row(rows[0]) if rows else None

    def reclaim(self, item_id: str, annotator: str, *,
                lease_s: float = DEFAULT_LEASE_S) -> QueueEntry | None:
        """Take back an item this annotator just labelled (undo) if nobody else holds it."""
        row = self._leases.take(item_id, annotator, lease_s=lease_s, returning=list(Q.c))
        return QueueEntry.from_row(row) if row is not None else None

    def renew(self, item_id: str, annotator: str, *, lease_s: float = DEFAULT_LEASE_S) -> bool:
        return self._leases.renew(item_id, annotator, lease_s=lease_s)

    def release(self, item_id: str, annotator: str | None = None) -> bool:
        """Give a claimed item back (only the holder's claim when `annotator` is given)."""
        return self._leases.release(item_id, annotator)

    def release_expired(self) -> int:
        return self._leases.release_expired()

    # -- priorities ---------------------------------------------------------------------
    def serve_first(self, requests: Sequence[ReviewRequest]) -> int:
        """Put these items at the front of the queue, in the order given (after open
        safety-critical items, which always come first): an item not queued yet is added
        with its request's reason; a queued one keeps its entry and reason and moves up.
        Items already done (labelled by enough annotators) stay as they are. Returns how many
        items are now at the front.

        The front is the sort key's range [-2, -1) (every other entry sorts by a confidence
        in [0, 1]); the entry's `confidence` column keeps the verdict's own value. One
        transaction."""
        if not requests:
            return 0
        ids = [r.item_id for r in requests]
        if len(set(ids)) != len(ids):
            raise InputError("an item is named twice", field="item_id")
        now = utcnow()
        with store_errors(self._url), self._engine.begin() as conn:
            state: dict[str, str] = {}
            for i in range(0, len(ids), 500):
                state.update({iid: st for iid, st in conn.execute(
                    select(Q.c.item_id, Q.c.state).where(Q.c.item_id.in_(ids[i:i + 500])))})
            enqueue(conn, [r for r in requests if r.item_id not in state], now=now)
            front = [{"b_item": r.item_id, "b_key": FRONT + rank / len(requests)}
                     for rank, r in enumerate(requests) if state.get(r.item_id) != "done"]
            if front:
                conn.execute(update(Q).where(Q.c.item_id == bindparam("b_item"))
                             .values(sort_confidence=bindparam("b_key")), front)
        return len(front)

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

    def held_by(self, annotator: str) -> QueueEntry | None:
        """The item `annotator` holds a live claim on (the oldest lease first), or None."""
        stmt = select(Q).where(Q.c.state == "claimed", Q.c.claimed_by == annotator,
                               Q.c.lease_expires_at > utcnow()).order_by(
            Q.c.lease_expires_at.asc(), Q.c.item_id.asc()).limit(1)
        with store_errors(self._url), self._read() as conn:
            row = conn.execute(stmt).mappings().first()
        return QueueEntry.from_row(row) if row is not None else None

    def pending_by_rubric(self) -> dict[str, dict[str, int]]:
        """Entries not done, by rubric and reason: {rubric: {reason: n}} (rubric "" if
        none)."""
        out: dict[str, dict[str, int]] = {}
        stmt = (select(Q.c.rubric, Q.c.reason, func.count()).where(Q.c.state != "done")
                .group_by(Q.c.rubric, Q.c.reason).order_by(Q.c.rubric, Q.c.reason))
        with store_errors(self._url), self._read() as conn:
            for rubric, reason, n in conn.execute(stmt):
                out.setdefault(rubric or "", {})[reason] = int(n)
        return out

    def remaining_for(self, annotator: str) -> int:
        """Open or claimed-by-them items this annotator has not labelled yet."""
        stmt = text(
            "SELECT count(*) FROM review_queue q WHERE (q.state = 'open' OR "
            "(q.state = 'claimed' AND q.claimed_by = :a)) AND NOT EXISTS (SELECT 1 FROM "
            "labels l WHERE l.item_id = q.item_id AND l.annotator = :a)")
        with store_errors(self._url), self._read() as conn:
            return int(conn.execute(stmt, {"a": annotator}).scalar_one())

    def stats(self, rubric: str | None = None) -> dict[str, Any]:
        """Counts by state and by reason, safety-critical pending, double-labelling progress
        (of one rubric's entries when `rubric` is given)."""
        def count(*cond: Any) -> int:
            stmt = select(func.count()).select_from(Q).where(*scope, *cond)
            return int(conn.execute(stmt).scalar_one())

        scope = [Q.c.rubric == rubric] if rubric is not None else []
        with store_errors(self._url), self._read() as conn:
            by_state = {s: 0 for s in STATES}
            for s, n in conn.execute(select(Q.c.state, func.count()).where(*scope)
                                     .group_by(Q.c.state)):
                by_state[s] = int(n)
            by_reason = {r: int(n) for r, n in conn.execute(
                select(Q.c.reason, func.count()).where(*scope).group_by(Q.c.reason)
                .order_by(Q.c.reason))}
            pending = {r: int(n) for r, n in conn.execute(
                select(Q.c.reason, func.count()).where(*scope, Q.c.state != "done")
                .group_by(Q.c.reason).order_by(Q.c.reason))}
            safety = count(Q.c.state != "done", Q.c.safety_critical.is_(True))
            double = count(Q.c.required > 1)
            double_done = count(Q.c.required > 1, Q.c.state == "done")
        return {"total": sum(by_state.values()), "by_state": by_state, "by_reason": by_reason,
                "pending_by_reason": pending, "safety_critical_pending": safety,
                "double_labelled": {"items": double, "done": double_done}}

    def _read(self) -> Connection:
        return self._engine.connect().execution_options(judge_read=True)
