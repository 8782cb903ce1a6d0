"""The HTTP transport under the vendors' SDKs: aiohttp where it is installed.

Both SDKs (openai, anthropic) send through an httpx client, and take any `http_client`;
each ships `DefaultAioHttpClient`, the same client with aiohttp as its transport (their
`[aiohttp]` extra) and the SDK's own defaults (timeout, connection limits, redirects, proxy
settings from the environment). Measured with the plain openai client replaying the 1,164
requests of the grading benchmark (benchmarks/README.md, "CPU per item"): 3.39 CPU-s over
httpx's own transport (httpcore on anyio), 2.85 s over aiohttp; the wall clock the same. The
SDK's requests, errors and retries are unchanged: the transport maps aiohttp's errors to
httpx's, which the SDK maps to its own (tests/test_providers_network.py runs them all).

Without aiohttp (a dependency of judge, so only where it was removed by hand) the SDK's
default client is used, as before.

An aiohttp session belongs to the event loop it first sent from: a provider used from two
loops (`grade_items_sync` twice, a test's `asyncio.run` each) must not hand the second one
the first's session. So a provider's own client is made per loop (`SDKClient`): first use
in a loop other than the one it was made in makes a new one (the old loop is over, or not
this one's to close its connections on), and `aclose` closes it and forgets it, so a later
call opens new connections instead of failing on a closed client. A client given to the
provider (tests, a caller's own) is used as given, always.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any, Generic, Protocol, TypeVar


class _Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class SDKClient(Generic[C]):
    """An SDK client: `given` as it is, else one made by `make` on first use in each event
    loop (see the module doc)."""

    def __init__(self, make: Callable[[], C], given: C | None = None) -> None:
        self._make = make
        self._given = given
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> C:
        if self._given is not None:
            return self._given
        loop = asyncio._get_running_loop()
        if self._client is None or (loop is not None and self._loop is not None
                                    and loop is not self._loop):
            self._client, self._loop = self._make(), loop
        elif self._loop is None:
            self._loop = loop  # made outside a loop (read for its base URL): bound now
        return self._client

    async def aclose(self) -> None:
        if self._given is not None:
            await self._given.close()
            return
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.close()


def aiohttp_client(sdk: Any) -> dict[str, Any]:
    """The keyword arguments giving an SDK module's client aiohttp as its transport:
    `{"http_client": sdk.DefaultAioHttpClient()}`, or `{}` where aiohttp or the SDK's
    aiohttp client is missing."""
    make = getattr(sdk, "DefaultAioHttpClient", None)
    if make is None or find_spec("aiohttp") is None:
        return {}
    try:
        return {"http_client": make()}
    except RuntimeError:  # the SDK's stand-in when its aiohttp support cannot be imported
        return {}
