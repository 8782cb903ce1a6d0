"""A jury verdict's record of its jurors (`metadata.jury`, written by judge.grading.jury):
read back as plain verdicts, for reports that give each juror's agreement. An extension of
the verdict format (formats §3): a verdict without it is a single judge's."""

from __future__ import annotations

from typing import Any

from judge.formats.verdicts import Verdict


def jury_record(verdict: Verdict) -> dict[str, Any] | None:
    """The verdict's jury record, or None (a single judge's verdict, or a malformed one)."""
    record = verdict.metadata.get("jury")
    if not isinstance(record, dict) or not isinstance(record.get("jurors"), list):
        return None
    return record


def juror_verdicts(verdict: Verdict) -> dict[str, Verdict]:
    """Each juror's verdict on the item, rebuilt from a jury verdict's metadata (empty for a
    verdict that is not a jury's, or whose record is malformed)."""
    record = jury_record(verdict)
    if record is None:
        return {}
    out: dict[str, Verdict] = {}
    for r in record["jurors"]:
        if not isinstance(r, dict) or not isinstance(r.get("juror"), str):
            continue
        try:
            out[r["juror"]] = Verdict(
                item_id=verdict.item_id, label=r.get("label"), violated_key=r.get("violated_key"),
                evidence_event=r.get("evidence_event"), confidence=r.get("confidence"),
                reason=r.get("reason") or (None if r.get("label") != "unscored"
                                           else "juror unscored"),
                rubric=verdict.rubric, model=r.get("model"))
        except ValueError:  # a hand-edited record: that juror is left out
            continue
    return out
