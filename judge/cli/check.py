"""`judge check SCENARIO TRACE...`: the deterministic checks, one report per trace.

Exit 0 when every trace is eligible, 1 when any is vetoed, 2 when any input was bad — every
valid trace is still checked and reported; each bad one is a single line on stderr.

Reports are written as each trace is checked, so memory does not grow with the input.

`--format json` prints one object: {"scenario", "reports": [one `CheckReport.to_dict()` per
trace], "eligible" (all traces), "errors": [one line per bad input]}. `--format jsonl` prints
one report object per line and nothing else (errors go to stderr, as in every format).

A report lists its failed findings only, and `passed` counts the passed findings per check
(`{"scope": 1, ...}`); `--verbose` lists the passed findings in `findings` too.

`--jobs N` (default: one per CPU) checks the traces of a big `.jsonl` file in N worker
processes; the output is byte for byte what `--jobs 1` (this process alone) writes
(`judge.checks.parallel`).

A closed stdout (`judge check ... | head`) ends the command at once, quietly, with exit code
141 — what a shell reports for a program stopped by SIGPIPE, which is what the reader going
away means. Not 1, which means a veto and nothing else; not 2, which means bad input or a
failure of judge's own: neither happened, and the reader asked for no more.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from contextlib import closing
from pathlib import Path
from typing import IO

import orjson
import typer

from judge.checks.output import Rendered, json_bytes
from judge.checks.output import ReportFormat as OutputFormat
from judge.checks.parallel import check_and_render, default_jobs
from judge.cli.common import cli_errors, load_valid_scenario, warn
from judge.errors import InputError

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE (see the module docstring)


def check(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one"),
    traces: list[Path] = typer.Argument(..., help="trace files (.json or .jsonl)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format",
                                     help="text, json (one document) or jsonl (one report "
                                          "per line)"),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="json/jsonl: list passed findings too (default: "
                                      "failures, and passed counts per check)"),
    jobs: int | None = typer.Option(None, "--jobs", "-j", min=1,
                                    help="processes checking a big .jsonl file's traces "
                                         "(default: one per CPU; 1: this process only)"),
) -> None:
    """Run the deterministic checks: exit 0 all eligible, 1 any vetoed, 2 bad input."""
    with cli_errors():
        loaded = load_valid_scenario(scenario)  # as `judge validate` checks it
    errors: list[InputError] = []
    out = sys.stdout
    binary: IO[bytes] | None = getattr(out, "buffer", None)
    write: Callable[[bytes], object] = (binary.write if binary is not None
                                        else lambda b: out.write(b.decode()))
    reports = check_and_render(loaded, traces, errors, fmt, verbose,
                               jobs if jobs is not None else default_jobs())
    try:
        with cli_errors(), closing(reports):
            if fmt is OutputFormat.text:
                vetoed = _write_text(reports, errors, out.write)
            else:
                vetoed = _write_json(reports, errors, write, fmt, loaded.scenario.id)
            out.flush()
    except BrokenPipeError:
        _closed_stdout()
    if errors:
        raise typer.Exit(2)
    if vetoed:
        raise typer.Exit(1)


def _closed_stdout() -> None:
    """The reader went away (`judge check ... | head`): stop quietly with 141. Output still
    buffered goes nowhere instead of failing again when Python exits."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (an in-memory stdout)
        pass
    raise typer.Exit(EXIT_CLOSED_PIPE)


class _Errors:
    """Prints each bad input on stderr as soon as it is found, in order."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        self.shown = 0

    def flush(self) -> None:
        for e in self.errors[self.shown:]:
            warn(f"error: {e.message}")
        self.shown = len(self.errors)


def _write_text(reports: Iterable[Rendered], errors: list[InputError],
                write: Callable[[str], object]) -> bool:
    shown = _Errors(errors)
    vetoed = False
    sep = ""
    for r in reports:
        assert isinstance(r.out, str)
        write(sep + r.out)
        sep = "\n\n"
        vetoed = vetoed or not r.eligible
        shown.flush()
    if sep:
        write("\n")
    shown.flush()
    return vetoed


def _write_json(reports: Iterable[Rendered], errors: list[InputError],
                write: Callable[[bytes], object], fmt: OutputFormat, scenario_id: str) -> bool:
    shown = _Errors(errors)
    lines = fmt is OutputFormat.jsonl
    eligible = True
    first = True
    for r in reports:
        assert isinstance(r.out, bytes)
        eligible = eligible and r.eligible
        if lines:
            write(r.out)
        elif first:  # the scenario is named once a trace of it was checked
            write(b'{\n  "scenario": ' + json_bytes(scenario_id)
                  + b',\n  "reports": [\n    ' + r.out)
        else:
            write(b",\n    " + r.out)
        first = False
        shown.flush()
    if not lines:
        head = b'{\n  "scenario": null,\n  "reports": []' if first else b"\n  ]"
        tail = json_bytes({"eligible": eligible, "errors": [e.message for e in errors]},
                          orjson.OPT_INDENT_2)
        write(head + b",\n" + tail[2:] + b"\n")
    shown.flush()
    return not eligible
