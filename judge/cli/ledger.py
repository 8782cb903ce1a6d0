"""`judge ledger SCENARIO --turn N`: the reviewed ledger as it holds at a turn, and its deltas."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from judge.cli.common import cli_errors
from judge.cli.console import console as safe_console
from judge.ledger.loader import load_scenario
from judge.ledger.reducer import LedgerSnapshot

STATUS_ORDER = ("active", "completed", "revoked", "failed", "expired")


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def ledger_document(scenario_id: str, snap: LedgerSnapshot) -> dict[str, Any]:
    return {
        "scenario": scenario_id,
        **snap.to_dict(),
        "deltas": [d.model_dump(mode="json", by_alias=True, exclude_none=True)
                   for d in snap.deltas],
    }


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _print_text(scenario_id: str, snap: LedgerSnapshot) -> None:
    console = safe_console(width=140)  # values, notes, keys: nothing live, no markup
    entries = Table(title=f"{scenario_id}: ledger at turn {snap.turn}")
    for col in ("key", "status", "class", "value", "sensitivity", "persistence", "source",
                "since"):
        entries.add_column(col, overflow="fold")
    ordered = sorted(snap.entries.values(),
                     key=lambda e: (STATUS_ORDER.index(e.status), e.since_turn, e.key))
    for e in ordered:
        entries.add_row(e.key, e.status, e.class_.value, _show(e.value), e.sensitivity.value,
                        e.persistence.value, e.source.value, str(e.since_turn))
    console.print(entries)
    if snap.superseded:
        sup = Table(title="superseded values")
        for col in ("key", "value", "set at", "superseded at", "class", "sensitivity"):
            sup.add_column(col, overflow="fold")
        for s in snap.superseded:
            sup.add_row(s.key, _show(s.value), str(s.set_turn), str(s.superseded_turn),
                        s.class_.value, s.sensitivity.value)
        console.print(sup)
    if snap.deltas:
        deltas = Table(title=f"deltas at turn {snap.turn}")
        for col in ("op", "key", "value", "source", "note"):
            deltas.add_column(col, overflow="fold")
        for d in snap.deltas:
            deltas.add_row(d.op.value, d.key, "" if d.value is None else _show(d.value),
                           d.source.value, d.note or "")
        console.print(deltas)
    else:
        console.print(f"no deltas at turn {snap.turn}")


def ledger(
    scenario: Path = typer.Argument(..., help="scenario.yaml, or a directory holding one"),
    turn: int | None = typer.Option(None, "--turn", min=0,
                                    help="the turn (default: the last turn with a delta)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
) -> None:
    """Print the full reviewed ledger at a turn and the deltas applied at that turn."""
    with cli_errors():
        loaded = load_scenario(scenario)
    turns = loaded.ledger.turns()
    at = turn if turn is not None else (turns[-1] if turns else 0)
    snap = loaded.ledger.at(at)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(ledger_document(loaded.scenario.id, snap), indent=2))
    else:
        _print_text(loaded.scenario.id, snap)
