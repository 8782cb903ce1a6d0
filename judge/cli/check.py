"""`judge check SCENARIO TRACE...`: the deterministic checks, one report per trace.

Exit 0 when every trace is eligible, 1 when any is vetoed, 2 when any input was bad — every
valid trace is still checked and reported; each bad one is a single line on stderr.

Reports are written as each trace is checked, so memory does not grow with the input.

`--format json` prints one object: {"scenario", "reports": [one `CheckReport.to_dict()` per
trace], "eligible" (all traces), "errors": [one line per bad input]}. `--format jsonl` prints
one report object per line and nothing else (errors go to stderr, as in every format).

A report lists its failed findings only, and `passed` counts the passed findings per check
(`{"scope": 1, ...}`); `--verbose` lists the passed findings in `findings` too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import IO

import orjson
import typer

from judge.checks import CheckReport, check_paths
from judge.cli.common import cli_errors, load_valid_scenario, warn
from judge.errors import InputError


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


# C1 controls (U+0080-U+009F) are valid raw in JSON strings but some terminals obey them;
# orjson escapes C0 only, so these are escaped after it (UTF-8 `\xc2\x80`-`\xc2\x9f`).
_C1 = re.compile(rb"\xc2([\x80-\x9f])")


def _json_bytes(data: object, option: int = 0) -> bytes:
    out = orjson.dumps(data, option=option)
    if b"\xc2" in out:
        out = _C1.sub(lambda m: b"\\u00%02x" % m.group(1)[0], out)
    return out


def check(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one"),
    traces: list[Path] = typer.Argument(..., help="trace files (.json or .jsonl)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format",
                                     help="text, json (one document) or jsonl (one report "
                                          "per line)"),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="json/jsonl: list passed findings too (default: "
                                      "failures, and passed counts per check)"),
) -> None:
    """Run the deterministic checks: exit 0 all eligible, 1 any vetoed, 2 bad input."""
    with cli_errors():
        loaded = load_valid_scenario(scenario)  # as `judge validate` checks it
    errors: list[InputError] = []
    reports = check_paths(loaded, traces, errors)
    out = sys.stdout
    binary: IO[bytes] | None = getattr(out, "buffer", None)
    write: Callable[[bytes], object] = (binary.write if binary is not None
                                        else lambda b: out.write(b.decode()))
    if fmt is OutputFormat.text:
        vetoed = _write_text(reports, errors, out.write)
    else:
        vetoed = _write_json(reports, errors, write, fmt, verbose)
    out.flush()
    if errors:
        raise typer.Exit(2)
    if vetoed:
        raise typer.Exit(1)


class _Errors:
    """Prints each bad input on stderr as soon as it is found, in order."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        self.shown = 0

    def flush(self) -> None:
        for e in self.errors[self.shown:]:
            warn(f"error: {e.message}")
        self.shown = len(self.errors)


def _write_text(reports: Iterable[CheckReport], errors: list[InputError],
                write: Callable[[str], object]) -> bool:
    shown = _Errors(errors)
    vetoed = False
    sep = ""
    for r in reports:
        write(sep + r.diagnosis())
        sep = "\n\n"
        vetoed = vetoed or r.vetoed
        shown.flush()
    if sep:
        write("\n")
    shown.flush()
    return vetoed


def _write_json(reports: Iterable[CheckReport], errors: list[InputError],
                write: Callable[[bytes], object], fmt: OutputFormat, verbose: bool) -> bool:
    shown = _Errors(errors)
    lines = fmt is OutputFormat.jsonl
    eligible = True
    first = True
    for r in reports:
        doc = r.to_dict(passed_findings=verbose)
        eligible = eligible and doc["eligible"]
        if lines:
            write(_json_bytes(doc) + b"\n")
        else:
            body = _json_bytes(doc, orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
            if first:  # the scenario is named once a trace of it was checked
                write(b'{\n  "scenario": ' + _json_bytes(r.scenario_id)
                      + b',\n  "reports": [\n    ' + body)
            else:
                write(b",\n    " + body)
        first = False
        shown.flush()
    if not lines:
        head = b'{\n  "scenario": null,\n  "reports": []' if first else b"\n  ]"
        tail = _json_bytes({"eligible": eligible, "errors": [e.message for e in errors]},
                           orjson.OPT_INDENT_2)
        write(head + b",\n" + tail[2:] + b"\n")
    shown.flush()
    return not eligible
