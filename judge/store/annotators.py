"""Annotators of `judge serve`: their sign-in tokens and the verdicts they revealed.

A token is shown once, when it is made; the database keeps only its SHA-256 (a token is 256
random bits, so a fast hash is as good as a slow one and lets every request be checked with
one indexed read). Revoking a name revokes all its tokens; a revoked token signs nobody in.

Signing in with a token starts a *session*: a new random secret for the browser's cookie
(only its SHA-256 is stored, with the token it came from and when it expires). The cookie
never holds the token; ending a session (signing out) makes its secret worthless at once,
and revoking a token ends every session it started.

A reveal is recorded each time a person opens the judge's verdict of an item they labelled
(the verdict stays hidden until then, so agreement is measured blind).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.engine import Connection, Engine

from judge.errors import InputError
from judge.store.db import as_utc, store_errors, utcnow
from judge.store.tables import RevealRow, SessionRow, TokenRow

T: Any = TokenRow.__table__
R: Any = RevealRow.__table__
S: Any = SessionRow.__table__

TOKEN_PREFIX = "jdg_"
SESSION_PREFIX = "jss_"
#: how long a sign-in lasts unless the annotator signs out first
SESSION_S = 12 * 3600.0


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    annotator: str
    token_id: str  # the first 12 hex digits of the hash: names a token without revealing it
    created_at: datetime
    revoked_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"annotator": self.annotator, "token_id": self.token_id,
                "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


@dataclass(frozen=True)
class Reveal:
    item_id: str
    annotator: str
    verdict_id: int | None
    created_at: datetime


def _valid_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 100 or not name.isprintable():
        raise InputError("an annotator name is 1 to 100 printable characters",
                         field="annotator")
    return name


class Annotators:
    """Tokens and reveals of one database (`Store.annotators`)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url

    def add_token(self, annotator: str) -> str:
        """Make a new token for `annotator` and return it (the only time it is seen)."""
        name = _valid_name(annotator)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with store_errors(self._url), self._engine.begin() as conn:
            conn.execute(T.insert(), [{"token_hash": token_hash(token), "annotator": name,
                                       "created_at": utcnow(), "revoked_at": None}])
        return token

    def tokens(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        stmt = select(T).order_by(T.c.annotator, T.c.created_at)
        if not include_revoked:
            stmt = stmt.where(T.c.revoked_at.is_(None))
        with store_errors(self._url), self._read() as conn:
            return [TokenInfo(annotator=r["annotator"], token_id=r["token_hash"][:12],
                              created_at=as_utc(r["created_at"]) or utcnow(),
                              revoked_at=as_utc(r["revoked_at"]))
                    for r in conn.execute(stmt).mappings()]

    def revoke(self, annotator: str | None = None, *, token_id: str | None = None) -> int:
        """Revoke every live token of `annotator`, or the one whose id is `token_id`."""
        if (annotator is None) == (token_id is None):
            raise InputError("revoke an annotator's tokens or one token id", field="token")
        stmt = update(T).where(T.c.revoked_at.is_(None)).values(revoked_at=utcnow())
        if annotator is not None:
            stmt = stmt.where(T.c.annotator == annotator)
        else:
            tid = (token_id or "").lower()
            if len(tid) < 8 or any(c not in "0123456789abcdef" for c in tid):
                raise InputError("a token id is at least 8 hex digits (judge serve tokens "
                                 "list)", field="token")
            stmt = stmt.where(T.c.token_hash.like(f"{tid}%"))
        with store_errors(self._url), self._engine.begin() as conn:
            return int(conn.execute(stmt).rowcount or 0)

    def who(self, token: str) -> str | None:
        """The annotator a live token signs in, or None."""
        if not token or len(token) > 200:
            return None
        with store_errors(self._url), self._read() as conn:
            row = conn.execute(select(T.c.annotator).where(
                T.c.token_hash == token_hash(token), T.c.revoked_at.is_(None))).first()
        return str(row[0]) if row is not None else None

    # -- sessions -------------------------------------------------------------------------
    def start_session(self, token: str, *, lifetime_s: float = SESSION_S
                      ) -> tuple[str, str] | None:
        """Sign in with a live token: (the new session's secret, the annotator), or None.
        Sessions that ended or expired are cleared out on the way."""
        if not token or len(token) > 200:
            return None
        now = utcnow()
        secret = SESSION_PREFIX + secrets.token_urlsafe(32)
        with store_errors(self._url), self._engine.begin() as conn:
            row = conn.execute(select(T.c.annotator).where(
                T.c.token_hash == token_hash(token), T.c.revoked_at.is_(None))).first()
            if row is None:
                return None
            conn.execute(delete(S).where(or_(S.c.expires_at < now, S.c.ended_at.is_not(None))))
            conn.execute(S.insert(), [{
                "session_hash": token_hash(secret), "token_hash": token_hash(token),
                "annotator": row[0], "created_at": now,
                "expires_at": now + timedelta(seconds=lifetime_s), "ended_at": None}])
        return secret, str(row[0])

    def session(self, secret: str) -> str | None:
        """The annotator a live session is signed in as (its token not revoked), or None."""
        if not secret or len(secret) > 200:
            return None
        stmt = (select(S.c.annotator).select_from(S.join(T, T.c.token_hash == S.c.token_hash))
                .where(S.c.session_hash == token_hash(secret), S.c.ended_at.is_(None),
                       S.c.expires_at > utcnow(), T.c.revoked_at.is_(None)))
        with store_errors(self._url), self._read() as conn:
            row = conn.execute(stmt).first()
        return str(row[0]) if row is not None else None

    def end_session(self, secret: str) -> bool:
        """Sign a session out: its secret signs nobody in from now on."""
        if not secret or len(secret) > 200:
            return False
        stmt = (update(S).where(S.c.session_hash == token_hash(secret), S.c.ended_at.is_(None))
                .values(ended_at=utcnow()))
        with store_errors(self._url), self._engine.begin() as conn:
            return bool(conn.execute(stmt).rowcount)

    # -- reveals --------------------------------------------------------------------------
    def record_reveal(self, item_id: str, annotator: str, verdict_id: int | None) -> None:
        with store_errors(self._url), self._engine.begin() as conn:
            conn.execute(R.insert(), [{"item_id": item_id, "annotator": annotator,
                                       "verdict_id": verdict_id, "created_at": utcnow()}])

    def reveals(self, item_id: str | None = None,
                annotator: str | None = None) -> list[Reveal]:
        stmt = select(R).order_by(R.c.id)
        if item_id is not None:
            stmt = stmt.where(R.c.item_id == item_id)
        if annotator is not None:
            stmt = stmt.where(R.c.annotator == annotator)
        with store_errors(self._url), self._read() as conn:
            return [Reveal(item_id=r["item_id"], annotator=r["annotator"],
                           verdict_id=r["verdict_id"],
                           created_at=as_utc(r["created_at"]) or utcnow())
                    for r in conn.execute(stmt).mappings()]

    def count_reveals(self) -> int:
        with store_errors(self._url), self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(R)).scalar_one())

    def _read(self) -> Connection:
        return self._engine.connect().execution_options(judge_read=True)
