"""Leases on queue rows: the one implementation behind the review queue and grading work.

A row is *free* (waiting), *held* (leased to an owner until `lease_expires_at`) or in some
other state the queue itself manages (e.g. done). Claiming picks the first free rows in the
queue's order and leases them in one statement:

- PostgreSQL: `WITH pick AS (SELECT … ORDER BY … LIMIT n FOR UPDATE SKIP LOCKED) UPDATE …
  FROM pick RETURNING …` in autocommit — one round trip; concurrent claimers skip each
  other's rows instead of waiting on them.
- SQLite: one conditional `UPDATE … WHERE state = free AND key IN (SELECT … LIMIT n)
  RETURNING …` inside `BEGIN IMMEDIATE` (SQLite has one writer at a time, so the pick and
  the update cannot interleave with another claim).

Expired leases go back to free rows at most every `expire_every_s` per process, and whenever
a claim finds nothing, so a claim stays one statement and a dead owner's rows come back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.types import DateTime

from judge.store.db import store_errors, utcnow

EXPIRE_EVERY_S = 2.0


@dataclass(frozen=True)
class LeaseTable:
    """How one queue table keeps its leases. `order` is an ORDER BY over the alias `q`;
    `on_claim` an extra SET clause applied to every claimed row."""

    name: str
    key: str
    free: str
    held: str
    owner: str
    order: str
    on_claim: str = ""


class Leases:
    """Claim, renew, release and expire the leases of one table."""

    def __init__(self, engine: Engine, url: str, table: LeaseTable, *,
                 expire_every_s: float = EXPIRE_EVERY_S) -> None:
        self._engine = engine
        self._url = url
        self.table = table
        self._expire_every_s = expire_every_s
        self._last_expire: datetime | None = None
        t = table
        held = f"state = '{t.held}', {t.owner} = :owner, lease_expires_at = :exp"
        self._set = f"{held}, {t.on_claim}" if t.on_claim else held
        self._expire_sql = text(
            f"UPDATE {t.name} SET state = '{t.free}', {t.owner} = NULL, "
            f"lease_expires_at = NULL WHERE state = '{t.held}' AND lease_expires_at < :now"
        ).bindparams(bindparam("now", type_=DateTime(timezone=True)))

    def claim(self, owner: str, *, lease_s: float, n: int = 1, where: str = "",
              params: Mapping[str, Any] | None = None,
              binds: Sequence[BindParameter[Any]] = (),
              returning: Sequence[Any] = ()) -> list[RowMapping]:
        """Lease up to `n` free rows (in the table's order) to `owner`. `where` narrows the
        pick (over alias `q`; its values in `params`, typed or expanding ones in `binds`);
        `returning` are the table's columns to return, typed so values come back converted."""
        t = self.table
        now = utcnow()
        values: dict[str, Any] = {**(params or {}), "owner": owner, "n": n,
                                  "exp": now + timedelta(seconds=lease_s)}
        cond = f"q.state = '{t.free}'" + (f" AND {where}" if where else "")
        names = [c.name for c in returning] or [t.key]
        if self._engine.dialect.name == "postgresql":
            sql = (f"WITH pick AS (SELECT q.{t.key} FROM {t.name} q WHERE {cond} "
                   f"ORDER BY {t.order} LIMIT :n FOR UPDATE SKIP LOCKED) "
                   f"UPDATE {t.name} SET {self._set} FROM pick "
                   f"WHERE {t.name}.{t.key} = pick.{t.key} RETURNING "
                   + ", ".join(f"{t.name}.{c}" for c in names))
            options: dict[str, Any] = {"isolation_level": "AUTOCOMMIT"}
        else:
            sql = (f"UPDATE {t.name} SET {self._set} WHERE state = '{t.free}' AND {t.key} IN "
                   f"(SELECT q.{t.key} FROM {t.name} q WHERE {cond} ORDER BY {t.order} "
                   f"LIMIT :n) RETURNING {', '.join(names)}")
            options = {}
        stmt = text(sql).bindparams(bindparam("exp", type_=DateTime(timezone=True)), *binds)
        if returning:
            stmt = stmt.columns(*returning)  # type: ignore[assignment]
        with store_errors(self._url), self._engine.connect().execution_options(
                **options) as conn:
            due = self._expire_due(now)
            if due:
                self._expire(conn, now)
            rows = list(conn.execute(stmt, values).mappings())
            if not rows and not due:  # maybe only expired leases are left
                self._expire(conn, now)
                rows = list(conn.execute(stmt, values).mappings())
            if not options:
                conn.commit()
        return rows

    def take(self, key: Any, owner: str, *, lease_s: float,
             returning: Sequence[Any] = ()) -> RowMapping | None:
        """Lease one row whatever its state, unless another owner holds it (an undo)."""
        t = self.table
        now = utcnow()
        cols = ", ".join(c.name for c in returning) or t.key
        stmt = text(f"UPDATE {t.name} SET {self._set} WHERE {t.key} = :key AND "
                    f"(state <> '{t.held}' OR {t.owner} = :owner) RETURNING {cols}").bindparams(
            bindparam("exp", type_=DateTime(timezone=True)))
        if returning:
            stmt = stmt.columns(*returning)  # type: ignore[assignment]
        with store_errors(self._url), self._engine.begin() as conn:
            self._expire(conn, now)
            return conn.execute(stmt, {"key": key, "owner": owner,
                                       "exp": now + timedelta(seconds=lease_s)}
                                ).mappings().first()

    def renew(self, key: Any, owner: str, *, lease_s: float) -> bool:
        """Extend `owner`'s lease on a row it still holds."""
        t = self.table
        stmt = text(f"UPDATE {t.name} SET lease_expires_at = :exp WHERE {t.key} = :key AND "
                    f"state = '{t.held}' AND {t.owner} = :owner").bindparams(
            bindparam("exp", type_=DateTime(timezone=True)))
        with store_errors(self._url), self._engine.begin() as conn:
            res = conn.execute(stmt, {"key": key, "owner": owner,
                                      "exp": utcnow() + timedelta(seconds=lease_s)})
            return bool(res.rowcount)

    def release(self, key: Any, owner: str | None = None) -> bool:
        """Give a held row back (only `owner`'s lease when given)."""
        t = self.table
        sql = (f"UPDATE {t.name} SET state = '{t.free}', {t.owner} = NULL, "
               f"lease_expires_at = NULL WHERE {t.key} = :key AND state = '{t.held}'")
        values: dict[str, Any] = {"key": key}
        if owner:
            sql += f" AND {t.owner} = :owner"
            values["owner"] = owner
        with store_errors(self._url), self._engine.begin() as conn:
            return bool(conn.execute(text(sql), values).rowcount)

    def release_expired(self) -> int:
        """Free every row whose lease has expired; how many."""
        with store_errors(self._url), self._engine.begin() as conn:
            return self._expire(conn, utcnow())

    def _expire_due(self, now: datetime) -> bool:
        last = self._last_expire
        if last is None or (now - last).total_seconds() >= self._expire_every_s:
            self._last_expire = now
            return True
        return False

    def _expire(self, conn: Connection, now: datetime) -> int:
        return int(conn.execute(self._expire_sql, {"now": now}).rowcount or 0)
