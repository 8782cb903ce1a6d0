"""`judge run SUITE_FILE`: the nightly job. Exit 0 gate passed, 1 gate failed, 2 bad input,
130 interrupted (resumable).

`judge run --resume RUN_ID` continues an interrupted run (SIGINT or SIGKILL) without
repeating a stored provider call or duplicating a verdict; `--resume last` takes the newest
unfinished run (of `--suite`, if given; `judge runs list --status running` lists them).
`--junit FILE` writes JUnit XML and `--summary-md FILE` appends the Markdown summary (a CI
step summary such as `$GITHUB_STEP_SUMMARY`), both before the exit code is decided.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from judge.cli.common import (
    JURY_OPTION,
    SAMPLES_OPTION,
    TEMPERATURE_OPTION,
    cli_errors,
    die,
    jury_list,
    warn,
)
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, float_option
from judge.errors import InputError
from judge.outputs import check_output, is_stdout, write_output
from judge.settings import Settings


class RunFormat(StrEnum):
    text = "text"
    json = "json"


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """Progress bars on stderr (traces checked; items graded), as RunHooks."""
    from judge.suite.run import RunHooks

    if not enabled or not sys.stderr.isatty():
        yield RunHooks()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from judge.cli.console import console

    progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console(stderr=True), transient=True, redirect_stdout=False)
    progress.start()
    traces = progress.add_task("checking traces", total=None)
    items = progress.add_task("grading items", total=0)
    try:
        yield RunHooks(on_start=lambda n: progress.advance(items, n),
                       on_trace=lambda: progress.advance(traces),
                       on_items=lambda n: progress.update(items, total=n),
                       on_verdicts=lambda n: progress.advance(items, n))
    finally:
        progress.stop()


def run(
    suite_file: Path | None = typer.Argument(None, help="the suite manifest (YAML)"),
    suite: str | None = typer.Option(None, "--suite", help="which suite of the manifest"),
    model: str | None = typer.Option(None, "--model", help="judge model spec, e.g. "
                                     "openai:gpt-4.1-mini, anthropic:…, heuristic, or a "
                                     "jury: 'jury\\[vote_share]:<model>+<model>\\[*k]'"),
    jury: list[str] = JURY_OPTION,
    samples: int | None = SAMPLES_OPTION,
    temperature: float | None = TEMPERATURE_OPTION,
    base_url: str | None = typer.Option(None, "--base-url",
                                        help="OpenAI-compatible server (vLLM, Ollama, …)"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    rpm: float | None = float_option(None, "--rpm", lo=0.0, hi=1e9, lo_open=True,
                                     help="requests per minute limit"),
    replay_only: bool = typer.Option(False, "--replay-only",
                                     help="never call a provider; uncached items unscored"),
    require_calibrated: bool = typer.Option(False, "--require-calibrated",
                                            help="fail the gate on uncalibrated verdicts"),
    resume: str | None = typer.Option(None, "--resume", help="continue run RUN_ID ('last': "
                                      "the newest unfinished run, of --suite if given)"),
    database: str | None = typer.Option(None, "--db", help=DB_HELP),
    audit_share: float = float_option(0.05, "--audit-share", lo=0.0, hi=1.0,
                                      help="share of auto-accepted verdicts sent to review"),
    distributed: bool = typer.Option(False, "--distributed", help="enqueue the items for "
                                     "`judge worker` processes sharing this database"),
    local_worker: bool = typer.Option(True, "--local-worker/--no-local-worker",
                                      help="with --distributed, also grade in this process"),
    batch: bool = typer.Option(False, "--batch", help="grade through the OpenAI Batch API "
                               "or Anthropic Message Batches (resumable by batch id)"),
    batch_poll: float = float_option(5.0, "--batch-poll", lo=0.0, hi=A_WEEK_S,
                                     help="first wait between batch status polls (seconds)"),
    fmt: RunFormat = typer.Option(RunFormat.text, "--format"),
    no_progress: bool = typer.Option(False, "--no-progress"),
    allow_outside: bool = typer.Option(False, "--allow-outside",
                                       help="let the manifest name scenarios and traces "
                                            "outside its own directory"),
    junit: Path | None = typer.Option(None, "--junit", help="write JUnit XML here: a test "
                                      "case per trace and one for the release gate"),
    summary_md: Path | None = typer.Option(None, "--summary-md", help="append the Markdown "
                                           "summary here (e.g. $GITHUB_STEP_SUMMARY)"),
) -> None:
    """Run a suite: checks, judge items, route, store, and apply the release gate."""
    from judge.grading.jury import is_jury
    from judge.suite.run import (
        RunOptions,
        SuiteInterrupted,
        how_to_finish,
        resumed,
        run_suite,
    )

    with cli_errors():
        settings = Settings.load(model=model, base_url=base_url, concurrency=concurrency,
                                 rpm=rpm, database_url=database, jury=jury_list(jury),
                                 samples=samples, temperature=temperature)
        for out in (junit, summary_md):
            if out is not None:
                check_output(out)
        with open_database(settings=settings) as store:
            if resume == "last":
                resume = _last_unfinished(store, suite)
            if resume is not None:
                before = resumed(store, resume)
                if before.manifest is None and before.command == "grade":
                    die(f"run {resume} has no suite manifest to resume from; "
                        f"{how_to_finish(resume, {'command': 'grade'})}")
                suite_file = suite_file or before.manifest
                suite = suite or before.suite
                allow_outside = allow_outside or before.allow_outside
                if model is not None and before.model is not None and model != before.model \
                        and not (is_jury(model) and not is_jury(before.model)):
                    # the stored judge (or jury) grades the rest: an other --model would
                    # grade only some items, or none, without a word
                    die(f"run {resume} was graded by {before.judged_by}; resume it with the same "
                        f"model (or without --model), or start a new run")
                model = model or before.model
                was = (before.params or {}).get("temperature")
                if temperature is not None and was is not None and temperature != was:
                    # an explicit --temperature 0 equals the default: say so, not ignore it
                    die(f"run {resume} was graded at temperature {was}; resume it at the same "
                        f"temperature (or without --temperature)")
            if suite_file is None:
                die("give a suite manifest (SUITE_FILE) or --resume RUN_ID")
            from judge.providers.registry import default_model_spec
            from judge.suite.plan import make_plan

            plan = make_plan(suite_file, suite, allow_outside=allow_outside)
            spec = model or settings.model or plan.model_spec or default_model_spec(settings)
            opts = RunOptions(replay_only=replay_only, require_calibrated=require_calibrated,
                              resume=resume, audit_share=audit_share, batch=batch,
                              batch_poll_s=batch_poll,
                              distributed=distributed, local_worker=local_worker)
            started = time.monotonic()
            try:
                with _progress(not no_progress) as hooks:
                    summary = run_suite(plan, store, settings, opts, spec, hooks)
            except SuiteInterrupted as stop:
                warn(f"interrupted; everything graded so far is stored. Resume with: "
                     f"judge run --resume {stop.run_id}")
                raise typer.Exit(130) from None
    from judge.suite.report import render_text

    with cli_errors():
        _ci_outputs(summary, junit, summary_md, time.monotonic() - started)
    if fmt is RunFormat.json:
        echo(json.dumps(summary, indent=2, default=str))
    else:
        echo(render_text(summary))
    if summary["input_errors"]:
        for err in summary["input_errors"]:
            warn(f"error: {err}")
        raise typer.Exit(2)
    raise typer.Exit(0 if summary["gate"]["passed"] else 1)


def _last_unfinished(store: Any, suite: str | None) -> str:
    last = store.last_unfinished_run(suite=suite)
    if last is None:
        raise InputError("no unfinished run to resume" + (f" of suite '{suite}'" if suite
                                                          else "") + f" in {store.where}",
                         field="--resume")
    warn(f"resuming {last['run_id']} ({last['status']}, started "
         f"{last['started_at']:%Y-%m-%d %H:%M:%S} UTC)")
    return str(last["run_id"])


def _ci_outputs(summary: dict[str, Any], junit: Path | None, summary_md: Path | None,
                seconds: float) -> None:
    """The JUnit file and the step summary (appended: a CI step summary file collects what
    every step writes to it)."""
    if junit is not None:
        from judge.suite.junit import to_junit

        write_output(junit, to_junit(summary, seconds=seconds))
    if summary_md is not None:
        from judge.suite.report import render_markdown

        try:
            with summary_md.open("a", encoding="utf-8") as f:
                f.write(render_markdown(summary).rstrip("\n") + "\n\n")
        except OSError as exc:
            raise InputError(f"{summary_md}: cannot write ({exc.strerror})",
                             field="--summary-md") from None


def _json_dump(s: dict[str, Any]) -> str:
    return json.dumps(s, indent=2, default=str)


def report_run(
    run_id: str = typer.Argument(..., help="the run to report"),
    fmt: str = typer.Option("md", "--format", help="md, html, json or text"),
    out: Path | None = typer.Option(None, "-o", "--output", help="write here (default stdout)"),
    database: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Write a stored run's report (md, html, json or text)."""
    from judge.suite.report import render_markdown, render_text
    from judge.suite.run import stored_summary

    with cli_errors():
        renderers: dict[str, Callable[[dict[str, Any]], str]] = {
            "md": render_markdown, "text": render_text, "json": _json_dump}
        if fmt not in (*renderers, "html"):
            raise InputError(f"unknown format '{fmt}' (md, html, json, text)", field="--format")
        if out is not None:
            check_output(out)
        with open_database(database) as store:
            summary = stored_summary(store, run_id)
            if fmt == "html":  # the page also shows earlier runs, labels and calibration
                from judge.reports.run import run_report, to_html

                doc = to_html(run_report(store, run_id, summary))
            else:
                doc = renderers[fmt](summary)
        if out is None:
            echo(doc)
        else:
            write_output(out, doc)
            echo(f"wrote {field(out)}", err=is_stdout(out))
