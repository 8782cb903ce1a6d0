"""Routing is a pure function: veto, invalid, uncalibrated, low confidence, audit, accept."""

from __future__ import annotations

from dataclasses import dataclass

from judge.formats import Verdict
from judge.routing import RoutingPolicy, needs_second_annotator, route_verdict, unit_draw


@dataclass
class Cal:
    threshold: float | None = 0.8

    def calibrate(self, raw_conf: float, judge_fail: bool | None = None) -> float:
        return raw_conf ** 2  # a known distortion, the same for both labels


def v(item: str = "t#1:scope_fidelity", label: str = "pass", conf: float | None = 0.95,
      **kw) -> Verdict:
    if label == "fail":
        kw.setdefault("violated_key", "k")
    if label == "unscored":
        kw.setdefault("reason", "bad json")
    return Verdict(item_id=item, label=label, confidence=conf, **kw)


NO_AUDIT = RoutingPolicy(audit_share=0.0)


def test_veto_wins_over_everything_and_keeps_the_calibrated_value() -> None:
    r = route_verdict(v(label="pass", conf=0.99), vetoed=True, calibration=Cal())
    assert (r.route, r.reason) == ("veto", "veto")
    assert r.calibrated_confidence == 0.99 ** 2
    assert route_verdict(v(label="unscored", conf=None), vetoed=True, calibration=None).route \
        == "veto"


def test_unscored_goes_to_review_as_invalid() -> None:
    r = route_verdict(v(label="unscored", conf=None), vetoed=False, calibration=Cal())
    assert (r.route, r.reason) == ("review", "invalid verdict")


def test_no_calibration_means_review_uncalibrated() -> None:
    r = route_verdict(v(conf=0.99), vetoed=False, calibration=None)
    assert (r.route, r.reason) == ("review", "uncalibrated")


def test_threshold_applies_to_the_calibrated_confidence_not_the_raw() -> None:
    # raw 0.85 is above 0.8 but calibrated 0.7225 is below: review
    r = route_verdict(v(conf=0.85), vetoed=False, calibration=Cal(), policy=NO_AUDIT)
    assert (r.route, r.reason) == ("review", "low confidence")
    r = route_verdict(v(conf=0.95), vetoed=False, calibration=Cal(), policy=NO_AUDIT)
    assert r.route == "auto_accept" and abs(r.calibrated_confidence - 0.9025) < 1e-12


def test_calibration_without_threshold_reviews() -> None:
    r = route_verdict(v(conf=0.99), vetoed=False, calibration=Cal(threshold=None))
    assert r.reason == "low confidence"


def test_audit_share_is_seeded_per_item_and_close_to_the_share() -> None:
    policy = RoutingPolicy(audit_share=0.2, seed=7)
    ids = [f"trace-{i}#4:scope_fidelity" for i in range(5000)]
    routes = [route_verdict(v(item=i), vetoed=False, calibration=Cal(), policy=policy).reason
              for i in ids]
    share = routes.count("audit") / len(ids)
    assert 0.18 < share < 0.22
    again = [route_verdict(v(item=i), vetoed=False, calibration=Cal(), policy=policy).reason
             for i in ids]
    assert routes == again  # reproducible
    other = [route_verdict(v(item=i), vetoed=False, calibration=Cal(),
                           policy=RoutingPolicy(audit_share=0.2, seed=8)).reason for i in ids]
    assert other != routes  # the seed matters


def test_double_labelling_share() -> None:
    policy = RoutingPolicy(double_share=0.3)
    n = sum(needs_second_annotator(f"t{i}#1:r", policy) for i in range(4000))
    assert 0.27 * 4000 < n < 0.33 * 4000
    assert not any(needs_second_annotator(f"t{i}#1:r", RoutingPolicy(double_share=0.0))
                   for i in range(100))
    assert 0.0 <= unit_draw("x", 0, "a") < 1.0
