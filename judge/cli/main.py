"""The `judge` console script: one typer sub-app per command group."""

from __future__ import annotations

import typer

from judge.cli import agreement as agreement_cmd
from judge.cli import calibrate as calibrate_cmd
from judge.cli import check as check_cmd
from judge.cli import grade as grade_cmd
from judge.cli import importers as importers_cmd
from judge.cli import label as label_cmd
from judge.cli import labels as labels_cmd
from judge.cli import ledger as ledger_cmd
from judge.cli import prompts as prompts_cmd
from judge.cli import report as report_cmd
from judge.cli import review as review_cmd
from judge.cli import run as run_cmd
from judge.cli import schema as schema_cmd
from judge.cli import validate as validate_cmd
from judge.cli import worker as worker_cmd

app = typer.Typer(
    name="judge",
    help="Grade AI-agent trajectories with calibrated, model-blind LLM judges.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Grade AI-agent trajectories with calibrated, model-blind LLM judges."""


app.command("schema")(schema_cmd.schema)

# Sub-apps and commands register below, one line each (keep this list sorted by group).
app.command("agreement")(agreement_cmd.agreement)
app.add_typer(calibrate_cmd.app, name="calibrate")
app.command("check")(check_cmd.check)
app.command("grade")(grade_cmd.grade)
app.add_typer(importers_cmd.app, name="import")
app.command("label")(label_cmd.label)
app.add_typer(labels_cmd.app, name="labels")
app.command("ledger")(ledger_cmd.ledger)
app.add_typer(prompts_cmd.app, name="prompts")
app.add_typer(report_cmd.app, name="report")
app.add_typer(review_cmd.app, name="review")
app.command("run")(run_cmd.run)
report_cmd.app.command("run")(run_cmd.report_run)
app.command("validate")(validate_cmd.validate)
app.command("worker")(worker_cmd.worker)


def _usage_error_class() -> type[Exception]:
    """click's UsageError, wherever this typer keeps click (vendored or not), found through
    the public `typer.BadParameter`."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "UsageError":
            return cls
    return typer.BadParameter


def main() -> None:
    """Run the CLI; usage errors become one line on stderr with exit code 2."""
    import sys

    usage_error = _usage_error_class()
    try:
        rc = app(standalone_mode=False)
    except usage_error as exc:
        fmt = getattr(exc, "format_message", None)
        message = " ".join(str(fmt() if callable(fmt) else exc).split())
        if not message:  # `judge` with no command: the help was shown
            sys.exit(2)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "judge"
        typer.echo(f"judge: error: {message} (see '{command} --help')", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("judge: interrupted", err=True)
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
