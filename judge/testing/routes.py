"""The fake server on HTTP, with aiohttp's web server.

Why aiohttp (aio-libs; also the SDKs' optional async transport): its handlers see the
connection (`request.transport`), so the `disconnect` fault drops the connection before any
byte of a response, as a crashed upstream or a load balancer does. An ASGI server such as
uvicorn (the likely stack of `judge serve`) gives an application no way to do that: the
nearest is a response cut off after its headers, which clients report differently. aiohttp
also parses keep-alive, pipelined and chunked requests and multipart uploads in its C parser,
runs inside an event loop we own (thread mode, or a forked process for benchmarks), cancels a
handler whose client went away (a hung request does not outlive its client) and stops with a
bounded grace period. Measured against the hand-written server it replaced: see
benchmarks/README.md ("providers and fake server").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import BaseModel

from judge.testing.fakeapi import FakeAPI, parse_body
from judge.testing.wire import ApiError, DropConnection, Wire

INSTALL_HINT = ("the fake provider server needs aiohttp, a test dependency of judge: "
                "pip install 'judge[testing]' (or '.[dev]' in a checkout)")

try:
    from aiohttp import BodyPartReader, web
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ModuleNotFoundError(INSTALL_HINT, name=exc.name) from exc

MAX_BODY = 256 * 1024 * 1024
#: seconds a stopping server waits for requests in flight before cancelling them
SHUTDOWN_GRACE = 0.25
#: reason phrases the standard library does not know
REASONS = {529: "Overloaded"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_response(status: int, obj: BaseModel | dict[str, Any],
                  headers: dict[str, str] | None = None) -> web.Response:
    data = obj.model_dump_json(exclude_unset=True).encode() if isinstance(obj, BaseModel) \
        else orjson.dumps(obj)
    return web.Response(status=status, reason=REASONS.get(status), body=data,
                        content_type="application/json", headers=headers)


def lower_headers(request: web.Request) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


class Routes:
    """aiohttp handlers over one FakeAPI."""

    def __init__(self, api: FakeAPI) -> None:
        self.api = api

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.errors], client_max_size=MAX_BODY)
        app.add_routes([
            web.post("/v1/chat/completions", self.chat),
            web.post("/v1/responses", self.responses),
            web.post("/v1/messages", self.messages),
            web.post("/v1/files", self.upload_file),
            web.get("/v1/files/{id}", self.get_file),
            web.get("/v1/files/{id}/content", self.file_content),
            web.post("/v1/batches", self.create_batch),
            web.get("/v1/batches/{id}", self.get_batch),
            web.post("/v1/batches/{id}/cancel", self.cancel_batch),
            web.post("/v1/messages/batches", self.create_message_batch),
            web.get("/v1/messages/batches/{id}", self.get_message_batch),
            web.get("/v1/messages/batches/{id}/results", self.message_batch_results),
            web.get("/_fake/stats", self.stats),
        ])
        return app

    @web.middleware
    async def errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """API errors in the wire format of the path; a dropped connection; a responder's bug
        as a plain 500 (it must not kill the server)."""
        wire: Wire[Any] = self.api.anthropic if request.path.startswith("/v1/messages") \
            else self.api.openai
        try:
            return await handler(request)
        except ApiError as exc:
            body = exc.body if exc.body is not None else \
                wire.error(exc.status, exc.message, exc.param)
            return json_response(exc.status, body, exc.headers)
        except DropConnection:
            if request.transport is not None:
                request.transport.abort()
            return web.Response()  # never sent: aiohttp finds the connection gone
        except web.HTTPException as exc:
            if exc.status in (404, 405):
                message = f"no route for {request.method} {request.path}"
                return json_response(404, wire.error(404, message))
            return json_response(exc.status, wire.error(exc.status, exc.reason))
        except Exception as exc:
            return web.Response(status=500, text=f"fake server error: {exc!r}")

    async def _generate(self, wire: Wire[Any], request: web.Request) -> web.Response:
        answer, headers = await self.api.generate(wire, request.method, request.path,
                                                  lower_headers(request), await request.read())
        return json_response(200, answer, headers)

    async def chat(self, request: web.Request) -> web.Response:
        return await self._generate(self.api.openai, request)

    async def responses(self, request: web.Request) -> web.Response:
        return await self._generate(self.api.responses, request)

    async def messages(self, request: web.Request) -> web.Response:
        return await self._generate(self.api.anthropic, request)

    # -- OpenAI Files and Batches ----------------------------------------------------------
    async def upload_file(self, request: web.Request) -> web.Response:
        self.api.counts["files"] += 1
        if request.content_type != "multipart/form-data":
            raise ApiError(400, "expected multipart/form-data with a boundary")
        fields: dict[str, tuple[str | None, bytes]] = {}
        try:
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if isinstance(part, BodyPartReader) and part.name:
                    fields[part.name] = (part.filename, bytes(await part.read()))
        except ValueError as exc:  # malformed multipart body
            raise ApiError(400, f"bad multipart body: {exc}") from None
        file = fields.get("file")
        purpose = fields.get("purpose")
        obj = self.api.openai_files.upload(file[0] if file else None, file[1] if file else None,
                                           purpose[1].decode("utf-8", "replace")
                                           if purpose else None)
        return json_response(200, obj)

    async def get_file(self, request: web.Request) -> web.Response:
        self.api.counts["files"] += 1
        return json_response(200, self.api.openai_files.get(request.match_info["id"]))

    async def file_content(self, request: web.Request) -> web.Response:
        self.api.counts["files"] += 1
        data = self.api.openai_files.content(request.match_info["id"])
        return web.Response(body=data, content_type="application/octet-stream")

    async def create_batch(self, request: web.Request) -> web.Response:
        self.api.counts["batches"] += 1
        body = parse_body(await request.read())
        return json_response(200, self.api.openai_batches.create(body))

    async def get_batch(self, request: web.Request) -> web.Response:
        self.api.counts["batches"] += 1
        return json_response(200, self.api.openai_batches.retrieve(request.match_info["id"]))

    async def cancel_batch(self, request: web.Request) -> web.Response:
        self.api.counts["batches"] += 1
        return json_response(200, self.api.openai_batches.cancel(request.match_info["id"]))

    # -- Anthropic Message Batches ------------------------------------------------------------
    def _message_batch_call(self, request: web.Request) -> None:
        self.api.counts["message_batches"] += 1
        self.api.anthropic.check_auth(lower_headers(request), self.api.require_auth)

    async def create_message_batch(self, request: web.Request) -> web.Response:
        self._message_batch_call(request)
        body = parse_body(await request.read())
        return json_response(200, self.api.anthropic_batches.create(body))

    async def get_message_batch(self, request: web.Request) -> web.Response:
        self._message_batch_call(request)
        batch = self.api.anthropic_batches.retrieve(request.match_info["id"])
        return json_response(200, batch)

    async def message_batch_results(self, request: web.Request) -> web.Response:
        self._message_batch_call(request)
        data = self.api.anthropic_batches.results(request.match_info["id"])
        return web.Response(body=data, content_type="application/binary")

    async def stats(self, request: web.Request) -> web.Response:
        return json_response(200, self.api.stats())


async def serve(api: FakeAPI, host: str, port: int, started: Callable[[int], Any],
                stop: asyncio.Event) -> None:
    """Serve `api` on host:port until `stop` is set; `started(port)` once listening."""
    runner = web.AppRunner(Routes(api).app(), handle_signals=False, access_log=None,
                           handler_cancellation=True, shutdown_timeout=SHUTDOWN_GRACE)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=1024, reuse_address=True)
        await site.start()
        bound = int(runner.addresses[0][1])
        api.base_url = f"http://{host}:{bound}"
        started(bound)
        await stop.wait()
    finally:
        await runner.cleanup()
