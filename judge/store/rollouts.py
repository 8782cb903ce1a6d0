"""The looks of `judge canary` at staged rollouts (table `canary_stages`, migration 0010).

A rollout is named by the pipeline (`--rollout NAME`); each call of `judge canary` is one
look, numbered from 1, with the stage it was taken at, the metric and threshold, the decision
and the record printed for it. The store keeps what it is given: the decision is made
upstream (judge.compare.canary) from the looks this returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from judge.errors import StoreError
from judge.store.db import as_utc, store_errors, utcnow
from judge.store.tables import CanaryStageRow

T: Any = CanaryStageRow.__table__


@dataclass(frozen=True)
class Look:
    """One stored look at a rollout."""

    rollout: str
    look: int
    stage: str
    share: float | None
    metric: str
    threshold: float
    decision: str
    n_tasks: int
    n_success: int
    record: dict[str, Any]
    created_at: datetime


class Rollouts:
    """Rollouts' looks in one database (`Store.rollouts`)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url

    def looks(self, rollout: str) -> list[Look]:
        """Every look at `rollout`, oldest first (none: a new rollout)."""
        stmt = select(T).where(T.c.rollout == rollout).order_by(T.c.look)
        with store_errors(self._url), \
                self._engine.connect().execution_options(judge_read=True) as conn:
            rows = conn.execute(stmt).mappings().all()
        return [Look(r["rollout"], int(r["look"]), r["stage"], r["share"], r["metric"],
                     float(r["threshold"]), r["decision"], int(r["n_tasks"]),
                     int(r["n_success"]), dict(r["record"] or {}),
                     as_utc(r["created_at"]) or utcnow()) for r in rows]

    def add_look(self, rollout: str, *, stage: str, share: float | None, metric: str,
                 threshold: float, decision: str, n_tasks: int, n_success: int,
                 record: dict[str, Any], expected_look: int) -> int:
        """Store the next look of `rollout`, numbered `expected_look` (one more than the looks
        the decision was made from). If another call stored a look of the same rollout in
        between, nothing is stored: StoreError (the decision was made without it)."""
        row = {"rollout": rollout, "look": expected_look, "stage": stage, "share": share,
               "metric": metric, "threshold": threshold, "decision": decision,
               "n_tasks": n_tasks, "n_success": n_success, "record": record,
               "created_at": utcnow()}
        with store_errors(self._url):
            try:
                with self._engine.begin() as conn:
                    have = conn.execute(select(func.max(T.c.look))
                                        .where(T.c.rollout == rollout)).scalar()
                    if (have or 0) != expected_look - 1:
                        raise _Raced()
                    conn.execute(T.insert(), [row])
            except (_Raced, IntegrityError):
                raise StoreError(f"rollout {rollout!r}: another judge canary call stored a "
                                 "look while this one decided; call again (it will see that "
                                 "look)") from None
        return expected_look

    def names(self) -> list[str]:
        """Every rollout with a look, newest first."""
        stmt = (select(T.c.rollout, func.max(T.c.created_at).label("last"))
                .group_by(T.c.rollout).order_by(func.max(T.c.created_at).desc()))
        with store_errors(self._url), \
                self._engine.connect().execution_options(judge_read=True) as conn:
            return [r[0] for r in conn.execute(stmt)]


class _Raced(Exception):
    """Another look of the rollout was stored first."""
