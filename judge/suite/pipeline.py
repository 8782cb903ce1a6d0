"""Grade while the suite is still being checked: items go to the judge as soon as their
traces are checked and stored, so provider latency overlaps with the deterministic work.

An event loop runs in a background thread; each stored chunk of items is scheduled on it.
One shared semaphore (and one shared rate limiter) wrapped around the provider keeps the
bound on requests in flight — and the requests-per-minute limit — global across chunks.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future

from judge.grading.engine import GradingStats, grade_items
from judge.items import Item
from judge.prompts import Prompt
from judge.providers.base import CallCache, JudgeRequest, Provider, ProviderResponse
from judge.providers.ratelimit import RateLimiter
from judge.settings import Settings


class SharedBound(Provider):
    """A provider whose requests in flight (and rate) are bounded across every caller."""

    def __init__(self, inner: Provider, concurrency: int, rpm: float | None) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.display_name = inner.display_name
        self.remote = inner.remote
        self._n = concurrency
        self._sem: asyncio.Semaphore | None = None
        self._limiter = RateLimiter(rpm) if rpm and inner.remote else None

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        if self._sem is None:  # created on the loop that uses it
            self._sem = asyncio.Semaphore(self._n)
        async with self._sem:
            if self._limiter is not None:
                await self._limiter.acquire()
            return await self.inner.generate(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class PipelinedGrader:
    """Schedules chunks of items on a background event loop as they are collected."""

    def __init__(self, cache: CallCache, prompts: dict[str, Prompt], provider: Provider,
                 settings: Settings, *, replay_only: bool, on_result: Callable[..., None],
                 skip: set[str]) -> None:
        self.cache, self.prompts, self.settings = cache, prompts, settings
        self.provider = SharedBound(provider, settings.concurrency, settings.rpm)
        self.replay_only = replay_only
        self.on_result = on_result
        self.skip = skip
        self.stats = GradingStats()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="judge-grading",
                                       daemon=True)
        self.futures: list[Future[object]] = []
        self.thread.start()

    def submit(self, items: list[Item]) -> None:
        by_rubric: dict[str, list[Item]] = defaultdict(list)
        for it in items:
            if it.item_id not in self.skip:
                by_rubric[it.rubric].append(it)
        for rubric, group in by_rubric.items():
            coro = grade_items(
                group, self.prompts[rubric], self.provider, self.cache,
                params=self.settings.model_params(), concurrency=max(1, len(group)),
                rpm=None, retries=self.settings.retries, replay_only=self.replay_only,
                on_result=self.on_result, stats=self.stats,
                redaction=self.settings.redaction())
            self.futures.append(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def wait(self) -> GradingStats:
        try:
            for f in self.futures:
                f.result()
        finally:
            self.close()
        return self.stats

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()
