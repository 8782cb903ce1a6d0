"""The one library entry point that grades traces: checks → items → render → provider →
validate → route → store. `judge grade` and `judge run` call `grade_traces`; `judge worker`
and `judge run --distributed` grade through the same pool, sink and router
(judge.pipeline.worker).

One event loop does the work. Traces are checked one at a time between the loop's turns,
and each trace's items go to a fixed pool of `concurrency` grading workers as soon as its
checks are done, so provider latency overlaps with the deterministic work. Verdicts are
routed and stored as they come (judge.pipeline.sink), each after the provider call it came
from: a run killed at any point resumes without repeating a stored call or duplicating a
verdict. `--batch` checks everything first, fills the call cache through the provider's
batch API, then grades from the cache.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.errors import InputError
from judge.formats import Verdict
from judge.grading.engine import Grader, GradingStats, ItemGrader
from judge.grading.jury import Jury, JuryGrader
from judge.grading.tasks import gather_or_cancel
from judge.items import Item
from judge.pipeline.checkproc import CheckerProcess, can_fork
from judge.pipeline.collect import Checked, Checker, OnChecked, Source, TraceChecked
from judge.pipeline.heap import freeze_before_fork, settled_heap
from judge.pipeline.pool import GradingPool, Job
from judge.pipeline.route import Router
from judge.pipeline.sink import VerdictSink
from judge.prompts import Prompt, render
from judge.providers.base import CallCache, JudgeRequest, Provider
from judge.providers.ratelimit import RateLimiter
from judge.request import ItemView
from judge.routing import RoutingPolicy
from judge.settings import Settings

if TYPE_CHECKING:
    from judge.grading.writebehind import WriteBehindCache
    from judge.pipeline.callproc import CallWriterProcess
    from judge.store import Store

    #: where a run with a store keeps its calls (the same contract either way)
    CallWriter = WriteBehindCache | CallWriterProcess


@dataclass(frozen=True)
class GradeOptions:
    """`policy=None`: mark vetoes only (no database to queue reviews in). `keep_verdicts`:
    return every verdict, in item order (what `judge grade` prints). `check_process`: check
    traces and render requests in a forked child (judge.pipeline.checkproc) where possible;
    `store_process`: store provider calls from another (judge.pipeline.callproc), else from
    a thread (judge.grading.writebehind)."""

    replay_only: bool = False
    policy: RoutingPolicy | None = field(default_factory=RoutingPolicy)
    batch: bool = False
    batch_poll_s: float = 5.0
    keep_verdicts: bool = False
    check_process: bool = True  # check and render in a forked child where possible
    store_process: bool = True  # store calls from a forked child where possible


@dataclass
class Hooks:
    """Progress callbacks, all optional: a trace was checked; the number of items found so
    far; all traces are checked (the final item count); `n` verdicts were stored; a batch
    status line."""

    on_checked: OnChecked | None = None
    on_items: Callable[[int], None] | None = None
    on_all_checked: Callable[[int], None] | None = None
    on_verdicts: Callable[[int], None] | None = None
    on_status: Callable[[str], None] | None = None


@dataclass
class Graded:
    run_id: str | None
    checked: Checked
    stats: GradingStats
    verdicts: list[Verdict] = field(default_factory=list)
    batch: dict[str, int] = field(default_factory=dict)

    @property
    def errors(self) -> list[InputError]:
        return self.checked.errors


def grade_traces(sources: Iterable[Source], *, prompts: Mapping[str, Prompt],
                 provider: Provider, settings: Settings, store: Store | None = None,
                 run_id: str | None = None, cache: CallCache | None = None,
                 options: GradeOptions = GradeOptions(), hooks: Hooks | None = None,
                 errors: list[InputError] | None = None, jury: Jury | None = None) -> Graded:
    """Check and grade every trace of `sources`; route and store the verdicts under `run_id`
    (with a store), or keep calls in `cache` only (without). Items that already have a
    verdict in the run are skipped (a resumed run). Trace readers record unreadable traces
    in `errors`, the same list the result's `errors` holds. `jury`: grades the rubrics it
    applies to (judge.grading.jury); `provider` the others. Closes the providers."""
    if store is None and cache is None:
        raise ValueError("grade_traces needs a store or a call cache")
    if store is not None and run_id is None:
        raise ValueError("grading into a store needs a run id")
    pipeline = _Pipeline(sources, prompts, provider, settings, store, run_id, cache, options,
                         hooks or Hooks(), errors, jury)
    # The coroutine returns nothing: asyncio.run formats its task's repr (with the result) on
    # the way out (signal.getsignal), which for a whole run's items costs seconds.
    with settled_heap():  # the collector's settings for the run (judge.pipeline.heap)
        asyncio.run(pipeline.run())
    assert pipeline.result is not None
    return pipeline.result


def grade_run(sources: Iterable[Source], *, store: Store, config: Mapping[str, Any],
              **kwargs: Any) -> Graded:
    """`grade_traces` as one run of its own in the store: the run is started with `config`,
    then finished ("failed" when no trace could be checked or grading raised — with the
    reason, see `fail_run` —, "interrupted" on SIGINT). Never left "running"."""
    run_id = store.save_run(config=dict(config))
    try:
        result = grade_traces(sources, store=store, run_id=run_id, **kwargs)
    except KeyboardInterrupt:
        store.finish_run(run_id, status="interrupted")
        raise
    except BaseException as exc:
        fail_run(store, run_id, exc)
        raise
    if result.checked.n_traces:
        store.finish_run(run_id, status="finished")
    else:
        store.finish_run(run_id, status="failed",
                         summary={"failed": "no trace could be read", "errors": len(result.errors)})
    return result


def compact(request: JudgeRequest) -> JudgeRequest:
    """`request` with a view that keeps what the cache key and the item's schema read (its
    rubric, kind, seq, turn, ledger keys and slice seqs) and none of the shown data, which
    only local providers read: a remote provider's request is what crosses the pipe from
    the checking child (judge.pipeline.checkproc), and the data was half its bytes."""
    view = request.view
    if view is None:
        return request
    light = ItemView(rubric=view.rubric, kind=view.kind, seq=view.seq, turn=view.turn,
                     ledger_keys=view.ledger_keys, slice_seqs=view.slice_seqs,
                     parts=_not_sent)
    return dataclasses.replace(request, view=light)


def _not_sent(name: str) -> Any:
    raise RuntimeError(f"the request's view of block {name!r} was not sent to the grading "
                       "process (only local providers read it: judge.pipeline.grade.compact)")


def failure_reason(exc: BaseException) -> str:
    """One line saying why a run died (a JudgeError's message, else the exception's type and
    the first line of its message)."""
    from judge.errors import JudgeError

    if isinstance(exc, JudgeError):
        text = exc.message
    else:
        first = str(exc).strip().split("\n", 1)[0].strip()
        text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return " ".join(text.split())[:1000]


def fail_run(store: Store, run_id: str, exc: BaseException) -> None:
    """Mark a run that died of `exc` "failed", the reason stored as its summary's `failed`
    (what is stored stays; `judge run --resume` can finish it). A second failure while
    saying so must not hide the first, so it is swallowed."""
    with suppress(Exception):
        store.finish_run(run_id, status="failed", summary={"failed": failure_reason(exc)})


class _Pipeline:
    def __init__(self, sources: Iterable[Source], prompts: Mapping[str, Prompt],
                 provider: Provider, settings: Settings, store: Store | None,
                 run_id: str | None, cache: CallCache | None, options: GradeOptions,
                 hooks: Hooks, errors: list[InputError] | None, jury: Jury | None) -> None:
        self.sources = list(sources)
        self.jury = jury
        self.prompts = prompts
        self.provider = provider
        self.settings = settings
        self.store = store
        self.run_id = run_id or ""
        self.options = options
        self.hooks = hooks
        self.errors = errors if errors is not None else []
        self.cache = cache
        self.stats = GradingStats()
        self.skip = store.stored_item_ids(self.run_id) if store is not None else set()
        self.checked = Checked(errors=self.errors)
        self.graders: dict[str, Grader] = {}
        self.result: Graded | None = None
        self.gate: asyncio.Semaphore | None = None  # requests in flight, with a jury

    @property
    def remote(self) -> bool:
        return self.provider.remote or (self.jury is not None and self.jury.remote)

    def grader(self, rubric: str, limiter: RateLimiter | None) -> Grader:
        if rubric not in self.graders:
            s = self.settings
            assert self.cache is not None
            if self.jury is not None and self.gate is None:
                self.gate = asyncio.Semaphore(s.concurrency)
            if self.jury is not None and self.jury.spec.applies(rubric):
                self.graders[rubric] = JuryGrader(
                    self.prompts[rubric], self.jury, self.cache, params=s.model_params(),
                    retries=s.retries, limiter=limiter, replay_only=self.options.replay_only,
                    redaction=s.redaction(), stats=self.stats, gate=self.gate)
                return self.graders[rubric]
            self.graders[rubric] = ItemGrader(
                self.prompts[rubric], self.provider, self.cache, params=s.model_params(),
                retries=s.retries, limiter=limiter, replay_only=self.options.replay_only,
                redaction=s.redaction(), stats=self.stats, gate=self.gate)
        return self.graders[rubric]

    def _prepare(self) -> Callable[[Item], JudgeRequest | None]:
        """Renders an item's request exactly as its grader would (None if it cannot: the
        grader then renders it and records the failure). When every judge is remote, the
        request crosses from the checking child without its view's data (`compact`): only
        local providers read it, and it was half of every record's bytes."""
        params, redaction, prompts = self.settings.model_params(), self.settings.redaction(), \
            self.prompts
        skip = self.skip
        local = not self.provider.remote or (
            self.jury is not None and any(not p.remote for p in self.jury.providers.values()))

        def prepare(item: Item) -> JudgeRequest | None:
            prompt = prompts.get(item.rubric)
            if prompt is None or item.item_id in skip:
                return None
            try:
                request = render(prompt, item, params, redaction)
            except Exception:  # the grader renders it again and reports why
                return None
            return request if local else compact(request)

        return prepare

    def _checks(self) -> tuple[CheckerProcess | None, AsyncIterator[TraceChecked]]:
        """The checked traces, from a forked child where possible (started before any
        thread of ours), else from a Checker in this process."""
        keep_events = self.hooks.on_checked is not None
        if self.options.check_process and can_fork(self.store):
            proc = CheckerProcess(self.sources, self.store, errors=self.errors,
                                  prepare=self._prepare(), keep_events=keep_events)
            proc.start()
            self.checked = proc.checked
            return proc, proc.traces()
        checker = Checker(self.sources, self.store, errors=self.errors, keep_events=keep_events)
        self.checked = checker.checked

        async def in_process() -> AsyncIterator[TraceChecked]:
            for tc in checker.traces():
                yield tc
                await asyncio.sleep(0)  # let the loop send and receive before the next trace

        return None, in_process()

    def _providers(self) -> list[Provider]:
        extra = [p for p in self.jury.providers.values() if p is not self.provider] \
            if self.jury is not None else []
        return [self.provider, *extra]

    def _writer(self, proc: CheckerProcess | None) -> CallWriter:
        """Where this run's calls are stored: a forked child where possible (after the
        checking child, whose pipe it must not hold: judge.pipeline.callproc), else the
        write-behind thread."""
        assert self.store is not None
        if self.options.store_process and can_fork(self.store):
            from judge.pipeline.callproc import CallWriterProcess

            writer = CallWriterProcess(self.store)
            writer.start(close_in_child=proc.parent_ends() if proc is not None else ())
            return writer
        from judge.grading.writebehind import WriteBehindCache

        return WriteBehindCache(self.store.calls)

    async def run(self) -> None:
        # The judges' SDKs are imported first, then what is alive is frozen, then the
        # children are forked (judge.pipeline.heap): the SDK's ~79,000 objects are never
        # walked by a collection, here or in a child, and the first request goes out
        # sooner than with the import beside the checking child's first traces (measured on
        # the 1,164-call benchmark: 0.1-0.2 CPU-s less, the first request 0.05-0.1 s sooner)
        for provider in self._providers():
            provider.prepare()
        freeze_before_fork()
        proc, checked_traces = self._checks()
        writer: CallWriter | None = None
        try:
            if self.cache is None:
                writer = self._writer(proc)
                self.cache = writer
            await self._run(checked_traces, writer)
        finally:
            # close the trace stream while its pipe is open: left to the loop's shutdown, a
            # generator stopped by an error reads a closed handle and prints a traceback
            with suppress(Exception):
                await checked_traces.aclose()  # type: ignore[attr-defined]
            if proc is not None:
                proc.close()
            if writer is not None and writer.running:  # failed before grading: end it
                with suppress(Exception):
                    writer.close()

    async def _run(self, checked_traces: AsyncIterator[TraceChecked],
                   writer: CallWriter | None) -> None:
        if self.store is not None:
            for prompt in self.prompts.values():
                self.store.save_prompt(prompt)
        counted = self.hooks.on_verdicts
        on_stored = (lambda _run, batch: counted(len(batch))) if counted is not None else None
        sink = VerdictSink(self.store, Router(self.store, self.options.policy), calls=writer,
                           keep=self.options.keep_verdicts, on_stored=on_stored)
        sink.vetoed = self.checked.vetoes  # type: ignore[assignment]
        remote = self.remote
        limiter = RateLimiter(self.settings.rpm) if self.settings.rpm and remote else None
        pool = GradingPool(self.settings.concurrency if remote else 1,
                           lambda job, v: sink.add(job.run_id, v))
        grading = asyncio.create_task(pool.run())
        started = time.perf_counter()
        failed = True
        batch: dict[str, int] = {}
        try:
            if self.options.batch and not self.options.replay_only:
                batch = await self._batch_then_feed(checked_traces, pool, sink, limiter)
            else:
                await self._feed(checked_traces, pool, sink, limiter)
            pool.close()
            await grading
            failed = False
        finally:
            if not grading.done():
                grading.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await grading
            self._finish(sink, writer, failed)
            self.stats.elapsed_s += time.perf_counter() - started
            await self.provider.aclose()
            if self.jury is not None:
                for p in self.jury.providers.values():
                    if p is not self.provider:
                        await p.aclose()
        verdicts = sink.verdicts
        if self.options.keep_verdicts:
            order = {it.item_id: i for i, it in enumerate(self.checked.items)}
            verdicts.sort(key=lambda v: order.get(v.item_id, len(order)))
        self.result = Graded(self.run_id or None, self.checked, self.stats, verdicts, batch)

    async def _feed(self, checked_traces: AsyncIterator[TraceChecked], pool: GradingPool,
                    sink: VerdictSink, limiter: RateLimiter | None) -> None:
        """Hand each checked trace's items to the pool as soon as it is checked."""
        total = 0
        async for tc in checked_traces:
            self._observe(tc)
            self._submit(pool, sink, tc.items, tc.requests, limiter)
            total += len(tc.items)
            if tc.items and self.hooks.on_items is not None:
                self.hooks.on_items(total)
        if self.hooks.on_all_checked is not None:
            self.hooks.on_all_checked(total)

    async def _batch_then_feed(self, checked_traces: AsyncIterator[TraceChecked],
                               pool: GradingPool, sink: VerdictSink,
                               limiter: RateLimiter | None) -> dict[str, int]:
        from judge.pipeline.batch import prefill_by_batch

        assert self.store is not None
        items: list[Item] = []
        requests: list[JudgeRequest | None] = []
        async for tc in checked_traces:
            self._observe(tc)
            items.extend(tc.items)
            requests.extend(tc.requests)
        pending = [it for it in items if it.item_id not in self.skip]
        if self.hooks.on_all_checked is not None:
            self.hooks.on_all_checked(len(items))
        counts: dict[str, int] = {}
        params = self.settings.model_params()
        batches = []
        for rubric in dict.fromkeys(it.rubric for it in pending):
            mine = [it for it in pending if it.rubric == rubric]
            # one batch per seat of a jury (its provider, its sample's params), else one
            seats = [(self.jury.providers[j.model], j.params(params), f"{rubric}:{j.id}")
                     for j in self.jury.spec.jurors()] \
                if self.jury is not None and self.jury.spec.applies(rubric) \
                else [(self.provider, params, rubric)]
            batches += [prefill_by_batch(
                self.store, self.run_id, rubric, self.prompts[rubric], mine, provider,
                seat_params, redaction=self.settings.redaction(),
                poll_base_delay=self.options.batch_poll_s, on_status=self.hooks.on_status,
                batch_key=key) for provider, seat_params, key in seats]
        # every batch is submitted before any is waited on: a batch can take hours, and a
        # jury's seats (and the rubrics) then wait side by side, not one after another
        for got in await gather_or_cancel(*batches):  # one fails: the others stop too
            for k, n in got.items():
                counts[k] = counts.get(k, 0) + n
        self._submit(pool, sink, items, requests, limiter)
        return counts

    def _observe(self, tc: TraceChecked) -> None:
        if self.hooks.on_checked is not None:
            self.hooks.on_checked(tc)

    def _submit(self, pool: GradingPool, sink: VerdictSink, items: list[Item],
                requests: list[JudgeRequest | None], limiter: RateLimiter | None) -> None:
        for it, request in zip(items, requests, strict=True):
            sink.safety[it.item_id] = it.safety_critical
            if it.item_id not in self.skip:
                pool.put(Job(self.run_id, it, self.grader(it.rubric, limiter), request))

    def _finish(self, sink: VerdictSink, writer: CallWriter | None,
                failed: bool) -> None:
        """Store what is pending: calls, then verdicts. After a failure, a second failure
        here must not hide the first."""
        try:
            sink.flush()
            if writer is not None:
                writer.close()
        except Exception:
            if not failed:
                raise
