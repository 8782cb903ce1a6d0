"""Route a verdicts file with the calibration records, and check the split against labels
(`judge route`; no database).

Each verdict is routed as a run routes it (judge.routing.route_verdict): the record of its
(rubric, prompt hash, model) under the records folder calibrates its confidence (with its
label, for a per-label record); at or above the record's threshold it is auto-accepted, but
for the seeded audit share; below, unscored, a split jury or without a record it goes to
review; a verdict the file marks overruled stays a veto. Files carry no trace, so nothing
else is vetoed.

With labels, each part of the split is checked against the people's reference labels
(formats §4): how many of its verdicts have one and the share that agree, with a 95% Wilson
interval — for the auto-accepted part that is the precision routing gives, measured. And the
pass rate three ways: the judge's alone (every scored verdict), after review (the judge's
label where it was auto-accepted, the people's where it went to review; reviewed items
without a label are pending and left out) and the people's (every labelled item).

Plain data out (`RoutedFile.to_dict`, the `judge route --format json` object, docs/formats.md
"judge route"); the CLI prints it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.calibration.files import records_dir
from judge.calibration.record import CalibrationRecord, find_record, load_record
from judge.formats import Verdict
from judge.labels import read_labels, read_verdicts, reference_labels
from judge.labels.report import rubric_of
from judge.routing import RoutingPolicy, route_verdict

ROUTES = ("auto_accept", "review", "veto")
_Key = tuple[str, str | None, str]


@dataclass
class RecordUse:
    """One (rubric, prompt, model) of the file and the record routing found for it."""

    rubric: str
    prompt_version: str | None
    prompt_hash: str | None
    model: str
    n: int = 0
    record: CalibrationRecord | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        rec = self.record
        return {
            "rubric": self.rubric, "prompt_version": self.prompt_version,
            "prompt_hash": self.prompt_hash, "model": self.model, "n_verdicts": self.n,
            "calibration": None if rec is None else {
                "path": self.path, "method": rec.method, "threshold": rec.threshold,
                "target": rec.target, "n_labelled": rec.n,
                "expected_review_share": rec.expected_review_share,
                "held_out_accepted_agreement": rec.held_out_accepted_agreement,
                "held_out_lower_bound": rec.held_out_lower_bound,
                "created_at": rec.created_at.isoformat()}}


@dataclass
class RoutedFile:
    verdicts_path: str
    verdicts: list[Verdict]  # routed: route, route_reason, calibrated_confidence set
    uses: list[RecordUse]
    labels_path: str | None = None
    refs: dict[str, str] = field(default_factory=dict)  # item id -> pass | fail reference

    def to_dict(self) -> dict[str, Any]:
        routes: dict[str, Any] = {}
        for name in ROUTES:
            part = [v for v in self.verdicts if v.route == name]
            labels = Counter(v.label for v in part)
            entry: dict[str, Any] = {
                "n": len(part), "pass": labels["pass"], "fail": labels["fail"],
                "unscored": labels["unscored"],
                "reasons": dict(Counter(v.route_reason or "(none)" for v in part)
                                .most_common())}
            if self.labels_path is not None:
                entry["measured"] = _measured(part, self.refs)
            routes[name] = entry
        n = len(self.verdicts)
        out: dict[str, Any] = {
            "verdicts": self.verdicts_path, "n_verdicts": n,
            "records": [u.to_dict() for u in self.uses],
            "routes": routes,
            "review_share": routes["review"]["n"] / n if n else 0.0,
            "labels": self.labels_path,
            "pass_rate": self._pass_rates(),
        }
        return out

    def _pass_rates(self) -> dict[str, Any]:
        scored = [v for v in self.verdicts if v.label in ("pass", "fail")]
        out: dict[str, Any] = {"judge": _rate(sum(v.label == "pass" for v in scored),
                                              len(scored))}
        if self.labels_path is None:
            return out
        final: list[str] = []
        pending = 0
        for v in self.verdicts:
            if v.route == "auto_accept" and v.label in ("pass", "fail"):
                final.append(v.label)
            elif v.item_id in self.refs:
                final.append(self.refs[v.item_id])
            else:
                pending += 1
        out["after_review"] = {**_rate(final.count("pass"), len(final)), "pending": pending}
        people = [self.refs[v.item_id] for v in self.verdicts if v.item_id in self.refs]
        out["people"] = _rate(people.count("pass"), len(people))
        return out


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"estimate": k / n if n else None, "k": k, "n": n}


def _measured(part: list[Verdict], refs: dict[str, str]) -> dict[str, Any]:
    """How many of `part` carry a pass/fail reference label and the share the judge's scored
    label agrees with, with its 95% Wilson interval (null when none is labelled)."""
    from judge.stats.budget import wilson_interval

    pairs = [(refs[v.item_id], v.label) for v in part
             if v.item_id in refs and v.label in ("pass", "fail")]
    agreed = sum(h == j for h, j in pairs)
    if not pairs:
        return {"labelled": 0, "agreed": 0, "agreement": None, "ci": None}
    lo, hi = wilson_interval(agreed, len(pairs))
    return {"labelled": len(pairs), "agreed": agreed, "agreement": agreed / len(pairs),
            "ci": [float(lo), float(hi)]}


def route_file(verdicts_path: str | Path, *, labels_path: str | Path | None = None,
               records_root: str | Path | None = None,
               policy: RoutingPolicy = RoutingPolicy()) -> RoutedFile:
    """Route every verdict of a verdicts file with the records under `records_root`
    (default: $JUDGE_CALIBRATION_DIR or calibration/); InputError for a bad file."""
    verdicts = read_verdicts(verdicts_path)
    root = records_dir(records_root)
    files = sorted(root.glob("*/*.json")) if root.is_dir() else []
    loaded = [(load_record(p), str(p)) for p in files]
    records = [r for r, _ in loaded]
    uses: dict[_Key, RecordUse] = {}
    for v in verdicts:
        key = (v.rubric or rubric_of(v.item_id), v.prompt_hash, v.model or "unknown")
        use = uses.get(key)
        if use is None:
            record = find_record(records, *key)
            use = uses[key] = RecordUse(key[0], v.prompt_version, key[1], key[2],
                                        record=record,
                                        path=next((p for r, p in loaded if r is record), None))
        use.n += 1
        vetoed = v.overruled or v.route == "veto"
        routed = route_verdict(v, vetoed=vetoed, calibration=use.record, policy=policy)
        v.route, v.route_reason = routed.route, routed.reason
        if vetoed:
            v.overruled = True
        if routed.calibrated_confidence is not None:
            v.calibrated_confidence = routed.calibrated_confidence
    refs: dict[str, str] = {}
    if labels_path is not None:
        refs = {i: r.label for i, r in reference_labels(read_labels(labels_path)).labels.items()
                if r.label in ("pass", "fail")}
    return RoutedFile(str(verdicts_path), verdicts, list(uses.values()),
                      None if labels_path is None else str(labels_path), refs)
