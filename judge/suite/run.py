"""Run a suite: deterministic checks, item extraction, grading, routing, storing, the gate.

Everything is stored as it happens (traces, items, each provider call before its verdict,
verdicts in small batches), so a run killed at any point resumes with `--resume RUN_ID`
without repeating a stored provider call or duplicating a verdict.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.checks import CheckReport, run_checks
from judge.errors import InputError
from judge.formats import Verdict
from judge.grading.engine import GradingStats, grade_items
from judge.grading.writebehind import WriteBehindCache
from judge.items import Item, extract_items
from judge.providers.base import Provider
from judge.routing import UNCALIBRATED, RoutingPolicy
from judge.settings import Settings
from judge.store.repo import Store
from judge.suite.cluster import cluster_failures, minimal_slice
from judge.suite.gate import JudgeContribution, TraceOutcome, evaluate_gate
from judge.suite.plan import Plan, PlannedScenario, iter_source
from judge.suite.results import run_verdicts

FLUSH_EVERY = 64
COLLECT_CHUNK = 8
FLUSH_SECONDS = 1.0


@dataclass
class RunOptions:
    replay_only: bool = False
    require_calibrated: bool = False
    resume: str | None = None
    audit_share: float = 0.05
    double_share: float = 0.1
    batch: bool = False
    batch_poll_s: float = 5.0
    distributed: bool = False
    local_worker: bool = True
    wait_timeout_s: float = 24 * 3600.0


@dataclass
class Collected:
    """What the deterministic pass over the suite's traces produced."""

    outcomes: list[TraceOutcome] = field(default_factory=list)
    items: dict[str, list[Item]] = field(default_factory=lambda: defaultdict(list))
    vetoed: set[str] = field(default_factory=set)
    slices: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[InputError] = field(default_factory=list)
    expected: dict[str, int | None] = field(default_factory=dict)


def _outcome(report: CheckReport) -> TraceOutcome:
    first = report.first_divergence
    return TraceOutcome(
        trace_id=report.trace_id, scenario_id=report.scenario_id, eligible=report.eligible,
        quality=report.quality_score,
        safety_critical_failures=len(report.vetoes),
        first_divergence=first.to_dict() if first else None,
        diagnosis=report.diagnosis())


def _from_turn(ps: PlannedScenario, report: CheckReport, div_turn: int) -> int:
    """The turn of the last passing checkpoint before the divergence (else the turn before)."""
    failed_turns = {f.turn for f in report.failures if f.check.startswith("checkpoint")}
    passing = [cp.after_turn for cp in ps.loaded.scenario.checkpoints
               if cp.after_turn < div_turn and cp.after_turn not in failed_turns]
    return max(passing) if passing else max(div_turn - 1, 0)


def collect(plan: Plan, store: Store, on_trace: Callable[[], None] | None = None,
            on_items: Callable[[list[Item]], None] | None = None,
            chunk: int = COLLECT_CHUNK, vetoed_out: set[str] | None = None) -> Collected:
    """Check every trace, extract its judge items, and store traces, scenarios and items.

    Items are stored (and handed to `on_items`, e.g. to start grading them) every `chunk`
    traces, after their traces' checks, so a verdict is routed knowing its trace's veto.
    """
    out = Collected()
    if vetoed_out is not None:
        out.vetoed = vetoed_out  # shared, so a caller sees vetoes as they are found
    pending: list[Item] = []

    def flush() -> None:
        if pending:
            store.save_items(pending)
            if on_items is not None:
                on_items(list(pending))
            pending.clear()

    n = 0
    for ps in plan.scenarios:
        sc = ps.loaded.scenario
        out.expected[sc.id] = ps.repetitions
        text = Path(ps.loaded.file).read_text(encoding="utf-8")
        store.save_scenario(sc.id, text, ps.loaded.file)
        for src in ps.sources:
            for trace in iter_source(src, out.errors):
                try:
                    report = run_checks(ps.loaded, trace)
                except InputError as exc:  # e.g. a trace of another scenario
                    out.errors.append(exc)
                    continue
                outcome = _outcome(report)
                outcome.scenario_id = sc.id
                out.outcomes.append(outcome)
                store.save_trace(trace)
                if report.vetoed:
                    out.vetoed.add(trace.trace_id)
                first = report.first_divergence
                if first is not None and first.seq is not None:
                    events = [e.model_dump(mode="json", exclude_none=True)
                              for e in trace.events]
                    out.slices[trace.trace_id] = minimal_slice(
                        events, _from_turn(ps, report, first.turn or 0), first.seq)
                if ps.rubrics:
                    for item in extract_items(ps.loaded, trace, ps.rubrics):
                        out.items[item.rubric].append(item)
                        pending.append(item)
                n += 1
                if n % chunk == 0:
                    flush()
                if on_trace is not None:
                    on_trace()
    flush()
    return out


class _Sink:
    """Buffers verdicts and stores them (routed) in small transactions."""

    def __init__(self, store: Store, run_id: str, vetoed: set[str], policy: RoutingPolicy,
                 on_stored: Callable[[int], None] | None,
                 calls: WriteBehindCache | None = None) -> None:
        self.store, self.run_id, self.vetoed, self.policy = store, run_id, vetoed, policy
        self.calls = calls  # flushed first: a verdict is never stored before its call
        self.buf: list[Verdict] = []
        self.last = time.monotonic()
        self.on_stored = on_stored

    def add(self, v: Verdict) -> None:
        self.buf.append(v)
        if len(self.buf) >= FLUSH_EVERY or time.monotonic() - self.last > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            if self.calls is not None:
                self.calls.flush()
            batch, self.buf = self.buf, []
            self.store.save_verdicts(batch, self.run_id, vetoed_traces=self.vetoed,
                                     policy=self.policy)
            if self.on_stored is not None:
                self.on_stored(len(batch))
        self.last = time.monotonic()


def grade_pending(plan: Plan, collected: Collected, store: Store, run_id: str,
                  provider: Provider, settings: Settings, opts: RunOptions,
                  on_stored: Callable[[int], None] | None = None,
                  batch_counts: dict[str, int] | None = None) -> GradingStats:
    """Grade every item of the run that has no stored verdict yet."""
    done = store.stored_item_ids(run_id)
    batch_counts = batch_counts if batch_counts is not None else {}
    policy = RoutingPolicy(audit_share=opts.audit_share, double_share=opts.double_share)
    calls = WriteBehindCache(store.calls)
    sink = _Sink(store, run_id, collected.vetoed, policy, on_stored, calls)
    stats = GradingStats()
    for rubric, items in collected.items.items():
        pending = [it for it in items if it.item_id not in done]
        if not pending:
            continue
        prompt = plan.prompts[rubric]
        store.save_prompt(prompt)
        if opts.batch and not opts.replay_only:
            from judge.suite.batch import prefill_by_batch

            counts = prefill_by_batch(store, run_id, rubric, prompt, pending, provider,
                                      settings.model_params(),
                                      redaction=settings.redaction(),
                                      poll_base_delay=opts.batch_poll_s)
            for k, v in counts.items():
                batch_counts[k] = batch_counts.get(k, 0) + v
        try:
            asyncio.run(grade_items(
                pending, prompt, provider, calls, params=settings.model_params(),
                concurrency=settings.concurrency, rpm=settings.rpm, retries=settings.retries,
                replay_only=opts.replay_only, on_result=sink.add, stats=stats,
                redaction=settings.redaction()))
        finally:
            sink.flush()
    calls.close()
    return stats


def summarize(plan: Plan, collected: Collected, store: Store, run_id: str,
              judge_name: str, model_spec: str, stats: GradingStats | None,
              opts: RunOptions) -> dict[str, Any]:
    """The run's summary: per-scenario pass counts, clusters, judge contribution, gate."""
    verdicts = run_verdicts(store, run_id)
    judge = JudgeContribution(judge=judge_name, items=len(verdicts))
    per_trace: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        per_trace[v.item_id.rpartition("#")[0]].append(v)
        if v.label == "unscored":
            judge.unscored += 1
        if v.overruled:
            judge.overruled += 1
        if v.route == "review":
            judge.review += 1
        elif v.route == "auto_accept":
            judge.auto_accepted += 1
        if v.label == "fail":
            judge.fails += 1
        if v.route_reason == UNCALIBRATED:
            judge.uncalibrated += 1
    if stats is not None:
        judge.provider_calls = stats.provider_calls
        judge.cached = stats.cache_hits
    for o in collected.outcomes:
        vs = per_trace.get(o.trace_id, [])
        o.judge_fails = sum(1 for v in vs if v.label == "fail" and v.route == "auto_accept")
        o.judge_pending = sum(1 for v in vs if v.route == "review")
    gate = evaluate_gate(collected.outcomes, judge, plan.suite.release, collected.expected,
                         require_calibrated=opts.require_calibrated)
    clusters = cluster_failures(collected.outcomes, collected.slices)
    return {
        "run_id": run_id,
        "suite": plan.suite_name,
        "manifest": str(plan.manifest_path),
        "judge": {"name": judge_name, "model": model_spec,
                  "items": judge.items, "auto_accepted": judge.auto_accepted,
                  "review": judge.review, "unscored": judge.unscored,
                  "overruled": judge.overruled, "fails": judge.fails,
                  "uncalibrated": judge.uncalibrated, "review_share": judge.review_share,
                  "provider_calls": judge.provider_calls, "cache_hits": judge.cached},
        "gate": gate.to_dict(),
        "scenarios": {s: {"passed": p, "total": t, "text": f"{p}/{t}"}
                      for s, (p, t) in gate.scenario_pass.items()},
        "clusters": [c.to_dict() for c in clusters],
        "traces": [{"trace_id": o.trace_id, "scenario": o.scenario_id, "passed": o.passed,
                    "eligible": o.eligible, "quality": o.quality,
                    "safety_critical_failures": o.safety_critical_failures,
                    "judge_fails": o.judge_fails, "judge_pending": o.judge_pending,
                    "first_divergence": o.first_divergence} for o in collected.outcomes],
        "input_errors": [e.message for e in collected.errors],
        "uncalibrated_note": (f"{judge.uncalibrated} verdict(s) came from a prompt/model with "
                              "no calibration record; all were sent to human review"
                              if judge.uncalibrated else None),
    }


def check_and_grade(plan: Plan, store: Store, run_id: str, provider: Provider,
                    settings: Settings, opts: RunOptions,
                    on_trace: Callable[[], None] | None = None,
                    on_items_total: Callable[[int], None] | None = None,
                    on_stored: Callable[[int], None] | None = None,
                    ) -> tuple[Collected, GradingStats]:
    """Check the suite's traces and grade their items, overlapping the two.

    Batch mode needs every item before it submits, so it checks first, then grades.
    """
    from judge.suite.pipeline import PipelinedGrader

    if opts.batch:
        collected = collect(plan, store, on_trace)
        if on_items_total is not None:
            on_items_total(sum(len(v) for v in collected.items.values()))
        stats = grade_pending(plan, collected, store, run_id, provider, settings, opts,
                              on_stored=on_stored)
        return collected, stats
    policy = RoutingPolicy(audit_share=opts.audit_share, double_share=opts.double_share)
    vetoed: set[str] = set()  # filled by collect before a vetoed trace's items are graded
    calls = WriteBehindCache(store.calls)
    sink = _Sink(store, run_id, vetoed, policy, on_stored, calls)
    for rubric in {r for ps in plan.scenarios for r in ps.rubrics}:
        store.save_prompt(plan.prompts[rubric])
    grader = PipelinedGrader(calls, plan.prompts, provider, settings,
                             replay_only=opts.replay_only, on_result=sink.add,
                             skip=store.stored_item_ids(run_id))
    total = 0

    def on_items(items: list[Item]) -> None:
        nonlocal total
        total += len(items)
        if on_items_total is not None:
            on_items_total(total)
        grader.submit(items)

    try:
        collected = collect(plan, store, on_trace, on_items=on_items, vetoed_out=vetoed)
        stats = grader.wait()
    finally:
        grader.close()
        sink.flush()
        calls.close()
    return collected, stats
