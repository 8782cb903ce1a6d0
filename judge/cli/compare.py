"""`judge compare BASELINE CANDIDATE`: two agent versions on the same tasks, task by task.

Each side is a set of traces — a trace file, a directory of `.json`/`.jsonl` files, or a
quoted glob — checked against `--scenario` (repeatable) or the scenarios of a suite
(`--suite MANIFEST [--suite-name NAME]`), or a stored run (`run:RUN_ID`, or a bare run id
that is no file). `--model` also grades both sides' judge items (each side a stored run).

Exit 0 whatever changed, unless `--fail-on broken|signature|drift` (repeatable) names an
outcome that happened: then 1. 2 for bad input — every readable trace is still compared and
reported; each bad one is a line on stderr. `--format json` is the contract of
docs/formats.md ("`judge compare`"); `md` a CI step summary; `html` the page the run and
agreement reports share.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judge.cli.common import cli_errors, die, warn
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP
from judge.cli.numbers import SEED_MAX, int_option
from judge.errors import InputError

if TYPE_CHECKING:
    from judge.compare.scenarios import ScenarioSet
    from judge.compare.sides import Side
    from judge.settings import Settings
    from judge.store import Store


class CompareFormat(StrEnum):
    text = "text"
    json = "json"
    md = "md"
    html = "html"


class FailOn(StrEnum):
    broken = "broken"
    signature = "signature"
    drift = "drift"


def compare(
    baseline: str = typer.Argument(..., help="the known-good version: trace file, directory, "
                                   "quoted glob, or run:RUN_ID"),
    candidate: str = typer.Argument(..., help="the new version, given the same way"),
    scenario: list[Path] = typer.Option([], "--scenario", help="scenario.yaml or its "
                                        "directory the traces are checked against "
                                        "(repeatable)"),
    suite: Path | None = typer.Option(None, "--suite", help="a suite manifest: check the "
                                      "traces against its scenarios (and its tasks: maps)"),
    suite_name: str | None = typer.Option(None, "--suite-name", help="which suite of the "
                                          "manifest (default: its only one, or nightly)"),
    allow_outside: bool = typer.Option(False, "--allow-outside", help="let the manifest's "
                                       "scenario paths leave its directory"),
    model: str | None = typer.Option(None, "--model", "-m", help="also grade the judge items "
                                     "of both sides with this model (stored as two runs)"),
    fail_on: list[FailOn] = typer.Option([], "--fail-on", help="exit 1 when this happened: "
                                         "broken (a task), signature (a new failure "
                                         "signature), drift (a candidate trial); repeatable"),
    count_lookups: bool = typer.Option(False, "--count-lookups", help="a missing or extra "
                                       "read-only call counts as drift"),
    n_boot: int = typer.Option(10_000, "--n-boot", min=100, max=1_000_000,
                               help="bootstrap resamples (several trials per task)"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="bootstrap seed"),
    fmt: CompareFormat = typer.Option(CompareFormat.text, "--format",
                                      help="text, json, md or html"),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="write the report here (- for stdout)"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="--model: a progress bar while grading "
        "(default: on a terminal)"),
) -> None:
    """Compare two agent versions task by task: fixed, broken, new signatures, pass-rate change."""
    from judge.compare.pairing import CompareOptions, compare_sides
    from judge.compare.scenarios import load_scenarios
    from judge.outputs import check_output, write_output
    from judge.settings import Settings

    with cli_errors():
        if output is not None:
            check_output(output)
        scenarios = load_scenarios(scenario, suite, suite_name, allow_outside=allow_outside)
        settings = Settings.load(model=model, database_url=db)
        with _Stores(db, settings) as stores:
            sides = [_side(label, arg, scenarios, stores)
                     for label, arg in (("baseline", baseline), ("candidate", candidate))]
            for s in sides:
                for e in s.errors:
                    warn(f"error: {e.message}")
            if model is not None:
                _grade(sides, scenarios, stores.open(), settings, model, progress)
        opts = CompareOptions(policies=_policies(scenarios, sides), count_lookups=count_lookups,
                              n_boot=n_boot, seed=seed,
                              fail_on=tuple(f.value for f in fail_on))
        report = compare_sides(sides[0], sides[1], opts)
        if not report["paired_tasks"]:
            warn("no task is in both versions: nothing to compare (tasks pair by scenario "
                 "and metadata.task_id)")
        text = _render(report, fmt)
        if output is None:
            echo(text.rstrip("\n"))
        else:
            write_output(output, text if text.endswith("\n") else text + "\n")
            echo(f"wrote {field(output)}", err=True)
    if report["errors"]:
        raise typer.Exit(2)
    raise typer.Exit(1 if report["failed"] else 0)


def _render(report: dict[str, Any], fmt: CompareFormat) -> str:
    from judge.compare.render import render_markdown, render_text
    from judge.safe_text import json_safe

    if fmt is CompareFormat.json:
        return json_safe(json.dumps(report, indent=2, ensure_ascii=False, default=str,
                                    allow_nan=False))
    if fmt is CompareFormat.md:
        return render_markdown(report)
    if fmt is CompareFormat.html:
        from judge.reports.compare import to_html

        return to_html(report)
    return render_text(report)


class _Stores:
    """The database, opened only when a side is a stored run or --model grades."""

    def __init__(self, db: str | None, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.store: Store | None = None

    def open(self, *, create: bool = True) -> Store:
        if self.store is None:
            from judge.cli.database import open_database

            self.store = open_database(self.db, self.settings, create=create)
        return self.store

    def __enter__(self) -> _Stores:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.store is not None:
            self.store.close()


def _is_traces(arg: str) -> bool:
    import glob

    return os.path.lexists(arg) or (glob.has_magic(arg) and bool(glob.glob(arg)))


def _side(label: str, arg: str, scenarios: ScenarioSet, stores: _Stores) -> Side:
    """A side from its argument: traces (a path or glob that exists), else a stored run."""
    from judge.compare.sides import side_from_run, side_from_traces
    from judge.store.db import MissingDatabase

    if arg.startswith("run:") or not _is_traces(arg):
        run_id = arg.removeprefix("run:")
        try:
            store = stores.open(create=False)
        except MissingDatabase:
            raise InputError(f"{label} '{arg}': no such file, and no database to find a "
                             "stored run in") from None
        if store.get_run(run_id) is None:
            raise InputError(f"{label} '{arg}': no such file, and no run '{run_id}' in "
                             f"{store.where}")
        return side_from_run(label, store, run_id, scenarios)
    if not scenarios.scenarios:
        die(f"the {label}'s traces need the scenario they are runs of: --scenario PATH or "
            "--suite MANIFEST")
    return side_from_traces(label, [arg], scenarios)


def _grade(sides: list[Side], scenarios: ScenarioSet, store: Store, settings: Settings,
           model: str, progress: bool | None) -> None:
    from judge.cli.progress import Bar, progress_bar
    from judge.compare.judging import grade_side
    from judge.pipeline import Hooks

    spec = settings.model or model
    for s in sides:
        if s.kind == "run":
            warn(f"{s.label} is stored run {s.run_id}: its own verdicts count (--model grades "
                 "trace files only)")
            continue
        with progress_bar(f"grading the {s.label} with {spec}", progress) as bar:
            def ticks(n: int, bar: Bar = bar) -> None:
                for _ in range(n):
                    bar.tick()

            grade_side(s, scenarios, store, settings, spec,
                       Hooks(on_all_checked=bar.total, on_verdicts=ticks))


def _policies(scenarios: ScenarioSet, sides: list[Side]) -> dict[str, Any]:
    """Read-only tools per scenario (its rules), for the diff: the scenarios given, and those
    a stored run's manifest names."""
    from judge.diff import ReadOnlyPolicy

    found = {}
    for s in sides:
        found.update(s.scenarios.scenarios if s.scenarios is not None else {})
    found.update(scenarios.scenarios)
    return {sid: ReadOnlyPolicy(tuple(ld.scenario.rules.mutating_tools),
                                tuple(ld.scenario.rules.read_tools))
            for sid, ld in found.items()}
