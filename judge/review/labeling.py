"""What a label may say about a stored item: its violated key must be a key of the ledger
snapshot shown, its evidence a `seq` of the trace slice shown. Used by `judge label`."""

from __future__ import annotations

from typing import Any

from judge.errors import InputError

LEDGER_SECTIONS = ("active", "completed", "superseded", "revoked", "failed", "expired")


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
                evidence: int | None) -> None:
    """Raise InputError naming the field when the label cannot be right for this item."""
    if label not in ("pass", "fail", "unsure"):
        raise InputError(f"want pass, fail or unsure, got {label!r}", field="label")
    if label == "fail" and not key:
        raise InputError("a fail label needs the violated ledger key (--key)", field="key")
    if label != "fail" and (key or evidence is not None):
        raise InputError("--key and --evidence go with a fail label only", field="key")
    if item is None:
        return
    if key and key not in (keys := ledger_keys(item)):
        raise InputError(f"{key!r} is not a key of this item's ledger "
                         f"(one of: {', '.join(keys) or 'none'})", field="key")
    if evidence is not None and evidence not in (seqs := slice_seqs(item)):
        raise InputError(f"event {evidence} is not in this item's trace slice "
                         f"(seqs: {', '.join(map(str, seqs))})", field="evidence")
