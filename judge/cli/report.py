"""`judge report agreement`: the agreement report from files, as md, json, csv or html.

    judge report agreement --labels L --verdicts V [--format md|json|csv|html] [-o FILE]
                           [--calibration calibration/] [--rubric R]

Without -o the report goes to stdout. HTML is one self-contained file (plots embedded).
A database mode is for the store owner to add beside the file mode.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from judge.cli.common import cli_errors, die
from judge.errors import InputError

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
    output: Path | None = typer.Option(None, "-o", "--output", help="file to write"),
    calibration: Path = typer.Option(
        Path("calibration"), "--calibration", help="calibration records folder"),
    rubric: str | None = typer.Option(None, "--rubric", help="only this rubric"),
    n_boot: int = typer.Option(1000, "--n-boot", min=1, help="bootstrap resamples"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """Agreement report: table with intervals, confusion, per key, reliability, coverage."""
    from judge.reports import RENDERERS, report_from_files

    with cli_errors():
        if labels is None or verdicts is None:
            die("report agreement needs --labels and --verdicts")
        report = report_from_files(labels, verdicts, calibration_root=calibration,
                                   rubric=rubric, n_boot=n_boot, seed=seed)
        text = RENDERERS[fmt.value](report)
        if output is None:
            typer.echo(text, nl=False)
            return
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write report ({exc.strerror})", file=str(output)) from None
        typer.echo(f"wrote {output}", err=True)
