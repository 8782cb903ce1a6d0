"""A smooth requests-per-minute limiter for async callers.

A token bucket kept as one "theoretical arrival time" (GCRA): each `acquire()` reserves the
next slot, `60 / rpm` seconds after the previous one, and sleeps until it. Up to `burst`
requests may start back to back after an idle period; never more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class RateLimiter:
    """`await limiter.acquire()` before each request; callers are served in arrival order."""

    def __init__(self, rpm: float, *, burst: int = 1,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        if rpm <= 0:
            raise ValueError("rpm must be > 0")
        if burst < 1:
            raise ValueError("burst must be >= 1")
        self.rpm = rpm
        self.interval = 60.0 / rpm
        self.burst = burst
        self._tolerance = (burst - 1) * self.interval
        self._clock = clock
        self._sleep = sleep
        self._tat: float | None = None  # when the bucket is next empty-and-refilled

    def reserve(self) -> float:
        """Take the next slot; return how long to wait before using it (no sleeping)."""
        now = self._clock()
        tat = now if self._tat is None else max(self._tat, now)
        allowed_at = tat - self._tolerance
        self._tat = tat + self.interval
        return max(0.0, allowed_at - now)

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await self._sleep(wait)
