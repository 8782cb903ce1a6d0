"""What a human label may say: the one set of rules `judge label` and `judge labels import`
both apply (`check_label`).

- `item_id` is an item id, `<trace_id>#<seq>:<rubric>` (formats §3); `annotator` is not blank.
- `label` is pass, fail or unsure. A fail names the violated ledger key and the evidence
  event (a positive `seq`); a pass or unsure names neither.
- When the item is stored, the key must be a key of the ledger snapshot shown with it and
  the evidence a `seq` of the trace slice shown with it.

Errors are InputErrors naming the label record's field (`item_id`, `annotator`, `label`,
`violated_key`, `evidence_event`); callers add the file and line.
"""

from __future__ import annotations

from typing import Any

from judge.errors import InputError
from judge.formats import parse_item_id

LEDGER_SECTIONS = ("active", "completed", "superseded", "revoked", "failed", "expired")
LABELS = ("pass", "fail", "unsure")


def ledger_keys(item: dict[str, Any]) -> list[str]:
    """Keys of the item's ledger snapshot, in display order (active first)."""
    keys: list[str] = []
    for k in item.get("ledger_keys") or []:
        if k not in keys:
            keys.append(str(k))
    ledger = item.get("ledger") or {}
    for section in LEDGER_SECTIONS:
        for entry in ledger.get(section) or []:
            k = entry.get("key")
            if k is not None and str(k) not in keys:
                keys.append(str(k))
    return keys


def slice_seqs(item: dict[str, Any]) -> list[int]:
    seqs = {int(s) for s in item.get("slice_seqs") or []}
    seqs.update(int(e["seq"]) for e in item.get("events") or [] if e.get("seq") is not None)
    return sorted(seqs)


def check_label(item: dict[str, Any] | None, label: str, key: str | None,
                evidence: int | None, *, item_id: str, annotator: str) -> None:
    """Raise InputError naming the field when the label cannot be right (for this stored
    `item`, when there is one: None means the item is not stored and only the record's own
    rules apply)."""
    try:
        parse_item_id(item_id)
    except ValueError:
        raise InputError(f"not an item id (want <trace_id>#<seq>:<rubric>): {item_id!r}",
                         field="item_id") from None
    if not annotator.strip():
        raise InputError("the annotator's name is blank", field="annotator")
    if label not in LABELS:
        raise InputError(f"want pass, fail or unsure, got {label!r}", field="label")
    if label == "fail" and not key:
        raise InputError("a fail label needs the violated ledger key", field="violated_key")
    if label != "fail" and key is not None:
        raise InputError(f"a {label} label names no violated key (got {key!r})",
                         field="violated_key")
    if label != "fail" and evidence is not None:
        raise InputError(f"a {label} label names no evidence event (got {evidence!r})",
                         field="evidence_event")
    if item is not None and key is not None and key not in (keys := ledger_keys(item)):
        raise InputError(f"{key!r} is not a key of this item's ledger "
                         f"(one of: {', '.join(keys) or 'none'})", field="violated_key")
    if label == "fail" and evidence is None:
        raise InputError("a fail label needs the evidence event (a seq of the trace slice)",
                         field="evidence_event")
    if evidence is not None and (type(evidence) is not int or evidence < 1):
        raise InputError(f"the evidence event is a seq, a positive integer (got {evidence!r})",
                         field="evidence_event")
    if item is not None and evidence is not None and evidence not in (seqs := slice_seqs(item)):
        raise InputError(f"event {evidence} is not in this item's trace slice "
                         f"(seqs: {', '.join(map(str, seqs))})", field="evidence_event")
