"""Conversions between the interchange records (Verdict, HumanLabel) and table rows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from judge.formats import HumanLabel, Verdict
from judge.store.db import as_utc, json_param

#: column order of `verdict_params`
VERDICT_COLUMNS = ["run_id", "item_id", "rubric", "prompt_version", "prompt_hash", "model",
                   "label", "violated_key", "evidence_event", "confidence",
                   "calibrated_confidence", "rationale", "reason", "overruled", "route",
                   "route_reason", "raw_completion", "meta", "created_at"]


def verdict_params(v: Verdict, run_id: str, created: Any) -> tuple[Any, ...]:
    """Driver parameters for VERDICT_COLUMNS (the bulk path: no per-row dicts). `created`
    is already in the driver's form."""
    return (run_id, v.item_id, v.rubric, v.prompt_version, v.prompt_hash, v.model, v.label,
            v.violated_key, v.evidence_event, v.confidence, v.calibrated_confidence,
            v.rationale, v.reason, v.overruled, v.route, v.route_reason, v.raw_completion,
            json_param(v.metadata), created)


_VERDICT_FIELDS = ("item_id", "label", "violated_key", "evidence_event", "confidence",
                   "rationale", "rubric", "prompt_version", "prompt_hash", "model", "reason",
                   "calibrated_confidence", "overruled", "route", "route_reason",
                   "raw_completion")


def row_verdict(row: Mapping[Any, Any]) -> Verdict:
    data = {k: row[k] for k in _VERDICT_FIELDS}
    data["metadata"] = dict(row["meta"] or {})
    data["metadata"].setdefault("run_id", row["run_id"])
    return Verdict.model_validate(data)


def label_fingerprint(label: HumanLabel) -> str:
    """Identity of one label event, its content and time: importing the same dated line (or
    an export of a stored label) twice adds nothing. Unchanged since the first schema, so
    every stored label keeps its fingerprint."""
    created = as_utc(label.created_at)
    assert created is not None
    ident = [label.item_id, label.annotator, label.label, label.violated_key,
             label.evidence_event, created.isoformat(timespec="microseconds"), label.note]
    return "sha256:" + hashlib.sha256(json.dumps(ident).encode()).hexdigest()


def label_row(label: HumanLabel, import_key: str | None = None) -> dict[str, Any]:
    """The row of `label`; `import_key` identifies a file line that gave no `created_at`
    (judge.labels.importing), None for every other label."""
    return {
        "item_id": label.item_id, "label": label.label, "violated_key": label.violated_key,
        "evidence_event": label.evidence_event, "annotator": label.annotator,
        "created_at": as_utc(label.created_at), "note": label.note, "meta": label.metadata,
        "fingerprint": label_fingerprint(label), "import_key": import_key}


def row_label(row: Mapping[Any, Any]) -> HumanLabel:
    return HumanLabel(
        item_id=row["item_id"], label=row["label"], violated_key=row["violated_key"],
        evidence_event=row["evidence_event"], annotator=row["annotator"],
        created_at=as_utc(row["created_at"]), note=row["note"], metadata=dict(row["meta"] or {}))


def canonical_json(obj: Any) -> str:
    """The JSON text content hashes are taken over (sorted keys, no spaces)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def canonical_hash(obj: Any) -> str:
    return text_hash(canonical_json(obj))
