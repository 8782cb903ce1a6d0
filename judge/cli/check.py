"""`judge check SCENARIO TRACE...`: the deterministic checks, one report per trace.

Exit 0 when every trace is eligible, 1 when any is vetoed, 2 when any input was bad — every
valid trace is still checked and reported; each bad one is a single line on stderr.

`--format json` prints one object: {"scenario", "eligible" (all traces), "reports": [one
`CheckReport.to_dict()` per trace], "errors": [one line per bad input]}.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from judge.checks import CheckReport, run_checks
from judge.cli.common import cli_errors, warn
from judge.errors import InputError
from judge.ledger.loader import load_scenario
from judge.trace.loader import iter_trace_streams


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def check_files(scenario: Path, traces: list[Path]) -> tuple[list[CheckReport],
                                                            list[InputError]]:
    """Check every trace of every file; bad traces are returned as errors, not raised."""
    loaded = load_scenario(scenario)
    reports: list[CheckReport] = []
    errors: list[InputError] = []
    for path in traces:
        for stream in iter_trace_streams(path, errors):
            try:
                reports.append(run_checks(loaded, stream))
            except InputError as exc:
                errors.append(exc)
    return reports, errors


def check(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one"),
    traces: list[Path] = typer.Argument(..., help="trace files (.json or .jsonl)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
) -> None:
    """Run the deterministic checks: exit 0 all eligible, 1 any vetoed, 2 bad input."""
    with cli_errors():
        reports, errors = check_files(scenario, traces)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps({
            "scenario": reports[0].scenario_id if reports else None,
            "eligible": all(r.eligible for r in reports),
            "reports": [r.to_dict() for r in reports],
            "errors": [e.message for e in errors],
        }, indent=2))
    elif reports:
        typer.echo("\n\n".join(r.diagnosis() for r in reports))
    for e in errors:
        warn(f"error: {e.message}")
    if errors:
        raise typer.Exit(2)
    if any(r.vetoed for r in reports):
        raise typer.Exit(1)
