"""The agreement report as plain data: what every renderer (md, json, csv, html) draws from.

`build_report` takes the agreement dict of judge.stats / judge.labels (formats §5 keys, plus
`breakdowns` and `human_human` when present), optionally the raw confidence and agreement of
the paired items, a calibration record, and review-queue statistics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from judge.calibration.metrics import (
    brier_score,
    coverage_curve,
    expected_calibration_error,
    reliability_curve,
)
from judge.calibration.record import CalibrationRecord

METRICS = ("accuracy", "cohen_kappa", "tpr", "tnr", "precision", "recall", "f1",
           "human_fail_rate", "judge_fail_rate", "key_agreement", "evidence_agreement")


@dataclass
class AgreementReport:
    title: str
    agreement: dict[str, Any]
    calibration: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    sources: dict[str, str] = field(default_factory=dict)
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def per_key(self) -> list[dict[str, Any]]:
        """One row per ledger key (breakdowns.key), most items first."""
        groups = self.agreement.get("breakdowns", {}).get("key", {})
        rows = [
            {"key": key, "n_items": g.get("n_items"), "accuracy": g.get("accuracy"),
             "ci_accuracy": (g.get("ci") or {}).get("accuracy"), "tpr": g.get("tpr"),
             "tnr": g.get("tnr"), "key_agreement": g.get("key_agreement"),
             "evidence_agreement": g.get("evidence_agreement")}
            for key, g in groups.items()
        ]
        return sorted(rows, key=lambda r: (-(r["n_items"] or 0), r["key"]))

    def breakdown_rows(self, name: str) -> list[dict[str, Any]]:
        """One row per group; jurors (`juror`) end with the jury's own row, to compare."""
        groups = self.agreement.get("breakdowns", {}).get(name, {})
        rows = [_row(g, d) for g, d in groups.items()]
        if name == "juror" and rows:
            rows.append(_row(JURY_ROW, self.agreement))
        return rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = clean({
            "title": self.title, "generated_at": self.generated_at, "sources": self.sources,
            "agreement": self.agreement, "per_key": self.per_key(),
            "calibration": self.calibration, "review": self.review,
        })
        return out


#: the group name of the jury's own row among its jurors' rows
JURY_ROW = "(the jury)"


def _row(group: str, d: Mapping[str, Any]) -> dict[str, Any]:
    return {"group": group, "n_items": d.get("n_items"), "accuracy": d.get("accuracy"),
            "ci_accuracy": (d.get("ci") or {}).get("accuracy"),
            "cohen_kappa": d.get("cohen_kappa"), "tpr": d.get("tpr"), "tnr": d.get("tnr")}


def clean(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN and infinity to None."""
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [clean(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def calibration_section(
    confidence: ArrayLike,
    agreed: ArrayLike,
    record: CalibrationRecord | None = None,
    *,
    judge_fail: ArrayLike | None = None,
    n_bins: int = 10,
    max_points: int = 101,
) -> dict[str, Any] | None:
    """Reliability (raw and, with a record, calibrated) and coverage-vs-agreement curves."""
    conf = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(agreed, dtype=np.float64)
    if conf.size == 0:
        return None
    out: dict[str, Any] = {
        "n": int(conf.size),
        "agreement": float(y.mean()),
        "ece_raw": expected_calibration_error(conf, y, n_bins),
        "brier_raw": brier_score(conf, y),
        "reliability_raw": [vars(b) for b in reliability_curve(conf, y, n_bins)],
        "reliability_calibrated": None,
        "ece_calibrated": None,
        "brier_calibrated": None,
        "record": None,
        "threshold": None,
        "coverage_on": "raw confidence",
    }
    scores = conf
    if record is not None:
        jf = None if judge_fail is None else np.asarray(judge_fail, dtype=bool)
        cal = record.calibrate(conf, jf)
        scores = cal
        out.update({
            "reliability_calibrated": [vars(b) for b in reliability_curve(cal, y, n_bins)],
            "ece_calibrated": expected_calibration_error(cal, y, n_bins),
            "brier_calibrated": brier_score(cal, y),
            "threshold": record.threshold,
            "coverage_on": "calibrated confidence",
            "record": {
                "rubric": record.rubric, "prompt_version": record.prompt_version,
                "prompt_hash": record.prompt_hash, "model": record.model,
                "method": record.method, "n": record.n, "target": record.target,
                "threshold": record.threshold,
                "expected_review_share": record.expected_review_share,
                "held_out_ece": record.metrics.ece, "held_out_brier": record.metrics.brier,
                "created_at": record.created_at.isoformat(),
            },
        })
    out["coverage"] = [vars(p) for p in coverage_curve(scores, y, max_points)]
    if record is not None and record.threshold is not None:
        accepted = scores >= record.threshold
        out["at_threshold"] = {
            "coverage": float(accepted.mean()),
            "agreement": float(y[accepted].mean()) if accepted.any() else None,
        }
    return out


def build_report(
    agreement: Mapping[str, Any],
    *,
    confidence: ArrayLike | None = None,
    agreed: ArrayLike | None = None,
    judge_fail: ArrayLike | None = None,
    record: CalibrationRecord | None = None,
    review: Mapping[str, Any] | None = None,
    title: str = "Judge agreement report",
    sources: Mapping[str, str] | None = None,
) -> AgreementReport:
    """Assemble a report; `confidence`/`agreed` (aligned, paired scored items) add curves."""
    cal = None
    if confidence is not None and agreed is not None:
        cal = calibration_section(confidence, agreed, record, judge_fail=judge_fail)
    return AgreementReport(
        title=title,
        agreement=clean(dict(agreement)),
        calibration=clean(cal) if cal is not None else None,
        review=clean(dict(review)) if review is not None else None,
        sources=dict(sources or {}),
    )
