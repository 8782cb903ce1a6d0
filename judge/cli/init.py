"""`judge init TRACE...`: draft a scenario from traces, for a person to review.

Writes commented YAML marked `status: draft` to `-o FILE` (or a directory's scenario.yaml)
or stdout; never overwrites an existing file without `--force`. Exit 0 drafted, 2 bad input
(one line naming file, line and field) or an existing output file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer

from judge.cli.common import cli_errors, die, warn
from judge.drafting import draft_scenario


def init(
    traces: list[Path] = typer.Argument(..., help="trace files (.json or .jsonl)"),
    out: Path | None = typer.Option(None, "-o", "--out",
                                    help="write the draft here (a directory: its "
                                         "scenario.yaml); default stdout"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing output file"),
    scenario_id: str | None = typer.Option(None, "--id",
                                           help="scenario id (default: the one the traces "
                                                "name)"),
) -> None:
    """Draft a scenario from traces (tools, writes, lookups, ledger) for a person to review."""
    target = None
    if out is not None:
        target = out / "scenario.yaml" if out.is_dir() else out
        if target.exists() and not force:
            die(f"{target}: exists; pass --force to overwrite it")
    with cli_errors():
        result = draft_scenario(traces, scenario_id)
    d = result.draft
    if target is None:
        typer.echo(result.text, nl=False)
    else:
        _write(target, result.text, force)
    for w in d.warnings:
        warn(f"note: {w}")
    writes = len(d.kind("write"))
    where = "" if target is None else f" to {target}"
    warn(f"drafted scenario {d.id!r}{where} from {d.obs.traces} trace(s): "
         f"{len(d.tools)} tools ({writes} write, {len(d.kind('read'))} read, "
         f"{len(d.kind('unclassified'))} unclassified), {len(d.lookups)} lookup rule(s); "
         "review it, then delete its `status: draft` line")


def _write(target: Path, text: str, force: bool) -> None:
    """Write the whole text or nothing: exclusively without --force, else via a temporary
    file renamed over the target."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not force:
            with target.open("x", encoding="utf-8") as fh:
                fh.write(text)
            return
        fd, tmp = tempfile.mkstemp(prefix=".judge-init-", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except FileExistsError:
        die(f"{target}: exists; pass --force to overwrite it")
    except OSError as exc:
        die(f"{target}: cannot write ({exc.strerror})")
