"""`judge validate SCENARIO...`: every cross-reference of each scenario, one line a problem.

A scenario still marked `status: draft` (what `judge init` writes) is valid but unreviewed:
a warning line names it and the exit code stays 0; with `--strict` it is a problem (exit 2).
"""

from __future__ import annotations

from pathlib import Path

import typer

from judge.checks import validate_scenario
from judge.cli.common import warn
from judge.drafting import unreviewed
from judge.errors import InputError
from judge.ledger.loader import load_scenario


def validate(
    scenarios: list[Path] = typer.Argument(..., help="scenario.yaml files or directories"),
    strict: bool = typer.Option(False, "--strict",
                                help="an unreviewed draft (status: draft) is a problem: "
                                     "exit 2"),
) -> None:
    """Check keys, tools, regexes and rubric names of scenarios: exit 0 valid, 2 problems."""
    problems = 0
    for path in scenarios:
        try:
            loaded = load_scenario(path)
        except InputError as exc:
            warn(f"error: {exc.message}")
            problems += 1
            continue
        found = validate_scenario(loaded)
        for err in found:
            warn(f"error: {err.message}")
        problems += len(found)
        draft = unreviewed(loaded)
        if draft is not None:
            warn(f"{'error' if strict else 'warning'}: {draft.message}")
            problems += strict
        if not found and (draft is None or not strict):
            typer.echo(f"{loaded.file}: ok ({loaded.scenario.id})")
    if problems:
        raise typer.Exit(2)
