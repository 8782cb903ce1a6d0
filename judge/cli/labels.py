"""`judge labels export|import`: human labels as files (formats §4).

    judge labels export -o FILE [--annotator NAME] [--rubric R]   (the whole history)
    judge labels import FILE [--clock-skew SECONDS]                 (idempotent)

Export writes every stored label, oldest first, so an import elsewhere rebuilds the same
history (newer labels by the same annotator supersede older ones, both stay). Import checks
every line as `judge label` checks a label (judge.labels.importing), then stores the file
all or nothing; importing the same file twice adds nothing, with or without `created_at`.
Each bad line is one error naming file:line and field, and then nothing is imported (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from judge.cli.common import cli_errors, die, one_line
from judge.cli.database import DB_HELP, open_database
from judge.labels.files import write_labels

if TYPE_CHECKING:
    from judge.labels.importing import BadLabelFile

app = typer.Typer(help="Human labels: export and import (JSONL).", no_args_is_help=True)


@app.command("export")
def export(
    output: Path = typer.Option(..., "-o", "--output", help="labels file to write (JSONL)"),
    annotator: str | None = typer.Option(None, "--annotator", help="only this annotator"),
    rubric: str | None = typer.Option(None, "--rubric", help="only items of this rubric"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Write the stored label history as JSONL."""
    with cli_errors():
        with open_database(db) as store:
            labels = store.labels_for(annotator=annotator, rubric=rubric)
        tmp = output.with_name(output.name + ".tmp")
        try:
            n = write_labels(tmp, labels)
            os.replace(tmp, output)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            die(f"{output}: cannot write ({exc.strerror})")
        typer.echo(f"wrote {n} labels to {output}")


@app.command("import")
def import_(
    path: Path = typer.Argument(..., help="labels file (JSONL, formats §4)"),
    clock_skew: float | None = typer.Option(
        None, "--clock-skew", help="seconds a created_at may lie ahead of this machine's "
        "clock (default JUDGE_LABEL_CLOCK_SKEW_S or 300)"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Append the labels of a file, all or nothing; labels already stored are skipped."""
    from judge.labels.importing import BadLabelFile, read_label_file, store_labels
    from judge.settings import Settings

    with cli_errors():
        settings = Settings.load(database_url=db, label_clock_skew_s=clock_skew)
        try:
            # every line is checked before the database is opened
            labels = read_label_file(path, max_skew_s=settings.label_clock_skew_s)
            with open_database(db, settings) as store:
                result = store_labels(store, labels)
        except BadLabelFile as exc:
            _bad_lines(exc)
        typer.echo(f"imported {result.added} new labels from {path} "
                   f"({result.already_stored} already stored)")


#: bad lines listed in full; the rest are counted
MAX_LISTED = 50


def _bad_lines(exc: BadLabelFile) -> NoReturn:
    """One line per bad line of the file (file:line: field: why), then the summary."""
    for err in exc.errors[:MAX_LISTED]:
        typer.echo(f"judge: error: {one_line(err.message)}", err=True)
    if len(exc.errors) > MAX_LISTED:
        typer.echo(f"judge: error: … and {len(exc.errors) - MAX_LISTED} more bad lines",
                   err=True)
    die(exc.message)
