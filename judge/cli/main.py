"""The `judge` console script: one typer sub-app per command group, each imported on use.

`COMMANDS` names every command, where it lives and its one line of help, so `judge --help`
imports no command module (and through them no database, numpy or SDK); a command's module
is imported when it runs or its own `--help` is asked for (`judge.cli.lazy`).

`main` is the one place where whatever ends a command becomes an exit code: usage errors and
every exception a command lets through are one line on stderr (`judge.cli.common.
report_exception`), never a traceback unless `judge --debug ...` or `JUDGE_DEBUG=1`.
"""

from __future__ import annotations

import typer

from judge.cli.lazy import Entry, LazyGroup

# The help panels of `judge --help`, in the order of the work: bring traces in and check them,
# judge what rules cannot decide, let people label, report, run the machinery.
TRACES = "Traces and checks"
JUDGING = "Judging"
PEOPLE = "People"
REPORTS = "Reports"
OPERATIONS = "Operations"
PANELS = (TRACES, JUDGING, PEOPLE, REPORTS, OPERATIONS)

# In the order `judge --help` lists them, panel by panel: in each, the commands and then the
# sub-apps (the order typer gives them when they are registered eagerly).
COMMANDS: tuple[Entry, ...] = (
    Entry("validate", "judge.cli.validate", "validate",
          "Check keys, tools, regexes and rubric names of scenarios: exit 0 valid, 2 problems.",
          panel=TRACES),
    Entry("check", "judge.cli.check", "check",
          "Run the deterministic checks: exit 0 all eligible, 1 any vetoed, 2 bad input.",
          panel=TRACES),
    Entry("ledger", "judge.cli.ledger", "ledger",
          "Print the full reviewed ledger at a turn and the deltas applied at that turn.",
          panel=TRACES),
    Entry("diff", "judge.cli.diff", "diff",
          "Compare traces with a baseline trajectory: presence, argument and terminal drift.",
          panel=TRACES),
    Entry("compare", "judge.cli.compare", "compare",
          "Compare two agent versions task by task: fixed, broken, new signatures, pass-rate "
          "change.", panel=TRACES),
    Entry("init", "judge.cli.init", "init",
          "Draft a scenario from traces (tools, writes, lookups, ledger) for a person to "
          "review.", panel=TRACES),
    Entry("import", "judge.cli.importers", "app",
          "Import trajectories from other formats as judge traces (.jsonl).", panel=TRACES),
    Entry("run", "judge.cli.run", "run",
          "Run a suite: checks, judge items, route, store, and apply the release gate.",
          panel=JUDGING),
    Entry("canary", "judge.cli.canary", "canary",
          "One look at a staged rollout: promote (exit 0), hold (exit 0) or roll back (exit 1).",
          panel=JUDGING),
    Entry("grade", "judge.cli.grade", "grade",
          "Grade the judge items of traces against a scenario, after the deterministic "
          "checks.", panel=JUDGING),
    Entry("route", "judge.cli.route", "route",
          "Route verdicts with their calibration: what is auto-accepted and what goes to "
          "people.", panel=JUDGING),
    Entry("probe", "judge.cli.probe", "probe",
          "Robustness probes: flip rate on variants that must not change a verdict, catch "
          "rate on those that must.", panel=JUDGING),
    Entry("prompts", "judge.cli.prompts", "app", "Versioned judge prompts: list, show, diff.",
          panel=JUDGING),
    Entry("calibrate", "judge.cli.calibrate", "app",
          "Calibrate judge confidence against human labels; check and compare calibrations.",
          panel=JUDGING),
    Entry("label", "judge.cli.label", "label",
          "Label review items: interactively from the queue, or one item with --item/--label.",
          panel=PEOPLE),
    Entry("review", "judge.cli.review", "app", "The review queue: what people label next.",
          panel=PEOPLE),
    Entry("labels", "judge.cli.labels", "app",
          "Human labels: export, import (JSONL) and plan what to label next.", panel=PEOPLE),
    Entry("serve", "judge.cli.serve", "app",
          "Review in the browser: queue, blind labelling, agreement.", panel=PEOPLE),
    Entry("agreement", "judge.cli.agreement", "agreement",
          "Agreement of judge verdicts with human labels, with bootstrap intervals.",
          panel=REPORTS),
    Entry("report", "judge.cli.report", "app",
          "Reports for people: agreement tables, plots and curves.",
          extra=(Entry("run", "judge.cli.run", "report_run",
                       "Write a stored run's report (md, html, json or text)."),),
          panel=REPORTS),
    Entry("worker", "judge.cli.worker", "worker",
          "Claim grading work (leases, SKIP LOCKED), grade it, store verdicts; repeat.",
          panel=OPERATIONS),
    Entry("schema", "judge.cli.schema", "schema", "Print the JSON Schema of a format.",
          panel=OPERATIONS),
    Entry("runs", "judge.cli.runs", "app", "Stored runs: list them (newest first) and show one.",
          panel=OPERATIONS),
)


class JudgeGroup(LazyGroup):
    ENTRIES = COMMANDS


app = typer.Typer(
    name="judge",
    cls=JudgeGroup,
    help="Grade AI-agent trajectories with calibrated, model-blind LLM judges.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug",
                               help="On an unexpected error, print its traceback too (also "
                                    "JUDGE_DEBUG=1)."),
) -> None:
    """Grade AI-agent trajectories with calibrated, model-blind LLM judges."""
    if debug:
        from judge.cli.common import STATE

        STATE.debug = True


def _usage_error_class() -> type[Exception]:
    """click's UsageError, wherever this typer keeps click (vendored or not), found through
    the public `typer.BadParameter`."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "UsageError":
            return cls
    return typer.BadParameter


def main() -> None:
    """Run the CLI. Usage errors and any exception a command lets through become one line on
    stderr and exit 2 (141 for a closed stdout, 130 for Ctrl-C): never a traceback (unless
    --debug) and never 1, which means a veto or a failed gate."""
    import sys

    usage_error = _usage_error_class()
    try:
        rc = app(standalone_mode=False)
        sys.stdout.flush()  # here, not at exit: a closed stdout is then handled like any error
    except usage_error as exc:
        fmt = getattr(exc, "format_message", None)
        message = " ".join(str(fmt() if callable(fmt) else exc).split())
        if not message:  # `judge` with no command: the help was shown
            sys.exit(2)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "judge"
        from judge.cli.common import one_line

        typer.echo(f"judge: error: {one_line(message)} (see '{command} --help')", err=True)
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("judge: interrupted", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except BaseException as exc:  # the one top-level handler: one line, never exit 1
        from judge.cli.common import report_exception

        sys.exit(report_exception(exc))
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
