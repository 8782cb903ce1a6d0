"""Where a verdict goes after the judge has spoken: a pure function, with the reason stored.

In order: a deterministic veto on the trace → final fail "veto" (the verdict is kept and
cannot overrule it); unscored → review "invalid verdict"; a jury whose jurors split (its
verdict's `metadata.jury.split`, judge.grading.jury) → review "jury split"; no calibration
for (rubric, prompt hash, model) → review "uncalibrated"; calibrated confidence below the
calibration's threshold → review "low confidence"; a configurable random share of what would
be auto-accepted → review "audit" (seeded per item id, so reruns route the same way and
agreement estimates on auto-accepted verdicts stay unbiased); otherwise auto-accepted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from judge.formats import Verdict

RouteName = Literal["veto", "review", "auto_accept"]

VETO = "veto"
INVALID = "invalid verdict"
UNCALIBRATED = "uncalibrated"
LOW_CONFIDENCE = "low confidence"
AUDIT = "audit"
JURY_SPLIT = "jury split"
ACCEPTED = "calibrated confidence at or above threshold"


class Calibration(Protocol):
    """What routing needs of a calibration record (judge.calibration.CalibrationRecord)."""

    @property
    def threshold(self) -> float | None: ...

    def calibrate(self, raw_conf: Any, judge_fail: Any = None) -> Any: ...


@dataclass(frozen=True)
class RoutingPolicy:
    """`audit_share`: share of auto-accepted verdicts sent to people anyway; `seed` makes the
    audit draw reproducible; `double_share`: share of reviewed items that need a second
    annotator (human–human agreement)."""

    audit_share: float = 0.05
    seed: int = 0
    double_share: float = 0.1


@dataclass(frozen=True)
class Route:
    route: RouteName
    reason: str
    calibrated_confidence: float | None = None


def unit_draw(item_id: str, seed: int, salt: str) -> float:
    """A reproducible number in [0, 1) for one item: the same item and seed, the same draw."""
    digest = hashlib.blake2b(f"{salt}:{seed}:{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def route_verdict(verdict: Verdict, *, vetoed: bool, calibration: Calibration | None,
                  policy: RoutingPolicy = RoutingPolicy(),
                  calibrated: float | None = None) -> Route:
    """Route one verdict. `vetoed`: a deterministic check vetoed the verdict's trace.
    `calibrated`: the calibrated confidence when the caller already computed it (in bulk)."""
    if calibrated is None:
        calibrated = _calibrated(verdict, calibration)
    if vetoed:
        return Route("veto", VETO, calibrated)
    if verdict.label == "unscored" or verdict.confidence is None:
        return Route("review", INVALID)
    if is_split(verdict):
        return Route("review", JURY_SPLIT, calibrated)
    if calibration is None:
        return Route("review", UNCALIBRATED)
    threshold = calibration.threshold
    if calibrated is None or threshold is None or calibrated < threshold:
        return Route("review", LOW_CONFIDENCE, calibrated)
    if unit_draw(verdict.item_id, policy.seed, "audit") < policy.audit_share:
        return Route("review", AUDIT, calibrated)
    return Route("auto_accept", ACCEPTED, calibrated)


def is_split(verdict: Verdict) -> bool:
    """A jury verdict whose jurors split (no jury: False)."""
    record = verdict.metadata.get("jury")
    return isinstance(record, dict) and record.get("split") is True


def needs_second_annotator(item_id: str, policy: RoutingPolicy) -> bool:
    """Whether a reviewed item is one of the share labelled twice (seeded per item id)."""
    return unit_draw(item_id, policy.seed, "double") < policy.double_share


def _calibrated(verdict: Verdict, calibration: Calibration | None) -> float | None:
    if calibration is None or verdict.confidence is None:
        return None
    value = calibration.calibrate(verdict.confidence, verdict.label == "fail")
    try:
        return float(value)
    except TypeError:  # an array of one
        return float(value[0])
