from __future__ import annotations

import json
import random

import pytest

from judge.providers.base import JudgeRequest, ProviderFailure
from judge.providers.ratelimit import RateLimiter
from judge.providers.retry import MAX_RETRY_AFTER, backoff_delay, generate_with_retries
from judge.providers.scripted import ScriptedProvider

REQ = JudgeRequest(item_id="t#1:r", system="sys", messages=({"role": "user", "content": "x"},),
                   schema={})


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _fail(retryable: bool = True, retry_after: float | None = None,
          status: int | None = 500) -> ProviderFailure:
    return ProviderFailure("boom", retryable=retryable, retry_after=retry_after, status=status)


async def test_recovers_after_retryable_failures() -> None:
    clock = FakeClock()
    provider = ScriptedProvider([_fail(), _fail(), '{"label": "pass"}'])
    response, attempts = await generate_with_retries(provider, REQ, retries=4, sleep=clock.sleep,
                                                     rng=random.Random(1))
    assert json.loads(response.text) == {"label": "pass"}
    assert attempts == 3 and len(provider.requests) == 3 and len(clock.sleeps) == 2
    # full jitter: each wait within [0, base * 2**(n-1)]
    assert 0 <= clock.sleeps[0] <= 0.5 and 0 <= clock.sleeps[1] <= 1.0


async def test_retry_after_is_a_floor() -> None:
    clock = FakeClock()
    provider = ScriptedProvider([_fail(retry_after=7.0, status=429), "ok"])
    _, attempts = await generate_with_retries(provider, REQ, retries=2, sleep=clock.sleep)
    assert attempts == 2 and clock.sleeps[0] >= 7.0


async def test_exhausted_raises_last_failure_with_attempts() -> None:
    clock = FakeClock()
    last = _fail(status=503)
    provider = ScriptedProvider([_fail(), _fail(), last, "never"])
    with pytest.raises(ProviderFailure) as info:
        await generate_with_retries(provider, REQ, retries=2, sleep=clock.sleep)
    assert info.value is last and info.value.attempts == 3
    assert provider.pending == 1 and len(clock.sleeps) == 2


async def test_not_retryable_raises_at_once() -> None:
    clock = FakeClock()
    provider = ScriptedProvider([_fail(retryable=False, status=400), "ok"])
    with pytest.raises(ProviderFailure) as info:
        await generate_with_retries(provider, REQ, retries=5, sleep=clock.sleep)
    assert info.value.status == 400 and info.value.attempts == 1 and clock.sleeps == []


async def test_absurd_retry_after_is_not_waited_for() -> None:
    clock = FakeClock()
    provider = ScriptedProvider([_fail(retry_after=MAX_RETRY_AFTER + 1, status=429), "ok"])
    with pytest.raises(ProviderFailure):
        await generate_with_retries(provider, REQ, retries=5, sleep=clock.sleep)
    assert clock.sleeps == []


def test_backoff_grows_and_is_capped() -> None:
    rng = random.Random(0)
    caps = [max(backoff_delay(n, _fail(), base_delay=0.5, max_delay=4, rng=rng)
                for _ in range(400)) for n in range(1, 7)]
    assert caps[0] <= 0.5 < caps[2] <= 2.0 and all(c <= 4 for c in caps) and caps[5] > 3.5


async def test_on_retry_and_limiter_called_per_attempt() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, clock=clock, sleep=clock.sleep)  # one per second
    seen: list[tuple[int, float]] = []
    provider = ScriptedProvider([_fail(retry_after=0.0), "ok"])
    await generate_with_retries(provider, REQ, retries=3, sleep=clock.sleep, limiter=limiter,
                                rng=random.Random(3), on_retry=lambda n, f, d: seen.append((n, d)))
    assert [n for n, _ in seen] == [1]
    assert clock.now >= 1.0  # the second attempt waited for its rate-limit slot


async def test_rate_limiter_spaces_requests_evenly() -> None:
    clock = FakeClock()
    limiter = RateLimiter(600, clock=clock, sleep=clock.sleep)  # 10 per second
    starts = []
    for _ in range(5):
        await limiter.acquire()
        starts.append(round(clock.now, 6))
    assert starts == [0.0, 0.1, 0.2, 0.3, 0.4]


def test_rate_limiter_burst_allowance_after_idle() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, burst=3, clock=clock, sleep=clock.sleep)
    waits = [limiter.reserve() for _ in range(5)]
    assert waits == [0.0, 0.0, 0.0, 1.0, 2.0]
    clock.now = 100.0  # long idle: the allowance refills, but never beyond `burst`
    waits = [limiter.reserve() for _ in range(4)]
    assert waits == [0.0, 0.0, 0.0, 1.0]


async def test_rate_limiter_under_concurrency_keeps_rate() -> None:
    import asyncio

    clock = FakeClock()
    limiter = RateLimiter(120, clock=clock, sleep=clock.sleep)  # 2 per second
    waits = [limiter.reserve() for _ in range(10)]
    assert waits == [pytest.approx(0.5 * i) for i in range(10)]
    real = RateLimiter(6000)  # 100/s real clock: 11 acquisitions take >= 0.1 s
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.gather(*(real.acquire() for _ in range(11)))
    assert loop.time() - t0 >= 0.095
