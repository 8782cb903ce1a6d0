"""The agreement report, built one way from files or from the database.

`assemble_report` is the one builder: agreement (judge.labels), the raw confidence and
agreement of the paired scored items for reliability and coverage curves, the calibration
record of their (rubric, prompt hash, model) when they share exactly one, and routing
statistics. `report_from_files` and `report_from_store` only differ in where the labels,
verdicts and record come from, and in the store's live review-queue statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judge.calibration.record import CalibrationRecord, find_record, load_records
from judge.formats import Verdict
from judge.labels import agreement_report, reference_labels
from judge.labels.report import rubric_of
from judge.labels.sources import LabelledVerdicts, from_files, from_store
from judge.reports.model import AgreementReport, build_report

if TYPE_CHECKING:
    from judge.store import Store

# (rubric, prompt hash, model) -> the record and where it came from, or None
RecordFinder = Callable[[str, str | None, str], tuple[CalibrationRecord, str] | None]


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


def assemble_report(
    data: LabelledVerdicts,
    *,
    find: RecordFinder | None = None,
    queue: Mapping[str, Any] | None = None,
    title: str = "Judge agreement report",
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """Agreement, curves, the calibration record `find` returns for the paired verdicts'
    single (rubric, prompt hash, model), and routing statistics (with `queue` added)."""
    agreement = agreement_report(data.labels, data.verdicts, n_boot=n_boot, seed=seed)
    refs = reference_labels(data.labels).labels
    paired = [(refs[v.item_id].label, v) for v in data.verdicts
              if v.item_id in refs and refs[v.item_id].label != "unsure"
              and v.label != "unscored" and v.confidence is not None]
    triples = {(rubric_of(v.item_id, v), v.prompt_hash, v.model or "unknown") for _, v in paired}
    found = find(*next(iter(triples))) if find is not None and len(triples) == 1 else None
    record = found[0] if found is not None else None
    review = review_stats(data.verdicts, record)
    if queue is not None:
        review = {**(review or {"n_routed": 0}), "queue": dict(queue)}
    sources = dict(data.sources)
    if found is not None:
        sources["calibration"] = found[1]
    return build_report(
        agreement,
        confidence=np.array([v.confidence for _, v in paired], dtype=np.float64)
        if paired else None,
        agreed=np.array([h == v.label for h, v in paired], dtype=np.float64) if paired else None,
        judge_fail=np.array([v.label == "fail" for _, v in paired]) if paired else None,
        record=record, review=review, sources=sources, title=title)


def _in_folder(root: str | Path) -> RecordFinder:
    def find(rubric: str, prompt_hash: str | None, model: str
             ) -> tuple[CalibrationRecord, str] | None:
        record = find_record(load_records(root), rubric, prompt_hash, model)
        return None if record is None else (record, str(record.path(root)))
    return find


def report_from_files(
    labels_path: str | Path,
    verdicts_path: str | Path,
    *,
    calibration_root: str | Path | None = None,
    rubric: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """The report of a labels file and a verdicts file (optionally one rubric's items); with
    `calibration_root`, the record found there gives calibrated curves."""
    return assemble_report(
        from_files(labels_path, verdicts_path, rubric=rubric),
        find=_in_folder(calibration_root) if calibration_root is not None else None,
        n_boot=n_boot, seed=seed)


def report_from_store(
    store: Store,
    rubric: str,
    *,
    prompt_version: str | None = None,
    model: str | None = None,
    calibration_root: str | Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """The report of `rubric` from the database: the newest stored verdict per item
    (optionally one prompt version / model), the items' label history, the record of the
    verdicts' (prompt hash, model) (database, then the committed files, then
    `calibration_root`), routing and the rubric's live review-queue statistics."""
    from judge.calibration.lookup import find_calibration

    in_folder = _in_folder(calibration_root) if calibration_root is not None else None

    def find(rubric: str, prompt_hash: str | None, model: str
             ) -> tuple[CalibrationRecord, str] | None:
        record = find_calibration(store, rubric, prompt_hash, model) if prompt_hash else None
        if record is None:
            return in_folder(rubric, prompt_hash, model) if in_folder is not None else None
        return record, f"{record.prompt_version}__{record.model} " \
                       f"({record.created_at:%Y-%m-%d %H:%M})"

    return assemble_report(
        from_store(store, rubric, prompt_version=prompt_version, model=model),
        find=find, queue=store.queue.stats(rubric=rubric),
        title=f"Judge agreement report: {rubric}", n_boot=n_boot, seed=seed)
