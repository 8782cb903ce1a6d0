"""`judge grade SCENARIO TRACE...`: deterministic checks first, then the judge on every item.

Everything that can be wrong with the input (scenario, rubric, prompt file, model spec,
settings, cache) is found before any provider call. Bad traces are reported one line each
and the others are graded. Verdicts on a vetoed trace are kept but marked overruled.
Exit: 0 all graded and nothing failed; 1 a trace was vetoed or a verdict is fail;
2 bad input (also when some traces could not be read, after grading the others).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judge.cli.common import (
    JURY_OPTION,
    SAMPLES_OPTION,
    TEMPERATURE_OPTION,
    cli_errors,
    die,
    jury_list,
    load_valid_scenario,
    warn,
)
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP
from judge.cli.numbers import float_option
from judge.errors import ConfigError, InputError
from judge.formats import Verdict
from judge.outputs import check_output, is_stdout, write_output
from judge.safe_text import json_safe
from judge.settings import Settings

if TYPE_CHECKING:
    from judge.grading.engine import GradingStats
    from judge.grading.jury import Jury
    from judge.ledger import LoadedScenario
    from judge.pipeline import Checked, Graded
    from judge.prompts import Prompt
    from judge.providers.base import Provider

PROGRESS_MIN_ITEMS = 20


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def grade(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one."),
    traces: list[Path] = typer.Argument(..., help="Trace files (.json or .jsonl)."),
    rubric: list[str] = typer.Option(
        [], "--rubric", "-r", help="Rubric to grade (repeatable; default: the scenario's)."),
    model: str | None = typer.Option(
        None, "--model", "-m", help="openai:<model>, anthropic:<model>, heuristic, scripted, "
        "or a jury: 'jury\\[vote_share]:<model>+<model>\\[*k]'."),
    jury: list[str] = JURY_OPTION,
    samples: int | None = SAMPLES_OPTION,
    temperature: float | None = TEMPERATURE_OPTION,
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, help="Requests in flight."),
    rpm: float | None = float_option(None, "--rpm", lo=0.0, hi=1e9, lo_open=True,
                                     help="Requests per minute limit."),
    retries: int | None = typer.Option(None, "--retries", min=0, help="Retries per call."),
    replay_only: bool = typer.Option(
        False, "--replay-only", help="Never call a provider; uncached items end unscored."),
    cache: Path | None = typer.Option(
        None, "--cache", help="Keep provider calls in this JSONL file instead of the "
        "database (file mode: nothing is stored in the database)."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="Write verdicts JSONL here (- for stdout)."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="Progress bar (default: on a terminal)."),
) -> None:
    """Grade the judge items of traces against a scenario, after the deterministic checks."""
    from judge.grading.jury import build_judges, check_jury_rubrics
    from judge.prompts import load_prompt
    from judge.providers.registry import default_model_spec

    with cli_errors():
        if output is not None:
            check_output(output)  # before any provider call
        settings = Settings.load(model=model, base_url=base_url, concurrency=concurrency,
                                 rpm=rpm, retries=retries, database_url=db,
                                 jury=jury_list(jury), samples=samples, temperature=temperature)
        spec = settings.model or default_model_spec(settings)
        provider, panel = build_judges(settings, spec)
        loaded = load_valid_scenario(scenario)  # as `judge validate` checks it
        rubrics = _rubrics(loaded, rubric)
        check_jury_rubrics(panel, rubrics)
        prompts = {name: load_prompt(name) for name in rubrics}
        _warn_unused(loaded, rubrics)
        result, summary = _grade(loaded, traces, rubrics, prompts, provider, panel, spec,
                                 settings, cache, replay_only, progress)
        for err in result.errors:
            warn(f"error: {err.message}")
        if result.checked.n_traces == 0:
            if result.errors:  # each bad trace has had its one line
                raise typer.Exit(2)
            die("no traces in the given files")
        verdicts = result.verdicts
        if output is not None:
            # json_safe: C1, U+2028 and the like as \u escapes (same data), so a line-based
            # reader or a terminal (-o -) sees one inert line per verdict
            write_output(output, (json_safe(v.model_dump_json()) + "\n" for v in verdicts))
        to_stderr = output is not None and is_stdout(output)  # stdout holds the verdicts
        if fmt is OutputFormat.json:
            echo(json.dumps({"summary": summary,
                             "verdicts": [v.model_dump(mode="json") for v in verdicts]},
                            indent=2), err=to_stderr)
        else:
            _print_text(verdicts, summary, err=to_stderr)
    if result.errors:
        raise typer.Exit(2)
    if result.checked.vetoes or summary["fail"]:
        raise typer.Exit(1)


def _grade(loaded: LoadedScenario, traces: list[Path], rubrics: list[str],
           prompts: dict[str, Prompt], provider: Provider, jury: Jury | None, spec: str,
           settings: Settings, cache: Path | None, replay_only: bool,
           progress: bool | None) -> tuple[Graded, dict[str, Any]]:
    """Grade through the pipeline, into the database (a run of its own) or, with --cache,
    into a JSONL call cache only; returns the result and the summary."""
    from judge.cli.database import open_database
    from judge.cli.progress import progress_bar
    from judge.pipeline import GradeOptions, Hooks, Source, grade_run, grade_traces
    from judge.trace import iter_traces

    errors: list[InputError] = []
    source = Source(loaded, (t for path in traces for t in iter_traces(path, errors)), rubrics)
    judge_name = jury.display_name if jury is not None and \
        all(jury.spec.applies(r) for r in rubrics) else provider.display_name
    with progress_bar(f"grading with {judge_name}", progress,
                      min_items=PROGRESS_MIN_ITEMS) as bar:
        stored = 0

        def on_verdicts(n: int) -> None:
            nonlocal stored
            stored += n
            for _ in range(n):
                bar.tick()

        def on_all_checked(n: int) -> None:
            bar.total(n)
            for _ in range(stored):
                bar.tick()

        hooks = Hooks(on_verdicts=on_verdicts, on_all_checked=on_all_checked)
        if cache is not None:  # file mode: nothing is stored in the database
            from judge.grading.cache import JsonlCache

            with JsonlCache(cache) as calls:
                result = grade_traces([source], prompts=prompts, provider=provider,
                                      settings=settings, cache=calls, errors=errors,
                                      hooks=hooks, jury=jury, options=GradeOptions(
                                          replay_only=replay_only, policy=None,
                                          keep_verdicts=True))
            return result, _summary(result.verdicts, provider, jury, result.stats,
                                    result.checked, rubrics, prompts, replay_only)
        with open_database(settings=settings) as store:
            config: dict[str, Any] = {"command": "grade", "model": spec,
                                      "params": settings.model_params().to_dict()}
            if jury is not None:
                config["jury"] = jury.spec.to_config()
            result = grade_run([source], store=store, config=config,
                               prompts=prompts, provider=provider, settings=settings,
                               errors=errors, hooks=hooks, jury=jury,
                               options=GradeOptions(replay_only=replay_only, keep_verdicts=True))
            summary = _summary(result.verdicts, provider, jury, result.stats, result.checked,
                               rubrics, prompts, replay_only)
            summary["run_id"] = result.run_id
            summary["database"] = store.where
    return result, summary


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


def _summary(verdicts: list[Verdict], provider: Provider, jury: Jury | None,
             stats: GradingStats, checked: Checked, rubrics: list[str],
             prompts: dict[str, Prompt], replay_only: bool) -> dict[str, Any]:
    count = {"pass": 0, "fail": 0, "unscored": 0}
    for v in verdicts:
        count[v.label] += 1
    jury_part: dict[str, Any] = {}
    if jury is not None:
        from judge.routing import is_split

        jury_part["jury"] = {**jury.spec.to_config(), "seats": jury.spec.seats,
                             "jurors": [j.id for j in jury.spec.jurors()]}
        # splits a person must look at: a vetoed trace's verdicts are overruled, not reviewed
        jury_part["jury_splits"] = sum(1 for v in verdicts if is_split(v) and not v.overruled)
    everyone = jury is not None and all(jury.spec.applies(r) for r in rubrics)
    return {
        "judge": jury.display_name if jury is not None and everyone else provider.display_name,
        "model": jury.spec.name if jury is not None and everyone else provider.spec,
        "prompts": {r: f"{prompts[r].version} {prompts[r].hash}" for r in rubrics},
        "traces": checked.n_traces, "vetoed_traces": len(checked.vetoes),
        "items": len(verdicts), **count,
        "overruled": sum(v.overruled for v in verdicts), "replay_only": replay_only,
        **{k: v for k, v in stats.to_dict().items() if k != "items"},
        **jury_part,
    }


def _print_text(verdicts: list[Verdict], s: dict[str, Any], *, err: bool = False) -> None:
    """One line per verdict that is not a plain pass; ids, keys, rationales and reasons come
    from traces and judges: each is shown on one line, nothing in it live (`field`)."""
    for v in verdicts:
        if v.label == "pass" and not v.overruled:
            continue
        head = f"{v.label.upper():8} {field(v.item_id)}"
        if v.label == "fail":
            head += (f"  key={field(v.violated_key)} evidence={v.evidence_event} "
                     f"conf={v.confidence}")
        if v.overruled:
            head += "  [overruled: veto]"
        why = v.rationale if v.label != "unscored" else v.reason
        echo(f"{head}  {field(why or '')}".rstrip(), err=err)
    if "run_id" in s:
        echo(f"stored as run {field(s['run_id'])} in {field(s['database'])} "
             "(review queue: judge review stats)", err=err)
    echo(
        f"graded {s['items']} items of {s['traces']} traces with {field(s['judge'])}: "
        f"{s['pass']} pass, {s['fail']} fail, {s['unscored']} unscored; "
        f"{s['vetoed_traces']} traces vetoed ({s['overruled']} verdicts overruled); "
        f"{s['provider_calls']} provider calls, {s['cache_hits']} cached, "
        f"{s['reasks']} re-asked", err=err)
    if "jury" in s:
        echo(f"jury {field(s['jury']['name'])}: {s.get('juror_verdicts', 0)} juror verdicts, "
             f"{s.get('jury_splits', 0)} split on traces not vetoed (a person decides those)",
             err=err)
