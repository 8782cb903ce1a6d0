"""Read a run's stored verdicts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from judge.formats import Verdict
from judge.store import tables
from judge.store.db import store_errors
from judge.store.repo import Store
from judge.store.rows import row_verdict

T_VERDICT: Any = tables.VerdictRow.__table__  # type: ignore[attr-defined]


def run_verdicts(store: Store, run_id: str) -> list[Verdict]:
    """Every verdict stored for `run_id`, in item order."""
    with store_errors(store.url), store.engine.connect() as conn:
        rows = conn.execute(select(T_VERDICT).where(T_VERDICT.c.run_id == run_id)
                            .order_by(T_VERDICT.c.item_id)).mappings().all()
    return [row_verdict(r) for r in rows]
