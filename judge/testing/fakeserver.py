"""A local fake OpenAI + Anthropic server for tests and for checking a setup without a key.

    with FakeProviderServer(latency=0.1) as srv:
        client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="x")
        ...
        assert srv.count("chat") == 1

It listens on 127.0.0.1 on a random port, in a background thread (default: `srv.requests`,
`srv.counts` and `srv.enqueue(...)` work directly) or in a forked process (`process=True`,
for benchmarks, so the server does not share the client's GIL; read counts with
`srv.stats()`). Neither outlives its starter: `stop()` (the `with` block's end) joins the
thread or the process, and the process dies with the one that started it, even by SIGKILL
(judge.lifeline). Endpoints: POST /v1/chat/completions, POST /v1/responses (an agent loop's
Responses API), POST /v1/messages, POST /v1/files,
GET /v1/files/{id}[/content], POST /v1/batches, GET /v1/batches/{id}, POST
/v1/batches/{id}/cancel, POST /v1/messages/batches, GET /v1/messages/batches/{id}[/results],
GET /_fake/stats.

`dialect`: the OpenAI-compatible server imitated on /v1/chat/completions ("openai";
"llama-cpp-python", "lm-studio", "no-response-format": how each takes or refuses structured
output, see judge.testing.dialects).

Answers: queued replies first (`enqueue`), then `responder(request)`, then the default — a
valid `pass` verdict citing the largest `seq` found in the prompt text, filling any other
field the request's schema requires. Faults: see judge.testing.faults (429 with Retry-After,
5xx, hang past the client timeout, dropped connection, malformed JSON, chosen verdicts,
`flaky(rate)` for a random mix).

Run standalone: `python -m judge.testing.fakeserver --port 8080 --latency 0.2 --fail-rate 0.1`
(`--dialect llama-cpp-python` to refuse structured output as that server does).

HTTP is aiohttp's web server (`pip install 'judge[testing]'`), not the starlette + uvicorn
stack `judge serve` is likely to use: an ASGI app cannot drop its connection before answering,
and the `disconnect` fault must do exactly that; aiohttp hands the handler its transport, and
parses keep-alive, pipelined, chunked and multipart requests for us (more in routes.py).
The pieces: fakeapi (state and the one generation path), openai_wire and anthropic_wire (the
two formats, answers built from the SDKs' types), batches (both batch APIs), routes (HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from judge.lifeline import die_with_parent
from judge.testing.dialects import DIALECTS
from judge.testing.fakeapi import FakeAPI
from judge.testing.faults import FakeRequest, Reply, Responder, flaky
from judge.testing.routes import serve

__all__ = ["FakeProviderServer", "FakeRequest", "Reply", "fake_provider_server"]


def _child(api: FakeAPI, host: str, port: int, pipe: Connection, parents_end: Connection,
           parent_pid: int) -> None:
    parents_end.close()  # else the parent's death never reaches `pipe`
    die_with_parent(parent_pid)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_reader(pipe.fileno(), stop.set)  # parent writes (or dies): stop
        await serve(api, host, port, pipe.send, stop)

    asyncio.run(main())


class FakeProviderServer:
    """The fake server as a context manager (see the module doc)."""

    def __init__(self, latency: float = 0.0, responder: Responder | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, batch_polls: int = 1,
                 require_auth: bool = False, process: bool = False,
                 record: bool = True, dialect: str = "openai") -> None:
        self.api = FakeAPI(latency=latency, responder=responder, batch_polls=batch_polls,
                           require_auth=require_auth, record=record and not process,
                           dialect=dialect)
        self.host = host
        self.port = port
        self.process = process
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._pipe: Connection | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeProviderServer:
        if self.process:
            self._start_process()
        else:
            self._start_thread()
        return self

    def _start_thread(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def started(port: int) -> None:
            self.port = port
            ready.set()

        def run() -> None:
            async def main() -> None:
                self._loop = asyncio.get_running_loop()
                self._stop = asyncio.Event()
                await serve(self.api, self.host, self.port, started, self._stop)

            try:
                asyncio.run(main())
            except BaseException as exc:  # surfaced to the starting thread
                failure.append(exc)
                ready.set()

        self._thread = threading.Thread(target=run, name="fake-provider-server", daemon=True)
        self._thread.start()
        up = ready.wait(10)
        if failure:
            raise failure[0]
        if not up:
            self.stop()
            raise RuntimeError("fake provider server thread did not start in 10 s")
        self.api.base_url = self.base_url

    def _start_process(self) -> None:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_child, args=(self.api, self.host, self.port, child,
                                                      parent, os.getpid()), daemon=True)
        self._proc.start()
        child.close()
        if not parent.poll(10):
            self._proc.kill()
            self._proc.join(5)
            self._proc = None
            parent.close()
            raise RuntimeError("fake provider server process did not start")
        self.port = parent.recv()
        self._pipe = parent
        self.api.base_url = self.base_url

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
            if self._thread is not None:
                self._thread.join(10)
            self._loop = None
        if self._proc is not None and self._pipe is not None:
            with suppress(OSError):
                self._pipe.send("stop")
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
            self._pipe.close()
            self._proc = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- addresses ----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For `openai.AsyncOpenAI(base_url=...)` / OPENAI_BASE_URL / `--base-url`."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For `anthropic.AsyncAnthropic(base_url=...)` (the SDK adds /v1/...)."""
        return self.base_url

    # -- inspection and faults ---------------------------------------------------------------
    @property
    def requests(self) -> list[FakeRequest]:
        """Every request received, generation and batch lines included (thread mode)."""
        self._need_thread("requests")
        return self.api.requests

    def generations(self, api: str | None = None) -> list[FakeRequest]:
        """Requests that asked for a completion (chat, messages, batch lines)."""
        return [r for r in self.requests if r.api in ("openai", "anthropic", "openai-responses")
                and (api is None or r.api == api)]

    @property
    def counts(self) -> dict[str, int]:
        """Requests seen so far by endpoint (both modes; see `count`)."""
        return {k: int(v) for k, v in self.stats()["counts"].items()}

    def count(self, endpoint: str) -> int:
        """Requests seen by endpoint: chat, responses, messages, files, batches,
        message_batches, batch_lines."""
        return self.counts.get(endpoint, 0)

    @property
    def generation_count(self) -> int:
        return int(self.stats()["generations"])

    def stats(self) -> dict[str, Any]:
        if not self.process:
            return self.api.stats()
        with urllib.request.urlopen(self.base_url + "/_fake/stats", timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
            return data

    def enqueue(self, *replies: Reply | dict[str, Any] | str | None) -> None:
        """Answer the next generation requests with these, before the responder."""
        self._need_thread("enqueue")
        self.api.enqueue(*replies)

    def set_responder(self, responder: Responder | None) -> None:
        self._need_thread("set_responder")
        self.api.responder = responder

    def _need_thread(self, what: str) -> None:
        if self.process:
            raise RuntimeError(f"{what} is only available when the server runs in a thread")


@contextmanager
def fake_provider_server(**kwargs: Any) -> Iterator[FakeProviderServer]:
    """For pytest fixtures: `yield from` nothing, just `with fake_provider_server() as srv:
    yield srv`."""
    with FakeProviderServer(**kwargs) as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m judge.testing.fakeserver",
                                     description="Fake OpenAI/Anthropic server for judge.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per completion")
    parser.add_argument("--fail-rate", type=float, default=0.0,
                        help="share of requests answered with a random fault")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=30.0,
                        help="seconds a 'timeout' fault holds the answer")
    parser.add_argument("--dialect", default="openai", choices=sorted(DIALECTS),
                        help="the OpenAI-compatible server to imitate on /v1/chat/completions")
    args = parser.parse_args(argv)
    responder = flaky(args.fail_rate, seed=args.seed, timeout_hold=args.hang) \
        if args.fail_rate > 0 else None
    server = FakeProviderServer(args.latency, responder, host=args.host, port=args.port,
                                record=False, dialect=args.dialect)
    with server:
        print(f"fake provider server on {server.base_url}  "
              f"(OPENAI_BASE_URL={server.openai_base_url}); Ctrl-C to stop", flush=True)
        with suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
