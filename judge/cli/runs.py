"""`judge runs list|show`: the stored runs, so a run's id is never lost.

A run killed with SIGKILL stays `running` in the store (nothing was left to mark it), and
the id it would have printed is found with `judge runs list --status running`; `judge run
--resume last` takes the newest unfinished run without the id.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP, open_database
from judge.errors import InputError
from judge.safe_text import json_safe

app = typer.Typer(help="Stored runs: list them (newest first) and show one.",
                  no_args_is_help=True, add_completion=False)

STATUSES = ("running", "finished", "failed", "interrupted")


class Format(StrEnum):
    text = "text"
    json = "json"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else "-"


def _gate(run: dict[str, Any]) -> str:
    gate = (run.get("summary") or {}).get("gate")
    if not isinstance(gate, dict) or "passed" not in gate:
        return "-"
    return "passed" if gate["passed"] else "failed"


def _row(run: dict[str, Any]) -> dict[str, Any]:
    """What `runs list --format json` prints for one run."""
    summary = run.get("summary") or {}
    return {"run_id": run["run_id"], "suite": run.get("suite"), "status": run["status"],
            "started_at": run["started_at"].isoformat() if run["started_at"] else None,
            "finished_at": run["finished_at"].isoformat() if run["finished_at"] else None,
            "traces": len(summary.get("traces") or []) if summary else None,
            "items": run.get("verdicts", 0), "gate": _gate(run)}


def _dump(doc: Any) -> str:
    return json_safe(json.dumps(doc, indent=2, ensure_ascii=False, default=str))


@app.command("list")
def list_cmd(
    limit: int = typer.Option(20, "--limit", min=1, help="at most this many runs"),
    suite: str | None = typer.Option(None, "--suite", help="only runs of this suite"),
    status: str | None = typer.Option(None, "--status",
                                      help="only runs with this status: "
                                           + ", ".join(STATUSES)),
    fmt: Format = typer.Option(Format.text, "--format"),
    database: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Runs newest first: id, suite, status, started, items (verdicts stored), gate."""
    with cli_errors():
        if status is not None and status not in STATUSES:
            raise InputError(f"unknown status '{status}' (one of {', '.join(STATUSES)})",
                             field="--status")
        with open_database(database) as store:
            runs = store.list_runs(suite=suite, status=status, limit=limit)
    rows = [_row(r) for r in runs]
    if fmt is Format.json:
        echo(_dump(rows))
        return
    if not rows:
        echo("no runs stored" + (" matching the filters" if suite or status else ""))
        return
    head = ("run_id", "suite", "status", "started (UTC)", "items", "gate")
    table = [head] + [(field(r["run_id"]), field(r["suite"] or "-"), r["status"],
                       _when(run["started_at"]), str(r["items"]), r["gate"])
                      for r, run in zip(rows, runs, strict=True)]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@app.command("show")
def show_cmd(
    run_id: str = typer.Argument(..., help="the run (see judge runs list)"),
    fmt: Format = typer.Option(Format.text, "--format"),
    database: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """One run: its stored config, status, timings, counts, gate, and how to resume or
    report it."""
    with cli_errors(), open_database(database) as store:
        stored = store.get_run(run_id)
        if stored is None:
            raise InputError(f"no run '{run_id}' in {store.where}")
        run = {**stored, "verdicts": store.count_verdicts(run_id)}
    summary = run.get("summary") or {}
    gate = summary.get("gate") if isinstance(summary.get("gate"), dict) else None
    doc = {**_row(run), "config": run.get("config") or {},
           "seconds": (run["finished_at"] - run["started_at"]).total_seconds()
           if run["finished_at"] and run["started_at"] else None,
           "judge": summary.get("judge"), "gate_reasons": (gate or {}).get("reasons"),
           "scenarios": summary.get("scenarios"), "next": _next(run)}
    if fmt is Format.json:
        echo(_dump(doc))
        return
    echo(f"run {field(doc['run_id'])}: {doc['status']}")
    config = doc["config"]
    for key in ("suite", "manifest", "model", "replay_only", "allow_outside"):
        if key in config:
            echo(f"  {key}: {field(config[key])}")
    echo(f"  started: {_when(run['started_at'])} UTC"
         + (f", finished: {_when(run['finished_at'])} UTC ({doc['seconds']:.1f} s)"
            if doc["seconds"] is not None else ""))
    echo(f"  items graded (verdicts stored): {doc['items']}"
         + (f", traces checked: {doc['traces']}" if doc["traces"] is not None else ""))
    if doc["judge"]:
        j = doc["judge"]
        echo(f"  judge: {field(j.get('name'))} ({field(j.get('model'))}), "
             f"{j.get('auto_accepted', 0)} auto-accepted, {j.get('review', 0)} to review, "
             f"{j.get('unscored', 0)} unscored")
    if gate is not None:
        echo(f"  gate: {doc['gate']}")
        for reason in gate.get("reasons") or []:
            echo(f"    - {field(reason)}")
    if "failed" in summary:
        echo(f"  failure: {field(summary['failed'])}")
    for line in doc["next"]:
        echo(f"  next: {field(line)}")


def _next(run: dict[str, Any]) -> list[str]:
    rid = run["run_id"]
    if run["status"] == "finished":
        return [f"judge report run {rid} --format html -o report.html"]
    from judge.suite.run import how_to_finish

    config = run.get("config") or {}
    resume = [f"judge run --resume {rid}" if config.get("command") != "grade"
              else how_to_finish(rid, config)]
    if run["status"] == "running":
        resume.append("(a killed run stays `running`, and so does one whose process is "
                      "still working: resume only one that is not)")
    return resume
