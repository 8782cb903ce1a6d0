"""Confidence calibration: P(judge agrees with a human) from raw confidence, routing thresholds,
and the calibration records routing reads. Statistics take plain arrays."""

# Fitting needs scikit-learn (slow to import); reading a record for routing does not, so the
# names below load on first use (PEP 562) and `judge.calibration.record` stays light.
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.calibration.build import MIN_PER_CLASS as MIN_PER_CLASS
    from judge.calibration.build import TooFewLabelsError as TooFewLabelsError
    from judge.calibration.build import build_record as build_record
    from judge.calibration.compare import compare_verdicts as compare_verdicts
    from judge.calibration.fit import fit_calibrator as fit_calibrator
    from judge.calibration.from_files import calibrate_files as calibrate_files
    from judge.calibration.metrics import brier_score as brier_score
    from judge.calibration.metrics import coverage_curve as coverage_curve
    from judge.calibration.metrics import expected_calibration_error as expected_calibration_error
    from judge.calibration.metrics import reliability_curve as reliability_curve
    from judge.calibration.record import CalibrationRecord as CalibrationRecord
    from judge.calibration.record import find_record as find_record
    from judge.calibration.record import load_records as load_records
    from judge.calibration.regrade import calibrate_rubric as calibrate_rubric
    from judge.calibration.staleness import stale_rubrics as stale_rubrics
    from judge.calibration.status import check_calibration as check_calibration
    from judge.calibration.threshold import choose_threshold as choose_threshold
    from judge.calibration.versions import compare_versions as compare_versions

_WHERE: dict[str, str] = {
    "MIN_PER_CLASS": "judge.calibration.build",
    "TooFewLabelsError": "judge.calibration.build",
    "build_record": "judge.calibration.build",
    "compare_verdicts": "judge.calibration.compare",
    "calibrate_files": "judge.calibration.from_files",
    "fit_calibrator": "judge.calibration.fit",
    "brier_score": "judge.calibration.metrics",
    "coverage_curve": "judge.calibration.metrics",
    "expected_calibration_error": "judge.calibration.metrics",
    "reliability_curve": "judge.calibration.metrics",
    "CalibrationRecord": "judge.calibration.record",
    "find_record": "judge.calibration.record",
    "load_records": "judge.calibration.record",
    "calibrate_rubric": "judge.calibration.regrade",
    "stale_rubrics": "judge.calibration.staleness",
    "check_calibration": "judge.calibration.status",
    "choose_threshold": "judge.calibration.threshold",
    "compare_versions": "judge.calibration.versions",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'judge.calibration' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "MIN_PER_CLASS", "CalibrationRecord", "TooFewLabelsError", "brier_score", "build_record",
    "calibrate_files", "calibrate_rubric", "check_calibration", "choose_threshold",
    "compare_verdicts", "compare_versions", "coverage_curve", "expected_calibration_error",
    "find_record", "fit_calibrator", "load_records", "reliability_curve", "stale_rubrics",
]
