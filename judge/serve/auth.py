"""Who is asking, and did they mean to: sign-in by token, and CSRF tokens for every form.

Sign-in: an annotator pastes the token `judge serve tokens add NAME` printed; that starts a
session (judge.store.annotators): the browser keeps the session's random secret, never the
token, in an HttpOnly, SameSite=Strict cookie, and the store checks its SHA-256 on every
request (one indexed read). Signing out ends the session in the store, so the cookie is
worthless from then on, even if it was copied; revoking the token ends its sessions too. No
page, read or write, is served without a live session.

CSRF: a *signed double-submit* token (OWASP's recommended variant), written here rather than
taken from a library because it is a dozen lines and binds the token to the signed-in
session, which the double-submit middlewares for Starlette (asgi-csrf, starlette-csrf) do
not: a random nonce lives in its own SameSite=Strict cookie, and each form carries
`nonce.HMAC(key, nonce | session)`, where session is the hash of the session cookie (empty
before sign-in). A forged form lacks the nonce (another origin cannot read the cookie) and
a planted cookie lacks the HMAC. The key is random per process unless JUDGE_SERVE_SECRET is
set (several processes behind one address). Requests that carry an Origin header naming
an origin must name the server's own.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from starlette.requests import Request

SESSION_COOKIE = "judge_session"
CSRF_COOKIE = "judge_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"


class Csrf:
    def __init__(self, key: bytes | None = None) -> None:
        env = os.environ.get("JUDGE_SERVE_SECRET")
        self._key = key or (env.encode() if env else secrets.token_bytes(32))

    @staticmethod
    def nonce(request: Request) -> tuple[str, bool]:
        """The request's CSRF nonce, and whether it is new (to be set as a cookie)."""
        have = request.cookies.get(CSRF_COOKIE, "")
        if 20 <= len(have) <= 100 and have.replace("-", "").replace("_", "").isalnum():
            return have, False
        return secrets.token_urlsafe(24), True

    def token(self, nonce: str, session: str) -> str:
        return f"{nonce}.{self._mac(nonce, session)}"

    def valid(self, request: Request, sent: str | None, session: str) -> bool:
        if not sent or not _same_origin(request):
            return False
        nonce, _, mac = sent.partition(".")
        cookie = request.cookies.get(CSRF_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(_b(nonce), _b(cookie)) and \
            hmac.compare_digest(_b(mac), _b(self._mac(nonce, session)))

    def _mac(self, nonce: str, session: str) -> str:
        return hmac.new(self._key, _b(f"{nonce}|{session}"), hashlib.sha256).hexdigest()


def _b(text: str) -> bytes:
    """Bytes for comparing and hashing any text a client sent (lone surrogates too)."""
    return text.encode("utf-8", "surrogatepass")


def session_id(request: Request) -> str:
    """What CSRF tokens are bound to: the hash of the session cookie ("" when none)."""
    token = request.cookies.get(SESSION_COOKIE, "")
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest() if token else ""


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        # no Origin (older clients), or "null": what browsers send on a form POST from a
        # page served with Referrer-Policy: no-referrer. The HMAC alone decides.
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")
