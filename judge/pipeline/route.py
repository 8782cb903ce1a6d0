"""Routing, in one place: where each verdict goes and what people are asked to review.

For a batch of verdicts the router
- marks vetoes: a verdict on a trace a deterministic check vetoed (or one already marked)
  is kept, overruled and routed "veto";
- finds the calibration of each (rubric, prompt hash, model) once per router
  (judge.calibration.lookup: database first, then committed files) and calibrates each
  group's confidences in one vectorised call;
- routes every verdict with the pure `judge.routing.route_verdict`;
- turns each review-routed verdict into a `ReviewRequest`: its reason, whether the item is
  safety-critical (the caller's items, else the stored item, else the violated key's
  sensitivity), the confidence it is ordered by, and `required=2` for the seeded share that
  is labelled twice.

The verdicts and requests then go to `Store.save_verdicts` as data.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from judge.formats import Verdict, parse_item_id
from judge.routing import Calibration, RoutingPolicy, needs_second_annotator, route_verdict
from judge.store.records import ReviewRequest

if TYPE_CHECKING:
    from judge.store import Store

_Key = tuple[str, str, str]


class Router:
    """Routes verdicts for one run. `policy=None` marks vetoes only (no store, no queue: the
    `judge grade --cache` file mode)."""

    def __init__(self, store: Store | None, policy: RoutingPolicy | None = RoutingPolicy(),
                 ) -> None:
        self.store = store
        self.policy = policy
        self._calibrations: dict[_Key, Calibration | None] = {}

    def route(self, verdicts: Sequence[Verdict], *, vetoed: Collection[str] = (),
              safety: Mapping[str, bool] | None = None) -> list[ReviewRequest]:
        """Set `route`, `route_reason`, `overruled` and `calibrated_confidence` on the
        verdicts (in place) and return the review requests for those routed to review.
        `vetoed`: ids of vetoed traces; `safety`: item id → safety-critical, for the items
        the caller holds (others are looked up in the store)."""
        if self.policy is None:
            for v in verdicts:
                if _is_vetoed(v, vetoed):
                    v.overruled, v.route, v.route_reason = True, "veto", "veto"
            return []
        policy = self.policy
        groups: dict[_Key, list[int]] = {}
        for i, v in enumerate(verdicts):
            groups.setdefault((v.rubric or "", v.prompt_hash or "", v.model or ""), []).append(i)
        for key, idx in groups.items():
            cal = self.calibration(key)
            calibrated = _calibrate(cal, [verdicts[i] for i in idx]) if cal is not None else {}
            for i in idx:
                v = verdicts[i]
                is_veto = _is_vetoed(v, vetoed)
                r = route_verdict(v, vetoed=is_veto, calibration=cal, policy=policy,
                                  calibrated=calibrated.get(id(v)))
                v.route, v.route_reason = r.route, r.reason
                if is_veto:
                    v.overruled = True
                if r.calibrated_confidence is not None:
                    v.calibrated_confidence = r.calibrated_confidence
        review = [v for v in verdicts if v.route == "review"]
        return self._requests(review, safety or {}) if review else []

    def calibration(self, key: _Key) -> Calibration | None:
        """The calibration of (rubric, prompt hash, model), looked up once per router."""
        if key not in self._calibrations:
            found: Calibration | None = None
            if all(key):
                from judge.calibration.lookup import find_calibration

                found = find_calibration(self.store, *key)
            self._calibrations[key] = found
        return self._calibrations[key]

    def _requests(self, review: list[Verdict], safety: Mapping[str, bool]) -> list[ReviewRequest]:
        assert self.policy is not None
        unknown = [v.item_id for v in review if v.item_id not in safety]
        stored = self.store.safety_critical_items(unknown) \
            if unknown and self.store is not None else set()
        out = []
        for v in review:
            critical = safety.get(v.item_id, False) or v.item_id in stored or _safety_meta(v)
            confidence = None if v.label == "unscored" else (
                v.calibrated_confidence if v.calibrated_confidence is not None
                else v.confidence)
            out.append(ReviewRequest(
                item_id=v.item_id, reason=v.route_reason or "review", rubric=v.rubric,
                safety_critical=critical, confidence=confidence,
                required=2 if needs_second_annotator(v.item_id, self.policy) else 1))
        return out


def route_and_save(store: Store, verdicts: Sequence[Verdict], run_id: str, *,
                   policy: RoutingPolicy = RoutingPolicy(), vetoed: Collection[str] = (),
                   safety: Mapping[str, bool] | None = None) -> list[Verdict]:
    """Route verdicts (in place) and store them with their review requests; returns them."""
    out = list(verdicts)
    queue = Router(store, policy).route(out, vetoed=vetoed, safety=safety)
    store.save_verdicts(out, run_id, queue=queue)
    return out


def _is_vetoed(v: Verdict, vetoed: Collection[str]) -> bool:
    if v.overruled or v.route == "veto":
        return True
    if not vetoed:
        return False
    try:
        return parse_item_id(v.item_id)[0] in vetoed
    except ValueError:  # not an item id: no trace to have vetoed
        return False


def _safety_meta(v: Verdict) -> bool:
    return str(v.metadata.get("key_sensitivity", "")).replace("_", "-") == "safety-critical"


def _calibrate(cal: Calibration, group: list[Verdict]) -> dict[int, float]:
    """Calibrated confidences of a group's scored verdicts, in one vectorised call."""
    scored = [v for v in group if v.confidence is not None]
    if not scored:
        return {}
    import numpy as np

    values: Any = cal.calibrate(np.array([v.confidence for v in scored]),
                                np.array([v.label == "fail" for v in scored]))
    return dict(zip((id(v) for v in scored), np.atleast_1d(values).tolist(), strict=True))
