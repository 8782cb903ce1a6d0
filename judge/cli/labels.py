"""`judge labels export|import`: human labels as files (formats §4).

    judge labels export -o FILE [--annotator NAME] [--rubric R]   (the whole history)
    judge labels import FILE [--clock-skew SECONDS]                 (idempotent)
    judge labels plan --rubric R --target-width W [--version V] [--confidence 0.95]
                      [--format text|json] [--limit N] [--queue]   (the label budget)

Export writes every stored label, oldest first, so an import elsewhere rebuilds the same
history (newer labels by the same annotator supersede older ones, both stay). Import checks
every line as `judge label` checks a label (judge.labels.importing), then stores the file
all or nothing; importing the same file twice adds nothing, with or without `created_at`.
Each bad line is one error naming file:line and field, and then nothing is imported (exit 2).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from judge.cli.common import cli_errors, die, one_line
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, SEED_MAX, float_option, int_option
from judge.labels.files import write_labels
from judge.outputs import check_output, is_stdout

if TYPE_CHECKING:
    from judge.labels.importing import BadLabelFile, LabelFile

app = typer.Typer(help="Human labels: export, import (JSONL) and plan what to label next.",
                  no_args_is_help=True)


@app.command("export")
def export(
    output: Path = typer.Option(..., "-o", "--output",
                                help="labels file to write (JSONL; - for standard output)"),
    annotator: str | None = typer.Option(None, "--annotator", help="only this annotator"),
    rubric: str | None = typer.Option(None, "--rubric", help="only items of this rubric"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Write the stored label history as JSONL."""
    with cli_errors():
        check_output(output)
        with open_database(db) as store:
            labels = store.labels_for(annotator=annotator, rubric=rubric)
        n = write_labels(output, labels)  # atomic for a file; in place for a device or "-"
        echo(f"wrote {n} labels to {field(output)}", err=is_stdout(output))


@app.command("import")
def import_(
    path: Path = typer.Argument(..., help="labels file (JSONL, formats §4), or span "
                                          "annotations with --traces"),
    clock_skew: float | None = float_option(
        None, "--clock-skew", lo=0.0, hi=A_WEEK_S,
        help="seconds a created_at may lie ahead of this machine's clock (default "
        "JUDGE_LABEL_CLOCK_SKEW_S or 300)"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    traces: list[Path] = typer.Option([], "--traces", help="span annotations: the traces "
                                      "imported from those spans (repeatable)"),
    rubric: str = typer.Option("scope_fidelity", help="span annotations: the items' rubric"),
    annotator: str = typer.Option("annotations", help="span annotations: who, when a record "
                                  "does not say"),
    unmarked_pass: bool = typer.Option(False, "--unmarked-pass", help="span annotations: "
                                       "label every other item of a reviewed trace pass"),
) -> None:
    """Append the labels of a file, all or nothing; labels already stored are skipped."""
    from judge.labels.importing import BadLabelFile, read_label_file, store_labels
    from judge.settings import Settings

    with cli_errors():
        settings = Settings.load(database_url=db, label_clock_skew_s=clock_skew)
        try:
            if traces:  # span annotations mapped onto items (judge.labels.annotations)
                labels = _annotation_labels(path, traces, rubric, annotator, unmarked_pass)
            else:  # every line is checked before the database is opened
                labels = read_label_file(path, max_skew_s=settings.label_clock_skew_s)
            with open_database(db, settings) as store:
                result = store_labels(store, labels)
        except BadLabelFile as exc:
            _bad_lines(exc)
        typer.echo(f"imported {result.added} new labels from {path} "
                   f"({result.already_stored} already stored)")


def _annotation_labels(path: Path, traces: list[Path], rubric: str, annotator: str,
                       unmarked_pass: bool) -> LabelFile:
    from judge.checks.report import printable
    from judge.cli.common import warn
    from judge.labels.annotations import labels_from_annotations
    from judge.labels.importing import LabelFile

    mapped = labels_from_annotations(path, traces, rubric=rubric, annotator=annotator,
                                     unmarked="pass" if unmarked_pass else None)
    for miss in mapped.unmatched:
        warn(printable(f"unmatched annotation of span {miss.annotation.span_id}: "
                       f"{miss.reason}"))
    n = len(mapped.labels)
    return LabelFile(str(path), labels=list(mapped.labels), import_keys=[None] * n,
                     lines=[0] * n)


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


class PlanFormat(StrEnum):
    text = "text"
    json = "json"


@app.command("plan")
def plan(
    rubric: str = typer.Option(..., "--rubric", help="the rubric to plan labels for"),
    target_width: float = float_option(..., "--target-width", lo=0.001, hi=1.0,
                                       help="widest agreement interval wanted (e.g. 0.1)"),
    version: str | None = typer.Option(None, "--version", help="prompt version of the "
                                       "verdicts (default: the most common stored)"),
    confidence: float = float_option(0.95, "--confidence", lo=0.5, hi=0.999,
                                     help="interval confidence level"),
    fmt: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json"),
    limit: int | None = typer.Option(None, "--limit", min=0,
                                     help="list (and queue) only the first N items"),
    queue: bool = typer.Option(False, "--queue", help="put the listed items at the front "
                               "of the review queue, in plan order"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX,
                           help="seed of the order within a stratum"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """How many more labels per class bring agreement intervals to a width, and which items
    to label next (stratified by the judge's label and confidence, not queue order)."""
    import json

    from judge.calibration.lookup import find_calibration
    from judge.labels.plan import plan_for_rubric, plan_requests, plan_text
    from judge.safe_text import json_safe

    with cli_errors():
        with open_database(db) as store:
            result = plan_for_rubric(
                store, rubric, prompt_version=version, target_width=target_width,
                confidence=confidence, seed=seed, limit=limit,
                find_calibration=lambda r, h, m: find_calibration(store, r, h, m))
            queued = store.queue.serve_first(plan_requests(result)) if queue else None
        if fmt is PlanFormat.json:
            doc = result.to_dict()
            doc["queued"] = queued
            echo(json_safe(json.dumps(doc, indent=2)))
        else:
            echo(plan_text(result), nl=False)
            if queued is not None:
                echo(f"{queued} items put at the front of the review queue", err=True)
