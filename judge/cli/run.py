"""`judge run SUITE_FILE`: the nightly job. Exit 0 gate passed, 1 gate failed, 2 bad input.

`judge run --resume RUN_ID` continues an interrupted run (SIGINT or SIGKILL) without
repeating a stored provider call or duplicating a verdict.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from judge.cli.common import cli_errors, die, warn
from judge.errors import InputError, StoreError
from judge.grading.engine import GradingStats
from judge.providers.base import Provider
from judge.providers.registry import default_model_spec, make_provider
from judge.settings import Settings
from judge.store.repo import Store, open_store
from judge.suite import work
from judge.suite.plan import Plan, make_plan
from judge.suite.report import render_text
from judge.suite.run import Collected, RunOptions, check_and_grade, collect, summarize


class RunFormat(StrEnum):
    text = "text"
    json = "json"


def _progress(enabled: bool) -> Progress | None:
    if not enabled:
        return None
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=None, transient=True,
                    redirect_stdout=False, disable=not sys.stderr.isatty())


def _distributed(store: Store, run_id: str, collected: Collected, provider: Provider,
                 settings: Settings, opts: RunOptions) -> GradingStats:
    """Enqueue the run's items for `judge worker` processes, work alongside them (unless
    --no-local-worker) and wait until every item is graded."""
    items = [it for its in collected.items.values() for it in its]
    work.enqueue(store, run_id, items, collected.vetoed)
    stats = GradingStats()
    if opts.local_worker:
        stats = work.work_loop(store, work.RunProviders(store, settings, provider), settings,
                               run_id=run_id, stop_when_run_done=True, idle_exit_s=1e9)
    deadline = time.monotonic() + opts.wait_timeout_s
    while (left := work.outstanding(store, run_id)) > 0:
        if time.monotonic() > deadline:
            raise StoreError(f"{left} item(s) of run {run_id} still leased by workers after "
                             f"{opts.wait_timeout_s:.0f} s; resume with judge run --resume "
                             f"{run_id}")
        time.sleep(0.5)
    return stats


def execute_run(plan: Plan, store: Store, settings: Settings, opts: RunOptions,
                model_spec: str, show_progress: bool) -> dict[str, Any]:
    provider = make_provider(model_spec, settings)  # ConfigError before any call
    run_id = store.save_run(opts.resume, suite=plan.suite_name, config={
        "manifest": str(plan.manifest_path.resolve()), "suite": plan.suite_name,
        "model": model_spec, "replay_only": opts.replay_only})
    progress = _progress(show_progress)
    on_trace: Callable[[], None] | None = None
    on_total: Callable[[int], None] | None = None
    on_stored: Callable[[int], None] | None = None
    try:
        if progress is not None:
            progress.start()
            t_traces = progress.add_task("checking traces", total=None)
            t_items = progress.add_task("grading items", total=0)
            progress.advance(t_items, len(store.stored_item_ids(run_id)))
            on_trace = lambda: progress.advance(t_traces)  # noqa: E731
            on_total = lambda n: progress.update(t_items, total=n)  # noqa: E731
            on_stored = lambda n: progress.advance(t_items, n)  # noqa: E731
        if opts.distributed:
            collected = collect(plan, store, on_trace)
            stats = _distributed(store, run_id, collected, provider, settings, opts)
        else:
            collected, stats = check_and_grade(plan, store, run_id, provider, settings, opts,
                                               on_trace, on_total, on_stored)
    except KeyboardInterrupt:
        store.finish_run(run_id, status="interrupted")
        warn(f"interrupted; everything graded so far is stored. Resume with: "
             f"judge run --resume {run_id}")
        raise typer.Exit(130) from None
    finally:
        if progress is not None:
            progress.stop()
    summary = summarize(plan, collected, store, run_id, provider.display_name, model_spec,
                        stats, opts)
    store.finish_run(run_id, status="finished", summary=summary)
    return summary


def run(
    suite_file: Path | None = typer.Argument(None, help="the suite manifest (YAML)"),
    suite: str | None = typer.Option(None, "--suite", help="which suite of the manifest"),
    model: str | None = typer.Option(None, "--model", help="judge model spec, e.g. "
                                     "openai:gpt-4.1-mini, anthropic:…, heuristic"),
    base_url: str | None = typer.Option(None, "--base-url",
                                        help="OpenAI-compatible server (vLLM, Ollama, …)"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    rpm: float | None = typer.Option(None, "--rpm", help="requests per minute limit"),
    replay_only: bool = typer.Option(False, "--replay-only",
                                     help="never call a provider; uncached items unscored"),
    require_calibrated: bool = typer.Option(False, "--require-calibrated",
                                            help="fail the gate on uncalibrated verdicts"),
    resume: str | None = typer.Option(None, "--resume", help="continue run RUN_ID"),
    database: str | None = typer.Option(None, "--db", help="database URL "
                                        "(default JUDGE_DATABASE_URL or ./judge.db)"),
    audit_share: float = typer.Option(0.05, "--audit-share", min=0.0, max=1.0,
                                      help="share of auto-accepted verdicts sent to review"),
    distributed: bool = typer.Option(False, "--distributed", help="enqueue the items for "
                                     "`judge worker` processes sharing this database"),
    local_worker: bool = typer.Option(True, "--local-worker/--no-local-worker",
                                      help="with --distributed, also grade in this process"),
    batch: bool = typer.Option(False, "--batch", help="grade through the OpenAI Batch API "
                               "or Anthropic Message Batches (resumable by batch id)"),
    batch_poll: float = typer.Option(5.0, "--batch-poll", min=0.0,
                                     help="first wait between batch status polls (seconds)"),
    fmt: RunFormat = typer.Option(RunFormat.text, "--format"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    """Run a suite: checks, judge items, route, store, and apply the release gate."""
    with cli_errors():
        settings = Settings.load(model=model, base_url=base_url, concurrency=concurrency,
                                 rpm=rpm, database_url=database)
        store = open_store(settings.database_url)
        with store:
            if resume is not None:
                stored = store.get_run(resume)
                if stored is None:
                    die(f"no run '{resume}' in {store.where}")
                suite_file = suite_file or Path(stored["config"]["manifest"])
                suite = suite or stored["config"].get("suite")
                model = model or stored["config"].get("model")
            if suite_file is None:
                die("give a suite manifest (SUITE_FILE) or --resume RUN_ID")
            plan = make_plan(suite_file, suite)
            spec = model or settings.model or plan.model_spec or default_model_spec(settings)
            opts = RunOptions(replay_only=replay_only, require_calibrated=require_calibrated,
                              resume=resume, audit_share=audit_share, batch=batch,
                              batch_poll_s=batch_poll,
                              distributed=distributed, local_worker=local_worker)
            summary = execute_run(plan, store, settings, opts, spec, not no_progress)
    if fmt is RunFormat.json:
        typer.echo(json.dumps(summary, indent=2, default=str))
    else:
        typer.echo(render_text(summary))
    if summary["input_errors"]:
        for err in summary["input_errors"]:
            warn(f"error: {err}")
        raise typer.Exit(2)
    raise typer.Exit(0 if summary["gate"]["passed"] else 1)


def _json_dump(s: dict[str, Any]) -> str:
    return json.dumps(s, indent=2, default=str)


def report_run(
    run_id: str = typer.Argument(..., help="the run to report"),
    fmt: str = typer.Option("md", "--format", help="md, html, json or text"),
    out: Path | None = typer.Option(None, "-o", "--output", help="write here (default stdout)"),
    database: str | None = typer.Option(None, "--db"),
) -> None:
    """Write a stored run's report (md, html, json or text)."""
    from judge.suite.report import render_html, render_markdown

    with cli_errors():
        with open_store(database) as store:
            stored = store.get_run(run_id)
            where = store.where
        if stored is None:
            die(f"no run '{run_id}' in {where}")
        summary = stored.get("summary") or {}
        if not summary:
            die(f"run '{run_id}' has no summary yet (status {stored['status']}; finish it "
                f"with judge run --resume {run_id})")
        renderers: dict[str, Callable[[dict[str, Any]], str]] = {
            "md": render_markdown, "html": render_html, "text": render_text,
            "json": _json_dump}
        if fmt not in renderers:
            raise InputError(f"unknown format '{fmt}' (md, html, json, text)", field="--format")
        doc = renderers[fmt](summary)
        if out is None:
            typer.echo(doc)
        else:
            out.write_text(doc, encoding="utf-8")
            typer.echo(f"wrote {out}")
