"""`judge ledger SCENARIO --turn N`: the reviewed ledger as it holds at a turn, and its deltas.

With the scenario's `sessions:`, `--session S` shows the ledger as session S sees it (at its
last turn with a delta, or `--turn` within it): its own session-scoped entries and every
cross-session one, with what earlier sessions scoped to themselves expired; `--cross-session`
shows only what carries into a later session (`until_replaced` entries, and completions).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from judge.cli.common import cli_errors, die
from judge.cli.console import console as safe_console
from judge.ledger.loader import LoadedScenario, load_scenario
from judge.ledger.reducer import Entry, LedgerSnapshot

STATUS_ORDER = ("active", "completed", "revoked", "failed", "expired")


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def ledger_document(scenario_id: str, snap: LedgerSnapshot,
                    view: str | None = None) -> dict[str, Any]:
    doc = {
        "scenario": scenario_id,
        **snap.to_dict(),
        "deltas": [d.model_dump(mode="json", by_alias=True, exclude_none=True)
                   for d in snap.deltas],
    }
    if view is not None:
        doc["view"] = view
    return doc


def carried(snap: LedgerSnapshot) -> LedgerSnapshot:
    """The cross-session view: the entries a later session still sees as they are (those
    that persist until replaced, and completions), with the superseded history."""
    keep = {k: e for k, e in snap.entries.items() if _carries(e)}
    return LedgerSnapshot(snap.turn, keep, snap.superseded, snap.deltas, session=snap.session)


def _carries(e: Entry) -> bool:
    return e.cross_session or e.status == "completed"


def _scope(e: Entry) -> str:
    return "cross-session" if e.cross_session else f"session {e.session}"


def session_turn(loaded: LoadedScenario, session: str, turn: int | None) -> int:
    """The turn to show session `session` at: `turn` (which must lie in it), else its last
    turn with a delta, else its first turn. A usage error (exit 2) for an unknown session."""
    plan = loaded.ledger.plan
    if not plan:
        die(f"{loaded.file}: scenario '{loaded.scenario.id}' lists no sessions "
            "(sessions:), so --session has nothing to show")
    if session not in plan.ids:
        die(f"{loaded.file}: no session '{session}' in sessions: ({', '.join(plan.ids)})")
    first, last = plan.turns_of(session)
    within = f"turns {first}-{last}" if last is not None else f"turns {first} on"
    if turn is not None:
        if turn < first or (last is not None and turn > last):
            die(f"--turn {turn} is not in session '{session}' ({within})")
        return turn
    turns = [t for t in loaded.ledger.turns() if t >= first and (last is None or t <= last)]
    spec = next(s for s in loaded.scenario.sessions if s.id == session)
    return turns[-1] if turns else spec.first_turn


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _print_text(scenario_id: str, snap: LedgerSnapshot, view: str | None = None) -> None:
    console = safe_console(width=140)  # values, notes, keys: nothing live, no markup
    title = f"{scenario_id}: ledger at turn {snap.turn}"
    if snap.session is not None:
        title += f", session {snap.session}"
    if view == "cross-session":
        title += ": what carries into a later session"
    entries = Table(title=title)
    sessions = snap.session is not None
    cols = ["key", "status", "class", "value", "sensitivity", "persistence", "source", "since"]
    for col in (*cols, "scope") if sessions else cols:
        entries.add_column(col, overflow="fold")
    ordered = sorted(snap.entries.values(),
                     key=lambda e: (STATUS_ORDER.index(e.status), e.since_turn, e.key))
    for e in ordered:
        row = [e.key, e.status, e.class_.value, _show(e.value), e.sensitivity.value,
               e.persistence.value, e.source.value, str(e.since_turn)]
        entries.add_row(*row, *([_scope(e)] if sessions else []))
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
    session: str | None = typer.Option(
        None, "--session",
        help="show the ledger as this session (of the scenario's sessions:) sees it, at its "
             "last turn with a delta unless --turn (a turn of the session) is given"),
    cross_session: bool = typer.Option(
        False, "--cross-session",
        help="show only what carries into a later session: entries that persist until "
             "replaced, and completions"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
) -> None:
    """Print the full reviewed ledger at a turn and the deltas applied at that turn."""
    with cli_errors():
        loaded = load_scenario(scenario)
    turns = loaded.ledger.turns()
    if session is not None:
        at = session_turn(loaded, session, turn)
    else:
        at = turn if turn is not None else (turns[-1] if turns else 0)
    snap = loaded.ledger.at(at)
    view = "cross-session" if cross_session else ("session" if session is not None else None)
    if cross_session:
        snap = carried(snap)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(ledger_document(loaded.scenario.id, snap, view), indent=2))
    else:
        _print_text(loaded.scenario.id, snap, view)
