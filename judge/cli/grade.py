"""`judge grade SCENARIO TRACE...`: deterministic checks first, then the judge on every item.

Everything that can be wrong with the input (scenario, rubric, prompt file, model spec,
settings, cache) is found before any provider call. Bad traces are reported one line each
and the others are graded. Verdicts on a vetoed trace are kept but marked overruled.
Exit: 0 all graded and nothing failed; 1 a trace was vetoed or a verdict is fail;
2 bad input (also when some traces could not be read, after grading the others).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from judge.checks import run_checks
from judge.cli.common import cli_errors, die, warn
from judge.cli.progress import progress_bar
from judge.errors import ConfigError, InputError
from judge.formats import Verdict
from judge.grading.cache import DEFAULT_CACHE_FILE, JsonlCache
from judge.grading.engine import GradingStats, grade_items
from judge.items import Item, extract_items
from judge.ledger import LoadedScenario, load_scenario
from judge.prompts import Prompt, load_prompt
from judge.providers.base import CallCache, Provider
from judge.providers.registry import default_model_spec, make_provider
from judge.settings import Settings
from judge.store import Store, open_store
from judge.trace import Trace, iter_traces

PROGRESS_MIN_ITEMS = 20


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


#: how the CLI opens a file call cache (`--cache FILE`); by default calls go to the database
CacheOpener = Callable[[Path | None, Settings], CallCache]


def open_jsonl_cache(path: Path | None, settings: Settings) -> CallCache:
    return JsonlCache(path or Path(DEFAULT_CACHE_FILE))


cache_opener: CacheOpener = open_jsonl_cache


def grade(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one."),
    traces: list[Path] = typer.Argument(..., help="Trace files (.json or .jsonl)."),
    rubric: list[str] = typer.Option(
        [], "--rubric", "-r", help="Rubric to grade (repeatable; default: the scenario's)."),
    model: str | None = typer.Option(
        None, "--model", "-m", help="openai:<model>, anthropic:<model>, heuristic, scripted."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, help="Requests in flight."),
    rpm: float | None = typer.Option(None, "--rpm", min=0.001, help="Requests per minute limit."),
    retries: int | None = typer.Option(None, "--retries", min=0, help="Retries per call."),
    replay_only: bool = typer.Option(
        False, "--replay-only", help="Never call a provider; uncached items end unscored."),
    cache: Path | None = typer.Option(
        None, "--cache", help="Keep provider calls in this JSONL file instead of the "
        "database (file mode: nothing is stored in the database)."),
    db: str | None = typer.Option(
        None, "--db", help="database URL (default JUDGE_DATABASE_URL or ./judge.db)"),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write verdicts JSONL here."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="Progress bar (default: on a terminal)."),
) -> None:
    """Grade the judge items of traces against a scenario, after the deterministic checks."""
    with cli_errors():
        settings = Settings.load(model=model, base_url=base_url, concurrency=concurrency,
                                 rpm=rpm, retries=retries, database_url=db)
        spec = settings.model or default_model_spec(settings)
        provider = make_provider(spec, settings)
        loaded = load_scenario(scenario)
        rubrics = _rubrics(loaded, rubric)
        prompts = {name: load_prompt(name) for name in rubrics}
        _warn_unused(loaded, rubrics)
        store = open_store(settings.database_url) if cache is None else None
        call_cache = store.calls if store is not None else cache_opener(cache, settings)

        bad: list[InputError] = []
        items: list[Item] = []
        graded_traces: list[Trace] = []
        vetoes: dict[str, str] = {}
        n_traces = 0
        for path in traces:
            for trace in iter_traces(path, bad):
                try:
                    report = run_checks(loaded, trace)
                    trace_items = extract_items(loaded, trace, rubrics)
                except InputError as exc:
                    bad.append(exc)
                    continue
                n_traces += 1
                graded_traces.append(trace)
                if report.vetoed:
                    first = report.first_divergence
                    vetoes[trace.trace_id] = first.message if first else "deterministic veto"
                items.extend(trace_items)
        for err in bad:
            warn(f"error: {err.message}")
        if n_traces == 0:
            if bad:  # each bad trace has had its one line
                raise typer.Exit(2)
            die("no traces in the given files")

        stats = GradingStats()
        show = progress if progress is not None else (
            sys.stderr.isatty() and len(items) > PROGRESS_MIN_ITEMS)
        verdicts = asyncio.run(_grade_all(items, prompts, provider, call_cache, settings,
                                          replay_only, stats, show))
        close = getattr(call_cache, "close", None)
        if callable(close):
            close()
        trace_of = {it.item_id: it.trace_id for it in items}
        for v in verdicts:
            trace_id = trace_of[v.item_id]
            if trace_id in vetoes:
                v.overruled = True
                v.route = "veto"
                v.route_reason = vetoes[trace_id]

        if store is not None:
            with store:
                run_id = _store_graded(store, graded_traces, items, prompts, verdicts,
                                       set(vetoes), spec)
        if output is not None:
            _write_jsonl(output, verdicts)
        summary = _summary(verdicts, provider, stats, n_traces, len(vetoes), rubrics, prompts,
                           replay_only)
        if store is not None:
            summary["run_id"] = run_id
            summary["database"] = store.where
        if fmt is OutputFormat.json:
            typer.echo(json.dumps({"summary": summary,
                                   "verdicts": [v.model_dump(mode="json") for v in verdicts]},
                                  indent=2))
        else:
            _print_text(verdicts, summary)
    if bad:
        raise typer.Exit(2)
    if vetoes or summary["fail"]:
        raise typer.Exit(1)


def _store_graded(store: Store, traces: list[Trace], items: list[Item],
                  prompts: dict[str, Prompt], verdicts: list[Verdict], vetoed: set[str],
                  spec: str) -> str:
    """Store the graded traces, items and routed verdicts as one run; review items queue."""
    run_id = store.save_run(suite=None, config={"command": "grade", "model": spec})
    for trace in traces:
        store.save_trace(trace)
    store.save_items(items)
    for prompt in prompts.values():
        store.save_prompt(prompt)
    store.save_verdicts(verdicts, run_id, vetoed_traces=vetoed)
    store.finish_run(run_id)
    return run_id


def _rubrics(loaded: LoadedScenario, asked: list[str]) -> list[str]:
    used = list(dict.fromkeys(u.rubric for u in loaded.scenario.judge))
    if not asked:
        if not used:
            raise ConfigError(f"{loaded.file}: the scenario names no judge rubrics "
                              "(field 'judge'); pass --rubric NAME")
        return used
    return list(dict.fromkeys(asked))


def _warn_unused(loaded: LoadedScenario, rubrics: list[str]) -> None:
    used = {u.rubric for u in loaded.scenario.judge}
    for name in rubrics:
        if name not in used:
            warn(f"rubric '{name}' is not used by scenario '{loaded.scenario.id}' "
                 f"(its rubrics: {', '.join(sorted(used)) or 'none'}); no items to grade for it")


async def _grade_all(items: list[Item], prompts: dict[str, Prompt], provider: Provider,
                     cache: CallCache, settings: Settings, replay_only: bool,
                     stats: GradingStats, show_progress: bool) -> list[Verdict]:
    by_id: dict[str, Verdict] = {}
    try:
        with progress_bar(f"grading with {provider.display_name}", show_progress,
                          total=len(items), min_items=0) as bar:
            for name, prompt in prompts.items():
                group = [it for it in items if it.rubric == name]
                if not group:
                    continue
                out = await grade_items(
                    group, prompt, provider, cache, params=settings.model_params(),
                    concurrency=settings.concurrency, rpm=settings.rpm,
                    retries=settings.retries, replay_only=replay_only,
                    on_result=bar.tick, stats=stats)
                by_id.update((it.item_id, v) for it, v in zip(group, out, strict=True))
    finally:
        await provider.aclose()
    return [by_id[it.item_id] for it in items]




def _write_jsonl(path: Path, verdicts: list[Verdict]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for v in verdicts:
                fh.write(v.model_dump_json() + "\n")
        tmp.replace(path)
    except OSError as exc:
        raise InputError(f"cannot write verdicts ({exc.strerror})", file=str(path)) from None


def _summary(verdicts: list[Verdict], provider: Provider, stats: GradingStats, n_traces: int,
             n_vetoed: int, rubrics: list[str], prompts: dict[str, Prompt],
             replay_only: bool) -> dict[str, Any]:
    count = {"pass": 0, "fail": 0, "unscored": 0}
    for v in verdicts:
        count[v.label] += 1
    return {
        "judge": provider.display_name, "model": provider.spec,
        "prompts": {r: f"{prompts[r].version} {prompts[r].hash}" for r in rubrics},
        "traces": n_traces, "vetoed_traces": n_vetoed, "items": len(verdicts), **count,
        "overruled": sum(v.overruled for v in verdicts), "replay_only": replay_only,
        **{k: v for k, v in stats.to_dict().items() if k != "items"},
    }


def _print_text(verdicts: list[Verdict], s: dict[str, Any]) -> None:
    for v in verdicts:
        if v.label == "pass" and not v.overruled:
            continue
        head = f"{v.label.upper():8} {v.item_id}"
        if v.label == "fail":
            head += f"  key={v.violated_key} evidence={v.evidence_event} conf={v.confidence}"
        if v.overruled:
            head += "  [overruled: veto]"
        why = v.rationale if v.label != "unscored" else v.reason
        typer.echo(f"{head}  {why or ''}".rstrip())
    if "run_id" in s:
        typer.echo(f"stored as run {s['run_id']} in {s['database']} "
                   "(review queue: judge review stats)")
    typer.echo(
        f"graded {s['items']} items of {s['traces']} traces with {s['judge']}: "
        f"{s['pass']} pass, {s['fail']} fail, {s['unscored']} unscored; "
        f"{s['vetoed_traces']} traces vetoed ({s['overruled']} verdicts overruled); "
        f"{s['provider_calls']} provider calls, {s['cache_hits']} cached, "
        f"{s['reasks']} re-asked")

