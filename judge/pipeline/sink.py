"""Where verdicts go as they come: routed and stored in small transactions.

Verdicts are buffered and flushed every `flush_every` verdicts or `flush_s` seconds. A flush
stores the pending provider calls first (a verdict is never stored before the call it came
from, so a run killed at any point repeats no stored call), then routes the batch
(judge.pipeline.route) and stores the verdicts with their review requests in one transaction.
Without a store (`judge grade --cache`), verdicts are routed for vetoes only and kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from judge.formats import Verdict
from judge.pipeline.route import Router

if TYPE_CHECKING:
    from judge.store import Store

FLUSH_EVERY = 64
FLUSH_SECONDS = 1.0


class _Flushable(Protocol):
    def flush(self) -> None: ...


class VerdictSink:
    """Routes and stores the verdicts of one or more runs. `vetoed` (trace ids) and `safety`
    (item id → safety-critical) grow as the pipeline checks traces; `keep` holds every
    verdict for the caller (`verdicts`); `on_stored(run_id, verdicts)` follows each store."""

    def __init__(self, store: Store | None, router: Router, *,
                 calls: _Flushable | None = None, keep: bool = False,
                 on_stored: Callable[[str, list[Verdict]], None] | None = None,
                 flush_every: int = FLUSH_EVERY, flush_s: float = FLUSH_SECONDS) -> None:
        self.store = store
        self.router = router
        self.calls = calls
        self.keep = keep
        self.on_stored = on_stored
        self.flush_every = flush_every
        self.flush_s = flush_s
        self.vetoed: set[str] = set()
        self.safety: dict[str, bool] = {}
        self.verdicts: list[Verdict] = []
        self._buf: dict[str, list[Verdict]] = {}
        self._n = 0
        self._last = time.monotonic()

    def add(self, run_id: str, verdict: Verdict) -> None:
        self._buf.setdefault(run_id, []).append(verdict)
        self._n += 1
        if self._n >= self.flush_every or time.monotonic() - self._last > self.flush_s:
            self.flush()

    def tick(self) -> None:
        """Flush when verdicts have waited `flush_s` (for callers that poll)."""
        if self._n and time.monotonic() - self._last > self.flush_s:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        if not self._n:
            return
        if self.calls is not None:
            self.calls.flush()
        buf, self._buf, self._n = self._buf, {}, 0
        for run_id, batch in buf.items():
            queue = self.router.route(batch, vetoed=self.vetoed, safety=self.safety)
            if self.store is not None:
                self.store.save_verdicts(batch, run_id, queue=queue)
            if self.keep:
                self.verdicts.extend(batch)
            if self.on_stored is not None:
                self.on_stored(run_id, batch)
