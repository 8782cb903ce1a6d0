"""Run a suite: its traces through the grading pipeline (judge.pipeline), then the summary and
the release gate.

Everything is stored as it happens (traces, items, each provider call before its verdict,
verdicts in small batches), so a run killed at any point resumes with `--resume RUN_ID`
without repeating a stored provider call or duplicating a verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.errors import InputError, StoreError
from judge.grading.engine import GradingStats
from judge.grading.jury import Jury, build_judges, check_jury_rubrics
from judge.items import Item
from judge.pipeline.collect import Checker, Source, TraceChecked
from judge.pipeline.grade import GradeOptions, Hooks, fail_run, grade_traces
from judge.providers.base import Provider
from judge.routing import RoutingPolicy
from judge.settings import Settings
from judge.suite.plan import Plan, iter_source
from judge.suite.summary import Outcomes, summarize

if TYPE_CHECKING:
    from judge.store import Store


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

    @property
    def policy(self) -> RoutingPolicy:
        return RoutingPolicy(audit_share=self.audit_share, double_share=self.double_share)


@dataclass
class RunHooks:
    """Progress callbacks: the run started with `n` items already graded (a resume); a trace
    was checked; the number of items found so far; `n` verdicts were stored."""

    on_start: Callable[[int], None] | None = None
    on_trace: Callable[[], None] | None = None
    on_items: Callable[[int], None] | None = None
    on_verdicts: Callable[[int], None] | None = None


class SuiteInterrupted(Exception):
    """SIGINT during a run: everything graded so far is stored; the run is resumable."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} interrupted")
        self.run_id = run_id


@dataclass
class _Observed:
    outcomes: Outcomes = field(default_factory=Outcomes)
    on_trace: Callable[[], None] | None = None

    def __call__(self, tc: TraceChecked) -> None:
        self.outcomes(tc)
        if self.on_trace is not None:
            self.on_trace()


@dataclass(frozen=True)
class Resumed:
    """What a stored run was started with: its manifest (None: not a `judge run`), suite,
    model spec and whether its paths could leave the manifest's directory."""

    manifest: Path | None
    suite: str | None
    model: str | None
    allow_outside: bool = False
    params: dict[str, Any] | None = None  # the generation parameters it was graded with
    command: str | None = None  # the command that started it ("grade"; None: `judge run`)
    jury: str | None = None  # the jury it was graded by (its spec), if any

    @property
    def judged_by(self) -> str | None:
        """Who graded the run, for a person: its jury, else its model."""
        return self.jury or self.model


def resumed(store: Store, run_id: str) -> Resumed:
    """The stored run `run_id`'s manifest, suite and model (InputError if there is none)."""
    stored = store.get_run(run_id)
    if stored is None:
        raise InputError(f"no run '{run_id}' in {store.where}")
    config = stored.get("config") or {}
    manifest = config.get("manifest")
    params = config.get("params")
    return Resumed(Path(manifest) if manifest else None, config.get("suite"),
                   config.get("model"), bool(config.get("allow_outside", False)),
                   dict(params) if isinstance(params, dict) else None,
                   config.get("command"), _jury_name(config.get("jury")))


def _jury_name(stored: object) -> str | None:
    name = stored.get("name") if isinstance(stored, dict) else None
    return name if isinstance(name, str) else None


def stored_summary(store: Store, run_id: str) -> dict[str, Any]:
    """The summary stored on a finished run (InputError if there is no such run, or it has
    not finished)."""
    stored = store.get_run(run_id)
    if stored is None:
        raise InputError(f"no run '{run_id}' in {store.where}")
    summary = stored.get("summary") or {}
    if stored.get("status") == "failed" and "failed" in summary:
        raise InputError(f"run '{run_id}' failed: {summary['failed']} (what it stored is kept; "
                         f"judge run --resume {run_id} finishes a suite run)")
    if not summary:
        raise InputError(f"run '{run_id}' has no summary yet (status {stored['status']}; "
                         f"{how_to_finish(run_id, stored.get('config'))})")
    return dict(summary)


def how_to_finish(run_id: str, config: Mapping[str, Any] | None) -> str:
    """What finishes the unfinished run `run_id`, for a person: `judge run --resume` for a
    suite run; a run that `judge grade` started has no manifest to resume from, and the same
    `judge grade` command again finishes it (every call it stored is reused, not asked
    again)."""
    if (config or {}).get("command") == "grade":
        return ("it was started by judge grade: run the same judge grade command again to "
                "finish it (the provider calls it stored are reused, none is asked twice)")
    return f"finish it with judge run --resume {run_id}"


def sources(plan: Plan, errors: list[InputError]) -> list[Source]:
    """The plan's traces, scenario by scenario (read lazily; bad traces go to `errors`)."""
    return [Source(ps.loaded, (t for src in ps.sources for t in iter_source(src, errors)),
                   ps.rubrics) for ps in plan.scenarios]


def run_suite(plan: Plan, store: Store, settings: Settings, opts: RunOptions, model_spec: str,
              hooks: RunHooks | None = None) -> dict[str, Any]:
    """Check, grade, route and store the suite's traces as one run (or continue
    `opts.resume`); returns the summary, also stored on the run. SuiteInterrupted on SIGINT."""
    hooks = hooks or RunHooks()
    before = (store.get_run(opts.resume) or {}).get("config") or {} if opts.resume else {}
    if opts.resume:  # graded as it began: its generation parameters and its jury (or none)
        settings = settings.with_run_params(before.get("params"))
    # ConfigError before any call
    provider, jury = build_judges(settings, model_spec, stored=before.get("jury"),
                                  resumed=bool(opts.resume))
    check_jury_rubrics(jury, sorted({r for ps in plan.scenarios for r in ps.rubrics}))
    if opts.batch:  # every judge that will be batched has a batch API, before a run starts
        from judge.providers.batch import batch_client

        rubrics = {r for ps in plan.scenarios for r in ps.rubrics}
        single = jury is None or not all(jury.spec.applies(r) for r in rubrics)
        for p in [*([provider] if single else []),
                  *(jury.providers.values() if jury is not None else ())]:
            batch_client(p)
    run_id = store.save_run(opts.resume, suite=plan.suite_name, config={
        "manifest": str(plan.manifest_path.resolve()), "suite": plan.suite_name,
        "model": model_spec, "replay_only": opts.replay_only,
        "params": settings.model_params().to_dict(),
        **({"jury": jury.spec.to_config()} if jury is not None else {}),
        **({"allow_outside": True} if plan.allow_outside else {})})
    if hooks.on_start is not None:
        hooks.on_start(len(store.stored_item_ids(run_id)))
    errors: list[InputError] = []
    observed = _Observed(on_trace=hooks.on_trace)
    used = {r: plan.prompts[r] for ps in plan.scenarios for r in ps.rubrics}
    try:
        if opts.distributed:
            checked = Checker(sources(plan, errors), store, errors=errors,
                              on_checked=observed, keep_events=True).run()
            stats = _distributed(store, run_id, checked.items, checked.vetoes, provider,
                                 jury, settings, opts)
        else:
            graded = grade_traces(
                sources(plan, errors), prompts=used, provider=provider, settings=settings,
                store=store, run_id=run_id, errors=errors, jury=jury,
                options=GradeOptions(replay_only=opts.replay_only, policy=opts.policy,
                                     batch=opts.batch, batch_poll_s=opts.batch_poll_s),
                hooks=Hooks(on_checked=observed, on_items=hooks.on_items,
                            on_verdicts=hooks.on_verdicts))
            stats = graded.stats
        everyone = jury is not None and all(jury.spec.applies(r) for r in used)
        summary = summarize(plan, observed.outcomes, errors, store, run_id,
                            jury.display_name if jury is not None and everyone
                            else provider.display_name,
                            jury.spec.name if jury is not None and everyone else model_spec,
                            stats, require_calibrated=opts.require_calibrated,
                            jury=jury.spec if jury is not None else None)
    except KeyboardInterrupt:
        store.finish_run(run_id, status="interrupted")
        raise SuiteInterrupted(run_id) from None
    except BaseException as exc:  # never left "running": failed, with the reason
        fail_run(store, run_id, exc)
        raise
    store.finish_run(run_id, status="finished", summary=summary)
    return summary


def _distributed(store: Store, run_id: str, items: Sequence[Item], vetoed: Collection[str],
                 provider: Provider, jury: Jury | None,
                 settings: Settings, opts: RunOptions) -> GradingStats:
    """Queue the run's items for `judge worker` processes, work alongside them (unless
    --no-local-worker) and wait until every item is graded."""
    from judge.pipeline.worker import RunProviders, enqueue_run, work_loop

    enqueue_run(store, run_id, items, vetoed)
    stats = GradingStats()
    if opts.local_worker:
        stats = work_loop(store, RunProviders(store, settings, provider, jury), settings,
                          run_id=run_id, stop_when_run_done=True, idle_exit_s=1e9,
                          policy=opts.policy)
    deadline = time.monotonic() + opts.wait_timeout_s
    while (left := store.work.outstanding(run_id)) > 0:
        if time.monotonic() > deadline:
            raise StoreError(f"{left} item(s) of run {run_id} still leased by workers after "
                             f"{opts.wait_timeout_s:.0f} s; resume with judge run --resume "
                             f"{run_id}")
        time.sleep(0.5)
    return stats
