"""`judge label`: people label judge items, blind to the judge by default.

Interactive (rich): the goal, the ledger snapshot (active, superseded, completed;
sensitivity), the item and its trace slice, progress "n of m". Keys: p pass, f fail,
u unsure, s skip, z undo, q quit. On fail: choose the violated key from the ledger and the
evidence event from the slice; then an optional note. `--show-judge` reveals the verdict.
Undo goes back to the item just labelled; the new label supersedes the old (both stay).

Non-interactive, for scripts:
    judge label --item ID --label fail --key K --evidence 7 --annotator NAME [--note …]
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from judge.cli.common import cli_errors, die
from judge.cli.console import console, echo, field, styled, text
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, float_option
from judge.cli.review import annotator_name
from judge.errors import InputError, JudgeError
from judge.formats import HumanLabel, Verdict, parse_item_id
from judge.formats.jury import juror_verdicts
from judge.review.labeling import check_label, ledger_keys, slice_seqs
from judge.store.records import REVIEW_LEASE_S

if TYPE_CHECKING:
    from judge.store import QueueEntry, Store

KEYS = "[p]ass  [f]ail  [u]nsure  [s]kip  [z] undo  [q]uit"  # printed as is: no markup


def label(
    item: str | None = typer.Option(None, "--item", help="label this item (non-interactive)"),
    value: str | None = typer.Option(None, "--label", help="pass, fail or unsure"),
    key: str | None = typer.Option(None, "--key", help="the violated ledger key (fail)"),
    evidence: int | None = typer.Option(None, "--evidence", help="the evidence event seq"),
    note: str | None = typer.Option(None, "--note", help="an optional note"),
    annotator: str | None = typer.Option(None, "--annotator", help="default JUDGE_ANNOTATOR"),
    show_judge: bool = typer.Option(False, "--show-judge",
                                    help="reveal the judge's verdict (hidden by default)"),
    rubric: str | None = typer.Option(None, "--rubric", help="only items of this rubric"),
    lease: float = float_option(REVIEW_LEASE_S, "--lease", lo=1.0, hi=A_WEEK_S,
                                help="claim lease in seconds"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Label review items: interactively from the queue, or one item with --item/--label."""
    with cli_errors():
        who = annotator_name(annotator)
        if value is not None or item is not None:
            if value is None or item is None:
                die("non-interactive labelling needs both --item and --label")
            with open_database(db) as store:
                _label_one(store, who, item, value, key, evidence, note)
            return
        if key or evidence is not None or note:
            die("--key, --evidence and --note need --item and --label")
        with open_database(db) as store:
            session = Session(store, who, show_judge=show_judge, rubric=rubric, lease_s=lease)
            try:
                session.run()
            except KeyboardInterrupt:  # the claim is given back already
                echo(f"interrupted; {len(session.done)} labelled this session"
                     f"{session.gave_back_note()}", err=True)
                raise typer.Exit(130) from None
            except JudgeError:
                raise
            except Exception as exc:  # one line, never a traceback; the claim is given back
                die(f"labelling stopped by an unexpected error ({type(exc).__name__}: {exc})"
                    f"{session.gave_back_note()}")


def _label_one(store: Store, who: str, item_id: str, value: str, key: str | None,
               evidence: int | None, note: str | None) -> None:
    data = store.get_item(item_id)
    if data is None and store.queue.get(item_id) is None:
        raise InputError(f"unknown item {item_id!r} (not stored and not in the review queue)",
                         field="item")
    check_label(data, value, key, evidence, item_id=item_id, annotator=who)
    store.add_label(HumanLabel(item_id=item_id, label=value,
                               violated_key=key, evidence_event=evidence, annotator=who,
                               note=note or None))
    echo(f"labelled {field(item_id)} {value} by {field(who)}")


class Session:
    """One interactive labelling session for one annotator.

    Whatever ends it — q, the end of piped input, Ctrl-C, an error — the item it holds is
    given back to the queue before it returns or raises (`held`)."""

    def __init__(self, store: Store, who: str, *, show_judge: bool, rubric: str | None,
                 lease_s: float, console: Console | None = None) -> None:
        self.store = store
        self.who = who
        self.show_judge = show_judge
        self.rubric = rubric
        self.lease_s = lease_s
        self.con = console or _console()
        self.skipped: list[str] = []
        self.done: list[str] = []  # item ids labelled in this session, in order
        self.held: str | None = None  # the item claimed and not yet labelled or given back
        self.released: str | None = None  # what an interruption gave back, for the message
        self.single_key = sys.stdin.isatty() and self.con.is_terminal

    def run(self) -> None:
        try:
            self._loop()
        except BaseException:
            self.give_back()
            raise

    def give_back(self) -> None:
        """Release the held item, if any (best effort: an expired lease frees it anyway)."""
        item, self.held = self.held, None
        if item is None:
            return
        try:
            if self.store.queue.release(item, self.who):
                self.released = item
        except Exception:  # the error being handled is the one to report
            pass

    def gave_back_note(self) -> str:
        return f"; gave {field(self.released)} back to the queue" if self.released else ""

    def _claimed(self, entry: QueueEntry | None) -> QueueEntry | None:
        self.held = entry.item_id if entry is not None else None
        return entry

    def _loop(self) -> None:
        pending: QueueEntry | None = None
        total = self.store.queue.remaining_for(self.who)
        while True:
            entry = pending or self._claimed(self.store.queue.claim(
                self.who, lease_s=self.lease_s, rubric=self.rubric, exclude=self.skipped))
            pending = None
            if entry is None:
                self.con.print(f"nothing left to label for {self.who} "
                               f"({len(self.done)} labelled this session)")
                return
            total = max(total, len(self.done) + 1)
            data = self.store.get_item(entry.item_id)
            self.show(entry, data, len(self.done) + 1, total)
            try:
                choice = self.ask_choice()
                if choice in ("p", "f", "u"):
                    self.record(entry, data, {"p": "pass", "f": "fail", "u": "unsure"}[choice])
                    continue
            except EOFError:  # the end of piped input: quit
                choice = "q"
            if choice == "q":
                self.give_back()
                self.con.print(f"stopped; {len(self.done)} labelled this session")
                return
            if choice == "s":
                self.give_back()
                self.skipped.append(entry.item_id)
                total = max(total - 1, len(self.done))
                continue
            if choice == "z":
                pending = self.undo(entry)

    def undo(self, current: QueueEntry) -> QueueEntry:
        if not self.done:
            self.con.print("nothing to undo")
            return current
        self.give_back()
        previous = self.done.pop()
        back = self._claimed(self.store.queue.reclaim(previous, self.who,
                                                      lease_s=self.lease_s))
        if back is None:  # labelled outside the queue, or someone else holds it now
            self.con.print(f"cannot go back to {previous}: it is held by someone else")
            other = self._claimed(self.store.queue.claim(
                self.who, lease_s=self.lease_s, rubric=self.rubric, exclude=self.skipped))
            return other or current
        self.con.print(f"back to {previous}: your new label will supersede the previous one")
        return back

    def record(self, entry: QueueEntry, data: dict[str, Any] | None, value: str) -> None:
        key: str | None = None
        evidence: int | None = None
        if value == "fail":
            key = self.pick("violated key (number or name)", ledger_keys(data or {}))
            seqs = [str(s) for s in slice_seqs(data or {})]
            target = _target_seq(entry.item_id)
            picked = self.pick(f"evidence event, a seq of the slice ({', '.join(seqs)})", seqs,
                               default=target, numbered=False)
            evidence = int(picked) if picked and picked.isdigit() else None
        note = self.con.input("note (Enter for none): ").strip() or None
        try:
            check_label(data, value, key, evidence, item_id=entry.item_id,
                        annotator=self.who)
        except InputError as exc:
            self.con.print(Text.assemble(styled(exc.message, "red"), "; not saved"))
            self.give_back()
            return
        self.store.add_label(HumanLabel(item_id=entry.item_id, label=value,
                                        violated_key=key, evidence_event=evidence,
                                        annotator=self.who, note=note))
        self.held = None
        self.done.append(entry.item_id)
        self.con.print(f"saved: {value}" + (f" {key} @ {evidence}" if key else ""))

    # -- input --------------------------------------------------------------------------
    def ask_choice(self) -> str:
        """One key on a terminal (no Enter needed); a line when input is piped (scripts)."""
        while True:
            if self.single_key:
                self.con.print(f"{KEYS} > ", end="")
                raw = str(typer.getchar()).lower()
                self.con.print(raw)
            else:
                raw = self.con.input(f"{KEYS} > ").strip().lower()
            if raw[:1] in ("p", "f", "u", "s", "z", "q") and raw:
                return raw[0]
            self.con.print("please answer p, f, u, s, z or q")

    def pick(self, what: str, options: list[str], default: str | None = None, *,
             numbered: bool = True) -> str | None:
        """Choose one of `options`: its value, or (when `numbered`) its number."""
        if not options:
            raw = self.con.input(f"{what}: ").strip()
            return raw or None
        if numbered:
            for i, opt in enumerate(options, 1):
                self.con.print(f"  {i}. {opt}")
        hint = f" [{default}]" if default in options else ""
        while True:
            raw = self.con.input(f"{what}{hint}: ").strip()
            if not raw and default in options:
                return default
            if raw in options:
                return raw
            if numbered and raw.isdigit() and 1 <= int(raw) <= len(options):
                return options[int(raw) - 1]
            self.con.print(f"choose one of: {', '.join(options)}")

    # -- display: trace text only ever as Text or plain strings, never as markup ---------
    def show(self, entry: QueueEntry, data: dict[str, Any] | None, n: int, m: int) -> None:
        con = self.con
        con.rule(Text.assemble(f"item {n} of {m}: ", text(entry.item_id)))
        why = Text.assemble("why it is here: ", text(entry.reason))
        if entry.safety_critical:
            why.append_text(Text.assemble("   ", styled("SAFETY-CRITICAL", "bold red")))
        con.print(why)
        if data is None:
            con.print(styled("the item's details are not stored; label from its id", "yellow"))
        else:
            con.print(Panel(text(data.get("goal") or "(no goal)"), title=Text("goal")))
            con.print(ledger_table(data.get("ledger") or {}))
            con.print(Text.assemble(
                "rubric ", text(data.get("rubric")), ": judge this ",
                text(str(data.get("kind", "item")).replace("_", " ")),
                " (event ", text(data.get("seq")), ")"))
            con.print(slice_table(data.get("events") or [], _int(data.get("seq"))))
        if self.show_judge:
            v = self.store.verdict_for_item(entry.item_id)
            con.print(Panel(text(verdict_text(v)), title=Text("judge (revealed)")))


def _console() -> Console:
    return console()


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _target_seq(item_id: str) -> str:
    """The item's own event (its seq), the default evidence."""
    try:
        return str(parse_item_id(item_id)[1])
    except ValueError:
        return ""


def ledger_table(ledger: dict[str, Any]) -> Table:
    table = Table(title="ledger at this point", show_lines=False)
    for col in ("key", "status", "class", "sensitivity", "value"):
        table.add_column(col)
    for section in ("active", "completed", "superseded", "revoked", "failed", "expired"):
        for e in ledger.get(section) or []:
            sens = str(e.get("sensitivity", ""))
            table.add_row(text(e.get("key")), section, text(e.get("class", "")),
                          styled(sens, "bold red") if "safety" in sens else text(sens),
                          text(_short(e.get("value"))))
    return table


def slice_table(events: list[dict[str, Any]], target: int) -> Table:
    table = Table(title="trace slice shown to the judge", show_lines=False)
    for col in ("seq", "turn", "kind", "content"):
        table.add_column(col)
    for ev in events:
        seq = ev.get("seq")
        mark = "→ " if seq == target else ""
        table.add_row(text(f"{mark}{seq}"), text(ev.get("turn", "")), text(ev.get("kind", "")),
                      text(_event_text(ev)), style="bold" if seq == target else None)
    return table


def verdict_text(v: Verdict | None) -> str:
    if v is None:
        return "no verdict stored"
    parts = [f"{v.label}", f"confidence {v.confidence}" if v.confidence is not None else ""]
    if v.violated_key:
        parts.append(f"key {v.violated_key} @ event {v.evidence_event}")
    if v.rationale:
        parts.append(f"— {v.rationale}")
    if v.reason:
        parts.append(f"({v.reason})")
    votes = juror_verdicts(v)  # a jury: each juror's vote
    if votes:
        parts.append("| jurors: " + ", ".join(f"{j} {jv.label}" for j, jv in votes.items()))
    return " ".join(p for p in parts if p)


def _event_text(ev: dict[str, Any]) -> str:
    kind = ev.get("kind")
    if kind in ("tool_call", "tool-call"):
        return f"{ev.get('tool')}({_short(ev.get('args'), 200)})"
    if kind in ("tool_result", "tool-result"):
        if ev.get("error"):
            return f"{ev.get('tool')} ERROR {ev.get('error')}"
        return f"{ev.get('tool')} → {_short(ev.get('result'), 200)}"
    if kind in ("state_write", "state-write"):
        return f"{ev.get('key')} = {_short(ev.get('value'))}"
    return _short(ev.get("text"), 400)


def _short(value: Any, limit: int = 80) -> str:
    s = value if isinstance(value, str) else json.dumps(value, default=str)
    return s if len(s) <= limit else s[: limit - 1] + "…"
