"""`judge review list|stats|next|release`: the review queue from the command line.

    judge review list [--state open|claimed|done|all] [--rubric R] [--limit N] [--format json]
    judge review stats [--format json]          (with human–human agreement on double labels)
    judge review next --annotator NAME [--lease SECONDS] [--rubric R] [--format json]
    judge review release ITEM [--annotator NAME] | judge review release --expired
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from judge.cli.common import cli_errors, die
from judge.cli.console import console, echo, field
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, float_option
from judge.store.records import REVIEW_LEASE_S

if TYPE_CHECKING:
    from judge.store import QueueEntry, Store

app = typer.Typer(help="The review queue: what people label next.", no_args_is_help=True)


class Fmt(StrEnum):
    text = "text"
    json = "json"


def annotator_name(value: str | None) -> str:
    """--annotator, else JUDGE_ANNOTATOR; a usage error when neither is set."""
    name = value or os.environ.get("JUDGE_ANNOTATOR")
    if not name:
        die("no annotator: pass --annotator NAME or set JUDGE_ANNOTATOR")
    return name


def human_agreement(store: Store) -> dict[str, Any] | None:
    """Human–human agreement over items labelled by two or more people (None if none)."""
    from judge.labels import human_human_agreement, reference_labels

    return human_human_agreement(reference_labels(store.labels_for()))


def _table(entries: list[QueueEntry]) -> Table:
    table = Table(show_lines=False)
    table.add_column("item", overflow="fold", min_width=12)
    for col in ("reason", "safety", "conf", "state", "labels"):
        table.add_column(col, no_wrap=True)
    table.add_column("claimed by", overflow="fold")
    for e in entries:
        table.add_row(e.item_id, e.reason, "yes" if e.safety_critical else "",
                      "-" if e.confidence is None else f"{e.confidence:.2f}", e.state,
                      f"{e.n_labelled}/{e.required}", e.claimed_by or "")
    return table


@app.command("list")
def list_(
    state: str = typer.Option("open", "--state", help="open, claimed, done or all"),
    rubric: str | None = typer.Option(None, "--rubric"),
    limit: int = typer.Option(50, "--limit", help="at most this many (0 = all)"),
    fmt: Fmt = typer.Option(Fmt.text, "--format"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Queue entries in claim order: safety-critical first, then lowest confidence."""
    with cli_errors():
        if state not in ("open", "claimed", "done", "all"):
            die(f"--state: want open, claimed, done or all, got {state!r}")
        with open_database(db) as store:
            entries = store.queue.entries(state=None if state == "all" else state,
                                          rubric=rubric, limit=limit or None)
        if fmt == Fmt.json:
            typer.echo(json.dumps([e.to_dict() for e in entries], indent=2))
        elif not entries:
            typer.echo(f"no {state if state != 'all' else ''} entries".replace("  ", " "))
        else:
            console().print(_table(entries))


@app.command("stats")
def stats(
    fmt: Fmt = typer.Option(Fmt.text, "--format"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Counts by state and reason, and human–human agreement on double-labelled items."""
    with cli_errors():
        with open_database(db) as store:
            out = store.queue.stats()
            out["labels"] = store.count_labels()
            out["human_human"] = human_agreement(store)
        if fmt == Fmt.json:
            typer.echo(json.dumps(out, indent=2))
            return
        con = console()
        st = out["by_state"]
        con.print(f"queue: {out['total']} items — {st['open']} open, {st['claimed']} claimed, "
                  f"{st['done']} done; {out['safety_critical_pending']} safety-critical pending")
        for reason, n in out["pending_by_reason"].items():
            con.print(f"  pending, {reason}: {n}")
        dbl = out["double_labelled"]
        con.print(f"double labelling: {dbl['done']} of {dbl['items']} items done; "
                  f"{out['labels']} labels stored")
        hh = out["human_human"]
        if hh is None:
            con.print("human–human agreement: no item labelled by two people yet")
        else:
            kappa = hh.get("cohen_kappa")
            alpha = hh.get("krippendorff_alpha")
            con.print(f"human–human agreement on {hh['n_items']} items "
                      f"({hh['n_annotators']} annotators): "
                      f"{hh['percent_agreement']:.1%} agree; "
                      f"Cohen's kappa {'n/a' if kappa is None else f'{kappa:.3f}'}, "
                      f"Krippendorff's alpha {'n/a' if alpha is None else f'{alpha:.3f}'} "
                      "(the ceiling a judge can reach)")


@app.command("next")
def next_(
    annotator: str | None = typer.Option(None, "--annotator", help="default JUDGE_ANNOTATOR"),
    lease: float = float_option(REVIEW_LEASE_S, "--lease", lo=1.0, hi=A_WEEK_S,
                                help="claim lease in seconds"),
    rubric: str | None = typer.Option(None, "--rubric"),
    fmt: Fmt = typer.Option(Fmt.text, "--format"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Claim the next item for an annotator (a lease that expires) and print it."""
    with cli_errors():
        who = annotator_name(annotator)
        if lease <= 0:
            die("--lease must be positive")
        with open_database(db) as store:
            entry = store.queue.claim(who, lease_s=lease, rubric=rubric)
        if fmt == Fmt.json:
            typer.echo(json.dumps(entry.to_dict() if entry else None))
        elif entry is None:
            echo(f"nothing left to review for {field(who)}")
        else:
            echo(f"{field(entry.item_id)}\t{field(entry.reason)}\tclaimed by {field(who)} "
                 f"until {entry.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC")


@app.command("release")
def release(
    item: str | None = typer.Argument(None, help="the item id to give back"),
    annotator: str | None = typer.Option(None, "--annotator",
                                         help="only release this annotator's claim"),
    expired: bool = typer.Option(False, "--expired", help="release every expired lease"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Give a claimed item back to the queue (or every expired lease with --expired)."""
    with cli_errors():
        if (item is None) == (not expired):
            die("give an ITEM or --expired")
        with open_database(db) as store:
            if expired:
                typer.echo(f"released {store.queue.release_expired()} expired claims")
                return
            assert item is not None
            who = annotator
            if not store.queue.release(item, who):
                entry = store.queue.get(item)
                if entry is None:
                    die(f"{item}: not in the review queue")
                die(f"{item}: not claimed{f' by {who}' if who else ''} (state {entry.state})", 1)
        echo(f"released {field(item)}")
