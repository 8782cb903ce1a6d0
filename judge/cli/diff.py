"""`judge diff BASELINE TRACE...`: each trace against a known-good baseline of the same task.

Exit 0 whatever drift is found, unless `--fail-on` names a kind of drift (`presence`,
`argument`, `terminal`, or `drift` for any): then 1 when a trace shows it. 2 for bad input
(every valid trace is still diffed and reported; each bad one is a line on stderr).

`--format json` prints one object {"baseline", "diffs": [one per trace], "drift", "errors"};
`--format jsonl` one diff object per line. Each diff: {"baseline", "trace_id", "same_task",
"drift", "counts": {presence, argument, terminal}, "aligned": [...], "drifts": [...]}.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judge.cli.common import cli_errors, warn
from judge.cli.console import echo
from judge.errors import InputError

if TYPE_CHECKING:
    from judge.diff import TraceDiff
    from judge.trace import Trace


class DiffFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class FailOn(StrEnum):
    drift = "drift"
    presence = "presence"
    argument = "argument"
    terminal = "terminal"


def diff(
    baseline: Path = typer.Argument(..., help="the known-good trace (.json, or .jsonl with "
                                    "--baseline-id)"),
    traces: list[Path] = typer.Argument(..., help="trace files to compare (.json or .jsonl)"),
    baseline_id: str | None = typer.Option(None, "--baseline-id",
                                           help="which trace of BASELINE is the baseline"),
    scenario: Path | None = typer.Option(None, "--scenario", help="take the mutating and "
                                         "read tools from this scenario's rules"),
    mutating: list[str] = typer.Option([], "--mutating", help="tool glob that changes state "
                                       "(repeatable); every other tool only reads"),
    count_lookups: bool = typer.Option(False, "--count-lookups", help="a missing or extra "
                                       "read-only call counts as presence drift"),
    fail_on: list[FailOn] = typer.Option([], "--fail-on", help="exit 1 when a trace shows "
                                         "this drift (repeatable; 'drift' = any)"),
    fmt: DiffFormat = typer.Option(DiffFormat.text, "--format", help="text, json or jsonl"),
) -> None:
    """Compare traces with a baseline trajectory: presence, argument and terminal drift."""
    from judge.diff import DiffOptions, ReadOnlyPolicy, diff_traces
    from judge.safe_text import json_safe
    from judge.trace import iter_traces

    with cli_errors():
        read_tools: tuple[str, ...] = ()
        mut = tuple(mutating)
        if scenario is not None:
            from judge.ledger.loader import load_scenario

            rules = load_scenario(scenario).scenario.rules
            mut = mut or tuple(rules.mutating_tools)
            read_tools = tuple(rules.read_tools)
        base = _baseline(baseline, baseline_id)
    opts = DiffOptions(ReadOnlyPolicy(mut, read_tools), count_lookups)
    errors: list[InputError] = []
    shown = 0
    results: list[dict[str, Any]] = []
    failed = False
    for path in traces:
        for trace in iter_traces(path, errors):
            d = diff_traces(base, trace, opts)
            failed = failed or any(d.has(k.value) for k in fail_on)
            if fmt is DiffFormat.jsonl:
                echo(json_safe(json.dumps(d.to_dict(), ensure_ascii=False, default=str)))
            elif fmt is DiffFormat.json:
                results.append(d.to_dict())
            else:
                echo(render_text(d))
            if d.same_task is False:
                warn(f"{trace.trace_id}: not the baseline's task (scenario {trace.scenario}, "
                     f"task_id {trace.metadata.get('task_id')}; baseline: {base.scenario}, "
                     f"{base.metadata.get('task_id')})")
            for e in errors[shown:]:
                warn(f"error: {e.message}")
            shown = len(errors)
        for e in errors[shown:]:
            warn(f"error: {e.message}")
        shown = len(errors)
    if fmt is DiffFormat.json:
        doc = {"baseline": base.trace_id, "diffs": results,
               "drift": any(r["drift"] for r in results),
               "errors": [e.message for e in errors]}
        echo(json_safe(json.dumps(doc, indent=2, ensure_ascii=False, default=str)))
    if errors:
        raise typer.Exit(2)
    raise typer.Exit(1 if failed else 0)


def _baseline(path: Path, trace_id: str | None) -> Trace:
    """The baseline trace: the only one in `path`, or the one named `trace_id`."""
    from judge.trace import iter_traces

    found = list(iter_traces(path))  # a bad baseline is bad input (InputError)
    if trace_id is not None:
        named = [t for t in found if t.trace_id == trace_id]
        if not named:
            raise InputError(f"no trace '{trace_id}' in the baseline file", file=str(path),
                             field="trace_id")
        return named[0]
    if len(found) != 1:
        raise InputError(f"the baseline file holds {len(found)} traces; name one with "
                         "--baseline-id", file=str(path), field="trace_id")
    return found[0]


def render_text(d: TraceDiff) -> str:
    """One trace's diff for people: a headline, then one line per drift; every line with its
    control characters (line breaks included) shown as escapes, so trace text cannot add a
    line or drive the terminal."""
    from judge.safe_text import one_line

    c = d.counts
    total = sum(c.values())
    head = (f"{d.trace_id} vs baseline {d.baseline_id}: "
            + (f"{total} drift(s) (presence {c['presence']}, argument {c['argument']}, "
               f"terminal {c['terminal']})" if total else "no drift"))
    lines = [one_line(head)]
    for dr in d.drifts:
        tag = dr.kind if dr.counted else "lookup"
        lines.append(f"  {tag:<9} {one_line(dr.message)}"
                     + ("" if dr.counted else " [not counted]"))
    return "\n".join(lines)
