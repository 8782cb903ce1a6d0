"""Run coroutines side by side; when one fails, the others are cancelled and waited for.

`asyncio.gather` re-raises the first failure but leaves the other coroutines running: a
grading worker whose store failed left its siblings taking jobs and calling the provider
(calls nobody would store), and a jury's failed batch left the other seats' pollers at
work, while the run cleaned up around them, until the event loop's end cancelled them.
`gather_or_cancel` raises the same first exception, after every sibling has ended, so
nothing outlives the call that started it. (`asyncio.TaskGroup` does the cancelling too,
but raises an ExceptionGroup where callers expect the error itself.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """`asyncio.gather(*aws)`, except that a failure (or a cancellation of this call)
    cancels the others and waits for them before it propagates."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)  # their cleanup runs now, not at the loop's end
        raise
