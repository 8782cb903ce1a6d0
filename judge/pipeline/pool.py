"""A fixed pool of grading workers over a queue that fills while they work.

Items arrive as traces are checked (or as work is claimed); `workers` coroutines take them
one at a time, so at most that many requests are in flight whatever the number of rubrics,
runs or chunks, and no task is created per item. Every verdict goes to `on_verdict`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from judge.formats import Verdict
from judge.grading.engine import Grader
from judge.grading.tasks import gather_or_cancel
from judge.items import Item
from judge.providers.base import JudgeRequest


@dataclass(frozen=True)
class Job:
    run_id: str
    item: Item
    grader: Grader
    request: JudgeRequest | None = None  # rendered ahead, or None


class GradingPool:
    def __init__(self, workers: int, on_verdict: Callable[[Job, Verdict], None]) -> None:
        if workers < 1:
            raise ValueError("a grading pool needs at least one worker")
        self.workers = workers
        self.on_verdict = on_verdict
        self._queue: asyncio.Queue[Job | None] = asyncio.Queue()
        self.pending = 0  # jobs queued or being graded

    def put(self, job: Job) -> None:
        self.pending += 1
        self._queue.put_nowait(job)

    def close(self) -> None:
        """No more jobs: the workers stop once the queue is drained."""
        self._queue.put_nowait(None)

    async def run(self) -> None:
        """Until closed and drained; a worker's failure cancels the others (no job is taken
        after it), then propagates."""
        await gather_or_cancel(*(self._worker() for _ in range(self.workers)))

    async def _worker(self) -> None:
        queue = self._queue
        while True:
            job = await queue.get()
            if job is None:
                queue.put_nowait(None)  # tell the next worker too
                return
            try:
                verdict = await job.grader.grade(job.item, job.request)
            finally:
                self.pending -= 1
            self.on_verdict(job, verdict)
