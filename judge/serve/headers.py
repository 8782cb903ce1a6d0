"""Security headers on every response, and the server time each request took.

Pages load their script and style from /static only (CSP without inline script or style);
the two report pages embed the reports' own inline <style> and base64 plots, and run no
script at all. Nothing may frame a page, no Referer leaves, pages are not cached.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
              "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")

_COMMON: list[tuple[bytes, bytes]] = [
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


class SecurityHeaders:
    """ASGI middleware: the headers above (a response that set its own CSP keeps it) and
    `Server-Timing: app;dur=<ms>` from request to response start."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        static = scope.get("path", "").startswith("/static/")

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])]
                names = {k.lower() for k, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", PAGE_CSP.encode()))
                headers += [h for h in _COMMON if h[0] not in names]
                if not static and b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
                ms = (time.perf_counter() - start) * 1000
                headers.append((b"server-timing", f"app;dur={ms:.2f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, wrapped)
