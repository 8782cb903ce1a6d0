"""Confidence calibration: P(judge agrees with a human) from raw confidence, routing thresholds,
and the calibration records routing reads. Statistics take plain arrays."""

from judge.calibration.build import MIN_PER_CLASS as MIN_PER_CLASS
from judge.calibration.build import TooFewLabelsError as TooFewLabelsError
from judge.calibration.build import build_record as build_record
from judge.calibration.compare import compare_verdicts as compare_verdicts
from judge.calibration.fit import fit_calibrator as fit_calibrator
from judge.calibration.metrics import brier_score as brier_score
from judge.calibration.metrics import coverage_curve as coverage_curve
from judge.calibration.metrics import expected_calibration_error as expected_calibration_error
from judge.calibration.metrics import reliability_curve as reliability_curve
from judge.calibration.record import CalibrationRecord as CalibrationRecord
from judge.calibration.record import find_record as find_record
from judge.calibration.record import load_records as load_records
from judge.calibration.staleness import stale_rubrics as stale_rubrics
from judge.calibration.threshold import choose_threshold as choose_threshold

__all__ = [
    "MIN_PER_CLASS", "CalibrationRecord", "TooFewLabelsError", "brier_score", "build_record",
    "choose_threshold", "compare_verdicts", "coverage_curve", "expected_calibration_error",
    "find_record", "fit_calibrator", "load_records", "reliability_curve", "stale_rubrics",
]
