"""A tiny asyncio HTTP/1.1 server: keep-alive, Content-Length and chunked request bodies,
in-order responses per connection. Enough for SDK clients; not a general web server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

MAX_HEADER = 64 * 1024
MAX_BODY = 256 * 1024 * 1024

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
            413: "Payload Too Large", 422: "Unprocessable Entity", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout", 529: "Overloaded"}


@dataclass
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass
class HttpResponse:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    #: drop the connection instead of answering
    disconnect: bool = False

    def encode(self, keep_alive: bool) -> bytes:
        reason = _REASONS.get(self.status, "Status")
        lines = [f"HTTP/1.1 {self.status} {reason}",
                 f"Content-Type: {self.content_type}",
                 f"Content-Length: {len(self.body)}"]
        lines.extend(f"{k}: {v}" for k, v in self.headers.items())
        if not keep_alive:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


class _BadRequest(Exception):
    pass


class HttpProtocol(asyncio.Protocol):
    """One connection: parse requests as bytes arrive, answer them in order."""

    def __init__(self, handler: Handler, connections: set[HttpProtocol]) -> None:
        self._handler = handler
        self._connections = connections
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None
        self._last: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._transport = None
        for task in list(self._tasks):
            task.cancel()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        self._buf += data
        while not self._closing:
            try:
                parsed = self._parse_one()
            except _BadRequest as exc:
                self._reply_now(HttpResponse(400, str(exc).encode(), "text/plain"), False)
                return
            if parsed is None:
                return
            request, keep_alive = parsed
            task = asyncio.get_running_loop().create_task(
                self._answer(request, keep_alive, self._last))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self._last = task
            if not keep_alive:
                self._closing = True

    def _parse_one(self) -> tuple[HttpRequest, bool] | None:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > MAX_HEADER:
                raise _BadRequest("headers too large")
            return None
        head = bytes(self._buf[:end]).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3:
            raise _BadRequest("bad request line")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadRequest("bad header line")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            decoded = self._dechunk(start)
            if decoded is None:
                return None
            body, consumed = decoded
        else:
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                raise _BadRequest("bad content-length") from None
            if length > MAX_BODY:
                raise _BadRequest("body too large")
            if len(self._buf) - start < length:
                return None
            body, consumed = bytes(self._buf[start:start + length]), start + length
        del self._buf[:consumed]
        conn = headers.get("connection", "").lower()
        keep_alive = conn != "close" and (version == "HTTP/1.1" or conn == "keep-alive")
        return HttpRequest(method, target, headers, body), keep_alive

    def _dechunk(self, pos: int) -> tuple[bytes, int] | None:
        body = bytearray()
        while True:
            line_end = self._buf.find(b"\r\n", pos)
            if line_end < 0:
                return None
            try:
                size = int(bytes(self._buf[pos:line_end]).split(b";")[0], 16)
            except ValueError:
                raise _BadRequest("bad chunk size") from None
            pos = line_end + 2
            if size == 0:
                trailer_end = self._buf.find(b"\r\n\r\n", pos - 2)
                if trailer_end < 0:
                    return None
                return bytes(body), trailer_end + 4
            if len(self._buf) < pos + size + 2:
                return None
            body += self._buf[pos:pos + size]
            pos += size + 2

    async def _answer(self, request: HttpRequest, keep_alive: bool,
                      previous: asyncio.Task[None] | None) -> None:
        try:
            response = await self._handler(request)
        except Exception as exc:  # a bug in a responder must not kill the server
            response = HttpResponse(500, f"fake server error: {exc!r}".encode(), "text/plain")
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        if response.disconnect:
            if self._transport is not None:
                self._transport.abort()
            return
        self._reply_now(response, keep_alive)

    def _reply_now(self, response: HttpResponse, keep_alive: bool) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        self._transport.write(response.encode(keep_alive))
        if not keep_alive:
            self._transport.close()
