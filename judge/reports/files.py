"""Build an agreement report from a labels file and a verdicts file (no database)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judge.calibration.record import CalibrationRecord, find_record, load_records
from judge.formats import Verdict
from judge.labels import agreement_report, read_labels, read_verdicts, reference_labels
from judge.labels.report import rubric_of
from judge.reports.model import AgreementReport, build_report


def review_stats(
    verdicts: Sequence[Verdict], record: CalibrationRecord | None = None
) -> dict[str, Any] | None:
    """Routing counts from the verdicts' `route` / `route_reason`; None if none was routed."""
    routed = [v for v in verdicts if v.route]
    if not routed:
        return None
    by_route = Counter(v.route for v in routed)
    by_reason = Counter(v.route_reason or "(none)" for v in routed if v.route == "review")
    return {
        "n_routed": len(routed),
        "by_route": dict(sorted(by_route.items())),
        "review_reasons": dict(by_reason.most_common()),
        "review_share": by_route.get("review", 0) / len(routed),
        "expected_review_share": record.expected_review_share if record else None,
    }


def report_from_files(
    labels_path: str | Path,
    verdicts_path: str | Path,
    *,
    calibration_root: str | Path | None = None,
    rubric: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """Agreement (judge.labels), reliability and coverage curves, and routing statistics.

    With `calibration_root`, the record of the verdicts' (rubric, prompt hash, model) is used
    for calibrated curves when the paired verdicts share exactly one such triple.
    """
    labels = read_labels(labels_path)
    verdicts = read_verdicts(verdicts_path)
    if rubric is not None:
        verdicts = [v for v in verdicts if rubric_of(v.item_id, v) == rubric]
        labels = [lab for lab in labels if rubric_of(lab.item_id) == rubric]
    agreement = agreement_report(labels, verdicts, n_boot=n_boot, seed=seed)

    refs = reference_labels(labels).labels
    paired = [
        (refs[v.item_id].label, v) for v in verdicts
        if v.item_id in refs and refs[v.item_id].label != "unsure"
        and v.label != "unscored" and v.confidence is not None
    ]
    conf = np.array([v.confidence for _, v in paired], dtype=np.float64)
    agreed = np.array([h == v.label for h, v in paired], dtype=np.float64)
    record = None
    triples = {(rubric_of(v.item_id, v), v.prompt_hash, v.model or "unknown") for _, v in paired}
    if calibration_root is not None and len(triples) == 1:
        (r, phash, model), = triples
        record = find_record(load_records(calibration_root), r, phash, model)
    sources = {"labels": str(labels_path), "verdicts": str(verdicts_path)}
    if record is not None and calibration_root is not None:
        sources["calibration"] = str(record.path(calibration_root))
    return build_report(
        agreement,
        confidence=conf if paired else None,
        agreed=agreed if paired else None,
        judge_fail=np.array([v.label == "fail" for _, v in paired]) if paired else None,
        record=record,
        review=review_stats(verdicts, record),
        sources=sources,
    )
