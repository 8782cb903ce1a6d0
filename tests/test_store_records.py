"""Verdicts, labels, provider calls and calibrations round-trip through both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from judge.calibration import CalibrationRecord, build_record
from judge.calibration.lookup import find_calibration
from judge.formats import HumanLabel, Verdict
from judge.pipeline.route import route_and_save
from judge.providers.base import CallRecord
from judge.routing import RoutingPolicy
from judge.store import Store

R = "scope_fidelity"


def verdict(i: int, label: str = "pass", conf: float | None = 0.9, **kw) -> Verdict:
    if label == "fail":
        kw.setdefault("violated_key", "refundOnce")
        kw.setdefault("evidence_event", 4)
    if label == "unscored":
        kw.setdefault("reason", "no JSON")
    return Verdict(item_id=f"trace-{i}#4:{R}", label=label, confidence=conf, rubric=R,
                   prompt_version="v1", prompt_hash="sha256:p1", model="heuristic", **kw)


def item(i: int, safety: bool = False) -> dict:
    return {"item_id": f"trace-{i}#4:{R}", "trace_id": f"trace-{i}", "seq": 4, "turn": 1,
            "rubric": R, "kind": "tool_call", "goal": "refund order-17", "safety_critical": safety,
            "ledger": {"active": [{"key": "refundOnce", "class": "constraint"}]},
            "events": [{"seq": 4, "kind": "tool_call", "tool": "refund_order"}],
            "target": {"seq": 4}}


def calibration(threshold: float = 0.7):
    """A real calibration record fitted on synthetic data where P(agree) = conf."""
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.3, 1.0, 600)
    agreed = rng.uniform(size=600) < conf
    record = build_record(conf, agreed, rng.uniform(size=600) < 0.5, rubric=R,
                          prompt_version="v1", prompt_hash="sha256:p1", model="heuristic",
                          label_set_hash="sha256:l")
    return record.model_copy(update={"threshold": threshold})


def test_verdicts_round_trip_and_route(store: Store) -> None:
    run = store.save_run()
    vs = [verdict(1, "fail", 0.8, rationale="second refund"), verdict(2, "unscored", None),
          verdict(3, "pass", 0.95, metadata={"key_class": "constraint"})]
    routed = route_and_save(store, vs, run, policy=RoutingPolicy(audit_share=0.0))
    assert [v.route_reason for v in routed] == ["uncalibrated", "invalid verdict",
                                                 "uncalibrated"]
    got = {v.item_id: v for v in store.verdicts_for(R)}
    assert got[vs[0].item_id].violated_key == "refundOnce"
    assert got[vs[0].item_id].evidence_event == 4
    assert got[vs[0].item_id].rationale == "second refund"
    assert got[vs[1].item_id].label == "unscored" and got[vs[1].item_id].reason == "no JSON"
    assert got[vs[2].item_id].metadata["key_class"] == "constraint"
    assert got[vs[2].item_id].route == "review"
    assert store.verdicts_for(R, model="other") == []
    assert len(store.verdicts_for(R, prompt_version="v1", model="heuristic")) == 3


def test_saving_the_same_run_twice_duplicates_nothing(store: Store) -> None:
    run = store.save_run("r1")
    vs = [verdict(i) for i in range(20)]
    route_and_save(store, vs[:12], run)
    route_and_save(store, vs, run)  # a resumed run saves some again
    assert store.count_verdicts(run) == 20
    assert store.stored_item_ids(run) == {v.item_id for v in vs}
    assert store.queue.stats()["total"] == 20  # uncalibrated: every one reviewed, once


def test_calibration_routes_and_veto_overrules(store: Store) -> None:
    record = calibration(0.7)
    store.save_calibration(record)
    found = find_calibration(store, R, "sha256:p1", "heuristic")
    assert isinstance(found, CalibrationRecord) and found.threshold == 0.7
    assert found.calibrate(0.9) == record.calibrate(0.9)
    assert record.calibrate(0.95) >= 0.7 > record.calibrate(0.45)
    assert find_calibration(store, R, "sha256:other", "heuristic") is None
    run = store.save_run()
    vs = [verdict(1, conf=0.95), verdict(2, conf=0.45), verdict(3, "fail", 0.99)]
    routed = route_and_save(store, vs, run, vetoed={"trace-3"},
                            policy=RoutingPolicy(audit_share=0.0))
    assert [(v.route, v.route_reason) for v in routed] == [
        ("auto_accept", routed[0].route_reason), ("review", "low confidence"), ("veto", "veto")]
    assert routed[2].overruled and routed[2].label == "fail"  # kept
    assert routed[0].calibrated_confidence == record.calibrate(0.95)
    assert routed[0].confidence == 0.95  # the raw value stays beside it
    stored = {v.item_id: v for v in store.verdicts_for(R)}
    assert stored["trace-3#4:scope_fidelity"].route == "veto"
    assert [e.item_id for e in store.queue.entries()] == ["trace-2#4:scope_fidelity"]


def test_labels_are_append_only_and_import_is_idempotent(store: Store) -> None:
    t0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    first = HumanLabel(item_id="a#1:r", label="pass", annotator="asha", created_at=t0)
    second = HumanLabel(item_id="a#1:r", label="fail", violated_key="k", evidence_event=1,
                        annotator="asha", created_at=t0 + timedelta(minutes=5), note="oops")
    other = HumanLabel(item_id="a#1:r", label="unsure", annotator="bo", created_at=t0)
    assert store.add_labels([first, second, other]) == 3
    assert store.add_labels([first, second, other]) == 0  # importing twice adds nothing
    history = store.labels_for(["a#1:r"])
    assert len(history) == 3
    newest = {(lb.annotator): lb for lb in store.labels_for(newest_only=True)}
    assert newest["asha"].label == "fail" and newest["asha"].note == "oops"
    assert newest["asha"].created_at == t0 + timedelta(minutes=5)
    assert [lb.label for lb in store.labels_for(annotator="asha")] == ["pass", "fail"]
    assert store.labels_for(rubric="other") == []


def test_call_cache_round_trip(store: Store) -> None:
    rec = CallRecord(cache_key="k1", item_id="a#1:r", prompt_hash="sha256:p", model="m",
                     params={"temperature": 0.0}, request={"system": "s", "messages": []},
                     response_text='{"label": "pass"}', usage={"input_tokens": 12},
                     latency_s=0.25, raw={"id": "x"})
    assert store.calls.get("k1") is None
    store.calls.put(rec)
    store.calls.put(rec)  # a second put of the same key is harmless
    assert store.calls.get("k1") == rec
    assert store.calls.count() == 1


def test_items_traces_prompts(store: Store) -> None:
    store.save_items([item(1, safety=True), item(2)])
    store.save_items([item(1)])  # kept, not duplicated
    got = store.get_item(f"trace-1#4:{R}")
    assert got is not None and got["goal"] == "refund order-17" and got["safety_critical"]
    assert store.get_item("nope#1:r") is None
    run = store.save_run()
    route_and_save(store, [verdict(2, conf=0.1), verdict(1, conf=0.9)], run)
    # safety-critical (from the stored item) first, even with the higher confidence
    assert next(e.item_id for e in store.queue.entries()) == f"trace-1#4:{R}"
    assert store.save_trace({"trace_id": "t", "events": [{"seq": 1}]}) == "t"
    digest = store.save_scenario("refund-once", "id: refund-once\n")
    assert digest.startswith("sha256:")


def test_call_cache_errors_are_store_errors(store: Store) -> None:
    import pytest

    from judge.errors import StoreError

    with store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE provider_calls")
    with pytest.raises(StoreError, match="provider_calls"):
        store.calls.get("k1")
    with pytest.raises(StoreError, match="provider_calls"):
        store.calls.count()
