"""`judge report agreement`: the agreement report from files, as md, json, csv or html.

    judge report agreement --labels L --verdicts V [--format md|json|csv|html] [-o FILE]
                           [--calibration calibration/] [--rubric R]
    judge report agreement --rubric R [--prompt-version V] [--model M] [--db URL]
                           [--format md|json|csv|html] [-o FILE]

    judge report drift --suite NAME [--manifest PATH] [--format html|md|json] [-o FILE]
                       [--window 5] [--db URL]

Without -o the report goes to stdout. HTML is one self-contained file (plots embedded).
Database mode (no --labels/--verdicts) reads the newest stored verdict per item of the rubric,
the items' label history, the calibration record of the verdicts' prompt and model (database,
then the committed files) and the live review-queue statistics of the rubric.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from judge.cli.common import cli_errors, die
from judge.cli.console import echo, field
from judge.cli.numbers import SEED_MAX, int_option
from judge.outputs import check_output, write_output

if TYPE_CHECKING:
    from judge.reports import AgreementReport

app = typer.Typer(help="Reports for people: agreement tables, plots and curves.",
                  no_args_is_help=True)


class ReportFormat(StrEnum):
    md = "md"
    json = "json"
    csv = "csv"
    html = "html"


@app.command("agreement")
def agreement(
    labels: Path | None = typer.Option(None, "--labels", help="human labels (JSONL)"),
    verdicts: Path | None = typer.Option(None, "--verdicts", help="verdicts (JSONL)"),
    fmt: ReportFormat = typer.Option(ReportFormat.md, "--format", help="md, json, csv or html"),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="file to write (default stdout)"),
    calibration: Path | None = typer.Option(
        None, "--calibration",
        help="calibration records folder (default $JUDGE_CALIBRATION_DIR or calibration/)"),
    rubric: str | None = typer.Option(
        None, "--rubric", help="only this rubric; without files: the database's"),
    prompt_version: str | None = typer.Option(
        None, "--prompt-version", help="database mode: only this prompt version"),
    model: str | None = typer.Option(None, "--model", help="database mode: only this model"),
    db: str | None = typer.Option(
        None, "--db", help="database URL (default JUDGE_DATABASE_URL or ./judge.db)"),
    n_boot: int = typer.Option(1000, "--n-boot", min=1, help="bootstrap resamples"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="bootstrap seed"),
) -> None:
    """Agreement report: table with intervals, confusion, per key, reliability, coverage."""
    from judge.calibration.files import records_dir
    from judge.reports import RENDERERS, report_from_files

    with cli_errors():
        if output is not None:
            check_output(output)  # before the bootstrap
        if labels is None and verdicts is None and rubric is not None:
            report = _from_store(rubric, prompt_version, model, db, calibration, n_boot, seed)
        elif labels is None or verdicts is None:
            die("report agreement needs --labels and --verdicts (files) or --rubric "
                "(database)")
        elif prompt_version or model or db:
            die("--prompt-version, --model and --db are for database mode (no --labels, "
                "--verdicts)")
        else:
            report = report_from_files(labels, verdicts, calibration_root=records_dir(
                calibration), rubric=rubric, n_boot=n_boot, seed=seed)
        text = RENDERERS[fmt.value](report)
        if output is None:
            echo(text, nl=False)
            return
        write_output(output, text)
    echo(f"wrote {field(output)}", err=True)


def _from_store(rubric: str, prompt_version: str | None, model: str | None, db: str | None,
                calibration: Path | None, n_boot: int, seed: int) -> AgreementReport:
    from judge.cli.database import open_database
    from judge.reports import report_from_store

    with open_database(db) as store:
        return report_from_store(store, rubric, prompt_version=prompt_version, model=model,
                                 calibration_root=calibration, n_boot=n_boot, seed=seed)


class DriftFormat(StrEnum):
    html = "html"
    md = "md"
    json = "json"


@app.command("drift")
def drift(
    suite: str = typer.Option(..., "--suite", help="the suite whose runs to compare"),
    manifest: Path | None = typer.Option(None, "--manifest",
                                         help="only runs started from this manifest file"),
    fmt: DriftFormat = typer.Option(DriftFormat.html, "--format", help="html, md or json"),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="file to write (default stdout)"),
    window: int = typer.Option(5, "--window", min=1,
                               help="earlier runs pooled as each run's baseline"),
    db: str | None = typer.Option(
        None, "--db", help="database URL (default JUDGE_DATABASE_URL or ./judge.db)"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX,
                           help="bootstrap seed (corrected pass rate)"),
) -> None:
    """Agreement drift across a suite's runs: agreement of the audit share, review share,
    pass rate and corrected pass rate per run, plots, and drops beyond the intervals."""
    from judge.calibration.drift import drift_from_store
    from judge.cli.database import open_database
    from judge.reports.drift import render

    with cli_errors():
        if output is not None:
            check_output(output)
        with open_database(db) as store:
            report = drift_from_store(store, suite, manifest=manifest, window=window,
                                      seed=seed)
        if not report.runs:
            die(f"no finished run of suite '{suite}' in the database"
                + (f" from manifest {manifest}" if manifest else ""))
        text = render(report, fmt.value)
        if output is None:
            echo(text, nl=False)
            return
        write_output(output, text)
    echo(f"wrote {field(output)}", err=True)
