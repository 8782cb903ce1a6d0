"""The SDKs over aiohttp (judge.providers.transport): the real openai and anthropic clients
against the wire-format fake server, one client per event loop, closed and remade."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from test_grading_fakeserver import make_item, provider_for

from judge.grading import MemoryCache, grade_items_sync
from judge.prompts import load_prompt
from judge.providers.transport import SDKClient, aiohttp_client
from judge.settings import Settings
from judge.testing.fakeserver import FakeProviderServer

KINDS = ["openai", "anthropic"]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.mark.parametrize("kind", KINDS)
def test_the_sdk_client_sends_over_aiohttp(kind: str, server: FakeProviderServer) -> None:
    provider = provider_for(kind, server)

    async def transport() -> str:
        try:
            return type(provider.client._client._transport).__name__  # type: ignore[attr-defined]
        finally:
            await provider.aclose()

    assert asyncio.run(transport()) == "AiohttpTransport"


@pytest.mark.parametrize("kind", KINDS)
def test_one_provider_grades_from_two_event_loops(kind: str, server: FakeProviderServer
                                                  ) -> None:
    """`grade_items_sync` twice with one provider: each loop gets a client of its own (an
    aiohttp session from the first loop would fail in the second), closed at the end."""
    provider = provider_for(kind, server)
    prompt = load_prompt("scope_fidelity")
    params = Settings.load(environ={}).model_params()
    for n in range(2):
        out = grade_items_sync([make_item(i) for i in range(3 * n, 3 * n + 3)], prompt,
                               provider, MemoryCache(), params=params, concurrency=2,
                               rpm=None, retries=0)
        assert [v.label for v in out] == ["pass"] * 3
    assert server.generation_count == 6


def test_a_client_is_made_per_loop_and_remade_after_closing() -> None:
    made: list[Fake] = []

    class Fake:
        closed = False

        async def close(self) -> None:
            self.closed = True

    def make() -> Fake:
        made.append(Fake())
        return made[-1]

    holder = SDKClient(make)
    outside = holder.get()  # outside a loop: made, bound to the first loop that uses it

    async def use() -> Fake:
        first = holder.get()
        assert holder.get() is first
        return first

    assert asyncio.run(use()) is outside
    second = asyncio.run(use())  # another loop: another client
    assert second is not outside and len(made) == 2

    async def close_then_use() -> Fake:
        await holder.aclose()
        return holder.get()

    third = asyncio.run(close_then_use())
    assert second.closed and third is not second and not third.closed
    given = Fake()
    fixed = SDKClient(make, given)
    assert asyncio.run(use_of(fixed)) is given and asyncio.run(use_of(fixed)) is given


async def use_of(holder: SDKClient) -> object:  # type: ignore[type-arg]
    return holder.get()


def test_without_the_sdks_aiohttp_client_the_default_is_kept() -> None:
    class Old:  # an SDK without DefaultAioHttpClient
        pass

    class Missing:  # the SDK's stand-in when aiohttp cannot be imported
        @staticmethod
        def DefaultAioHttpClient() -> None:
            raise RuntimeError("To use the aiohttp client you must have installed ...")

    assert aiohttp_client(Old) == {} and aiohttp_client(Missing) == {}
