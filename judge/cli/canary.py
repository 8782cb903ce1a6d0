"""`judge canary TRACE... --rollout NAME --stage 25% --threshold 0.9`: one look at a staged
rollout, for a deploy pipeline — promote, hold or roll back (judge.compare.canary).

The stage's traces are trace files (or directories, or quoted globs) checked against
`--scenario`/`--suite`, or a stored run (`--run RUN_ID`). Every look is stored per
`--rollout` in the database, so the next call decides on the whole rollout's evidence.

Exit codes: **0 promote**, **0 hold** (the pipeline waits; `"decision": "hold"` in the JSON,
and the text's first line says HOLD), **1 roll back** (a failed gate, and nothing else), 2 bad
input. `--show` prints a rollout's looks without taking one.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judge.cli.common import cli_errors, die, warn
from judge.cli.console import echo
from judge.cli.database import DB_HELP
from judge.cli.numbers import float_option

if TYPE_CHECKING:
    from judge.compare.canary import CanaryConfig
    from judge.store import Store


class CanaryFormat(StrEnum):
    text = "text"
    json = "json"


class Metric(StrEnum):
    pass_rate = "pass-rate"
    hard_failure_rate = "hard-failure-rate"
    baseline_diff = "baseline-diff"


def canary(
    traces: list[str] = typer.Argument(None, help="the stage's traces: files, directories or "
                                       "quoted globs (or --run)"),
    rollout: str = typer.Option(..., "--rollout", help="the rollout's name: its looks are "
                                "stored under it"),
    stage: str | None = typer.Option(None, "--stage", help="this stage's name, e.g. 5% "
                                     "(a name like 25% is also its traffic share)"),
    share: str | None = typer.Option(None, "--share", help="this stage's traffic share "
                                     "(0.25 or 25%)"),
    metric: Metric = typer.Option(Metric.pass_rate, "--metric", help="pass-rate, "
                                  "hard-failure-rate or baseline-diff"),
    threshold: float | None = float_option(None, "--threshold", lo=0.0, hi=1.0, lo_open=True,
                                           hi_open=True, help="least acceptable rate (most, "
                                           "for hard-failure-rate), e.g. 0.8"),
    min_sample: int = typer.Option(20, "--min-sample", min=1, max=10_000_000,
                                   help="fewest tasks a promotion needs"),
    alpha: float = float_option(0.05, "--alpha", lo=0.0, hi=0.5, lo_open=True, hi_open=True,
                                help="error bound of each decision over every look"),
    run: str | None = typer.Option(None, "--run", help="a stored run's traces instead of "
                                   "files"),
    scenario: list[Path] = typer.Option([], "--scenario", help="scenario the traces are "
                                        "runs of (repeatable)"),
    suite: Path | None = typer.Option(None, "--suite", help="a suite manifest whose "
                                      "scenarios the traces are runs of"),
    suite_name: str | None = typer.Option(None, "--suite-name", help="which suite of the "
                                          "manifest"),
    baseline: str | None = typer.Option(None, "--baseline", help="baseline-diff: the known-"
                                        "good version's traces (or run:RUN_ID)"),
    count_lookups: bool = typer.Option(False, "--count-lookups", help="baseline-diff: a "
                                       "missing or extra lookup counts as drift"),
    show: bool = typer.Option(False, "--show", help="print the rollout's looks; take none"),
    fmt: CanaryFormat = typer.Option(CanaryFormat.text, "--format", help="text or json"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """One look at a staged rollout: promote (exit 0), hold (exit 0) or roll back (exit 1)."""
    from judge.cli.database import open_database
    from judge.compare import canary as cn
    from judge.safe_text import json_safe
    from judge.settings import Settings

    with cli_errors():
        settings = Settings.load(database_url=db)
        if show:
            with open_database(db, settings, create=False) as store:
                record = cn.history(store, rollout)
        else:
            if stage is None:
                die("--stage is needed (the stage's name, e.g. 5%)")
            if threshold is None:
                die("--threshold is needed (the least acceptable rate; the most, for "
                    "hard-failure-rate)")
            if bool(traces) == bool(run):
                die("give the stage's traces, or --run RUN_ID (one of them)")
            config = cn.CanaryConfig(rollout, stage, cn.parse_share(stage, share),
                                     metric.value, threshold, alpha, min_sample)
            with open_database(db, settings) as store:
                record = _look(store, config, traces, run, scenario, suite, suite_name,
                               baseline, count_lookups)
    if fmt is CanaryFormat.json:
        echo(json_safe(json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False)))
    else:
        echo(cn.render_text(record))
    raise typer.Exit(cn.EXIT.get(str(record.get("decision")), 0) if not show else 0)


def _look(store: Store, config: CanaryConfig, traces: list[str], run: str | None,
          scenario: list[Path], suite: Path | None, suite_name: str | None,
          baseline: str | None, count_lookups: bool) -> dict[str, Any]:
    """Load the stage's traces (and the baseline's), score them under the metric, decide
    and store the look."""
    from judge.cli.compare import _is_traces
    from judge.compare import canary as cn
    from judge.compare.scenarios import load_scenarios
    from judge.compare.sides import side_from_run, side_from_traces
    from judge.diff import ReadOnlyPolicy
    from judge.errors import InputError, InputErrors

    scenarios = load_scenarios(scenario, suite, suite_name)
    if run is not None:
        if store.get_run(run) is None:
            raise InputError(f"no run '{run}' in {store.where}", field="--run")
        side = side_from_run("stage", store, run, scenarios)
    else:
        if not scenarios.scenarios:
            die("the stage's traces need the scenario they are runs of: --scenario PATH or "
                "--suite MANIFEST")
        side = side_from_traces("stage", traces, scenarios)
    base = None
    if baseline is not None:
        if baseline.startswith("run:") or not _is_traces(baseline):
            base = side_from_run("baseline", store, baseline.removeprefix("run:"), scenarios)
        else:
            base = side_from_traces("baseline", [baseline], scenarios)
    for s in (side, base):
        for w in (s.warnings if s is not None else []):
            warn(w)
    errors = [e for s in (side, base) if s is not None for e in s.errors]
    if errors:  # a look on part of a stage's traces would decide on the wrong sample
        raise InputErrors(errors)
    found = {**(side.scenarios.scenarios if side.scenarios else {}), **scenarios.scenarios}
    policies = {sid: ReadOnlyPolicy(tuple(ld.scenario.rules.mutating_tools),
                                    tuple(ld.scenario.rules.read_tools))
                for sid, ld in found.items()}
    now = cn.stage_tasks(side, config.metric, baseline=base, policies=policies,
                         count_lookups=count_lookups)
    return cn.take_look(store, config, now)
