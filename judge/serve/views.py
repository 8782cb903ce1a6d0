"""What the pages show, as plain data built from stored items, queue entries and verdicts.

Nothing here escapes: templates autoescape, and the environment passes every value through
`judge.safe_text.visible` first (judge.serve.templating), so trace text arrives as inert
text. These functions only choose and shape what is shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from judge.formats import Verdict, parse_item_id
from judge.formats.jury import juror_verdicts
from judge.review.labeling import LEDGER_SECTIONS, ledger_keys, slice_seqs

EVENT_TEXT_LIMIT = 2000


@dataclass(frozen=True)
class LedgerRow:
    key: str
    section: str
    value: str
    cls: str
    sensitivity: str
    since: str
    changed: bool  # set, completed, revoked or superseded at the snapshot's own turn
    struck: bool  # a superseded value
    safety: bool


@dataclass(frozen=True)
class EventRow:
    seq: int | None
    turn: str
    kind: str
    text: str
    judged: bool


@dataclass
class ItemView:
    item_id: str
    rubric: str
    kind: str
    seq: int | None
    turn: int | None
    goal: str
    question: str
    ledger_turn: int | None
    ledger: list[LedgerRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    stored: bool = True


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def short(value: Any, limit: int = EVENT_TEXT_LIMIT) -> str:
    s = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def event_text(ev: dict[str, Any]) -> str:
    kind = str(ev.get("kind"))
    if kind in ("tool_call", "tool-call"):
        return f"{ev.get('tool')}({short(ev.get('args'), 600)})"
    if kind in ("tool_result", "tool-result"):
        if ev.get("error"):
            return f"{ev.get('tool')} ERROR {short(ev.get('error'), 600)}"
        return f"{ev.get('tool')} → {short(ev.get('result'), 1200)}"
    if kind in ("state_write", "state-write"):
        return f"{ev.get('key')} = {short(ev.get('value'), 600)}"
    return short(ev.get("text") if ev.get("text") is not None else "")


def question(rubric: str, kind: str, seq: int | None) -> str:
    what = kind.replace("_", " ") or "item"
    return (f"Rubric {rubric}: does this {what} (event {seq if seq is not None else '?'}) "
            "respect the ledger? Pass, fail (name the violated key and the evidence event), "
            "or unsure.")


def ledger_rows(ledger: dict[str, Any]) -> list[LedgerRow]:
    turn = _int(ledger.get("turn"))
    rows: list[LedgerRow] = []
    for section in LEDGER_SECTIONS:
        entries = ledger.get(section)
        for e in entries if isinstance(entries, list) else []:
            if not isinstance(e, dict):
                continue
            struck = section == "superseded"
            since = _int(e.get("superseded_turn") if struck else e.get("since_turn"))
            sens = str(e.get("sensitivity") or "")
            rows.append(LedgerRow(
                key=str(e.get("key")), section=section, value=short(e.get("value"), 400),
                cls=str(e.get("class") or ""), sensitivity=sens,
                since="" if since is None else str(since),
                changed=turn is not None and since == turn, struck=struck,
                safety="safety" in sens))
    return rows


def item_view(item_id: str, data: dict[str, Any] | None, rubric: str | None) -> ItemView:
    """The blind view of an item: never the judge's verdict."""
    try:
        _, id_seq, id_rubric = parse_item_id(item_id)
    except ValueError:
        id_seq, id_rubric = None, rubric or ""
    if data is None:
        return ItemView(item_id=item_id, rubric=rubric or id_rubric, kind="", seq=id_seq,
                        turn=None, goal="", question=question(rubric or id_rubric, "", id_seq),
                        ledger_turn=None, stored=False)
    seq = _int(data.get("seq"))
    kind = str(data.get("kind") or "item")
    rub = str(data.get("rubric") or rubric or id_rubric)
    raw_ledger = data.get("ledger")
    ledger: dict[str, Any] = raw_ledger if isinstance(raw_ledger, dict) else {}
    events = [ev for ev in data.get("events") or [] if isinstance(ev, dict)]
    clean = _clean(ledger, events, data)
    return ItemView(
        item_id=item_id, rubric=rub, kind=kind, seq=seq, turn=_int(data.get("turn")),
        goal=str(data.get("goal") or ""), question=question(rub, kind, seq),
        ledger_turn=_int(ledger.get("turn")), ledger=ledger_rows(ledger),
        events=[EventRow(seq=_int(ev.get("seq")), turn=str(ev.get("turn", "")),
                         kind=str(ev.get("kind", "")), text=event_text(ev),
                         judged=_int(ev.get("seq")) == seq and seq is not None)
                for ev in events],
        keys=ledger_keys(clean), seqs=slice_seqs(clean))


def _clean(ledger: dict[str, Any], events: list[dict[str, Any]],
           data: dict[str, Any]) -> dict[str, Any]:
    """The parts of a stored item the shared label rules read, keeping only well-formed
    values (a stored item is ours, but the page must render whatever the row holds)."""
    sections = {s: [e for e in ledger.get(s) or [] if isinstance(e, dict)]
                if isinstance(ledger.get(s), list) else [] for s in LEDGER_SECTIONS}
    raw_keys = data.get("ledger_keys")
    raw_seqs = data.get("slice_seqs")
    return {"ledger": sections,
            "ledger_keys": [k for k in raw_keys if isinstance(k, str)]
            if isinstance(raw_keys, list) else [],
            "slice_seqs": [s for s in raw_seqs if _int(s) is not None]
            if isinstance(raw_seqs, list) else [],
            "events": [e for e in events if _int(e.get("seq")) is not None]}


def verdict_lines(v: Verdict | None) -> list[tuple[str, str]]:
    if v is None:
        return [("verdict", "no verdict stored for this item")]
    out: list[tuple[str, str]] = [("label", str(v.label))]
    if v.confidence is not None:
        out.append(("confidence", f"{v.confidence:.3f}"))
    if v.calibrated_confidence is not None:
        out.append(("calibrated confidence", f"{v.calibrated_confidence:.3f}"))
    if v.violated_key:
        out.append(("violated key", v.violated_key))
    if v.evidence_event is not None:
        out.append(("evidence event", str(v.evidence_event)))
    if v.rationale:
        out.append(("rationale", v.rationale))
    if v.reason:
        out.append(("reason", v.reason))
    if v.route:
        out.append(("route", f"{v.route} ({v.route_reason or ''})"))
    for juror, jv in juror_verdicts(v).items():  # a jury: each juror's vote
        vote = str(jv.label) + (f" · key {jv.violated_key} @ {jv.evidence_event}"
                                if jv.label == "fail" else "")
        if jv.confidence is not None:
            vote += f" · {jv.confidence:.2f}"
        out.append((f"juror {juror}", vote if jv.label != "unscored"
                    else f"unscored: {jv.reason}"))
    return out
