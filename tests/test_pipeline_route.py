"""The router: vetoes, calibration lookup once per (rubric, prompt, model), and the review
requests it hands the store (reason, safety-critical, ordering confidence, double labelling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.calibration import build_record
from judge.calibration.lookup import find_calibration
from judge.formats import Verdict
from judge.pipeline.route import Router
from judge.routing import RoutingPolicy
from judge.store import Store

R = "scope_fidelity"
NO_AUDIT = RoutingPolicy(audit_share=0.0, double_share=0.0)


def verdict(i: int, label: str = "pass", conf: float | None = 0.9, trace: str = "t",
            **kw: object) -> Verdict:
    if label == "fail":
        kw.setdefault("violated_key", "refundOnce")
    if label == "unscored":
        kw.setdefault("reason", "no JSON")
    return Verdict(item_id=f"{trace}{i}#4:{R}", label=label, confidence=conf, rubric=R,
                   prompt_version="v1", prompt_hash="sha256:p1", model="heuristic",
                   **kw)  # type: ignore[arg-type]


def record(threshold: float = 0.7):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.3, 1.0, 600)
    rec = build_record(conf, rng.uniform(size=600) < conf, rng.uniform(size=600) < 0.5,
                       rubric=R, prompt_version="v1", prompt_hash="sha256:p1",
                       model="heuristic", label_set_hash="sha256:l")
    return rec.model_copy(update={"threshold": threshold})


def test_policy_none_marks_vetoes_only() -> None:
    vs = [verdict(1), verdict(2, trace="bad")]
    assert Router(None, None).route(vs, vetoed={"bad2"}) == []
    assert (vs[1].route, vs[1].route_reason, vs[1].overruled) == ("veto", "veto", True)
    assert vs[0].route is None and not vs[0].overruled


def test_requests_carry_reason_safety_confidence_and_required(store: Store) -> None:
    store.save_items([{"item_id": f"t3#4:{R}", "trace_id": "t3", "seq": 4, "turn": 1,
                       "rubric": R, "kind": "tool_call", "safety_critical": True}])
    vs = [verdict(1, conf=0.3), verdict(2, "unscored", None), verdict(3, conf=0.8),
          verdict(4, "fail", 0.6, metadata={"key_sensitivity": "safety_critical"}),
          verdict(5, trace="vetoed")]
    queue = Router(store, RoutingPolicy(audit_share=0.0, double_share=1.0)).route(
        vs, vetoed={"vetoed5"}, safety={f"t1#4:{R}": True})
    by_id = {q.item_id: q for q in queue}
    assert set(by_id) == {v.item_id for v in vs[:4]}  # the veto is not reviewed
    assert vs[4].route == "veto" and vs[4].overruled
    assert {q.reason for q in queue} == {"uncalibrated", "invalid verdict"}
    assert by_id[f"t1#4:{R}"].safety_critical  # from the caller's items
    assert by_id[f"t3#4:{R}"].safety_critical  # from the stored item
    assert by_id[f"t4#4:{R}"].safety_critical  # from the violated key's sensitivity
    assert not by_id[f"t2#4:{R}"].safety_critical
    assert by_id[f"t2#4:{R}"].confidence is None  # unscored
    assert by_id[f"t1#4:{R}"].confidence == 0.3
    assert all(q.required == 2 for q in queue)


def test_calibration_is_found_once_and_applied_in_bulk(store: Store,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rec = record(0.7)
    store.save_calibration(rec)
    asked: list[tuple[str, str, str]] = []
    real = store.stored_calibration

    def counting(*key: str) -> dict[str, object] | None:
        asked.append(key)
        return real(*key)

    monkeypatch.setattr(store, "stored_calibration", counting)
    router = Router(store, NO_AUDIT)
    first = [verdict(1, conf=0.95), verdict(2, conf=0.45)]
    queue = router.route(first)
    router.route([verdict(3, conf=0.99)])
    assert asked == [(R, "sha256:p1", "heuristic")]  # once per router and key
    assert first[0].route == "auto_accept"
    assert first[0].calibrated_confidence == pytest.approx(float(rec.calibrate(0.95)))
    assert first[0].confidence == 0.95  # the raw value stays beside it
    assert [(q.item_id, q.reason) for q in queue] == [(first[1].item_id, "low confidence")]
    assert queue[0].confidence == first[1].calibrated_confidence


def test_lookup_falls_back_to_committed_files(store: Store, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rec = record(0.5)
    rec.save(tmp_path / "cal")
    monkeypatch.setenv("JUDGE_CALIBRATION_DIR", str(tmp_path / "cal"))
    found = find_calibration(store, R, "sha256:p1", "heuristic")
    assert found is not None and found.threshold == 0.5
    assert find_calibration(None, R, "sha256:p1", "heuristic") is not None
    store.save_calibration(record(0.8))
    found = find_calibration(store, R, "sha256:p1", "heuristic")
    assert found is not None and found.threshold == 0.8  # the database comes first
    assert find_calibration(store, R, "sha256:other", "heuristic") is None


def test_the_records_folder_check_agrees_with_records_dir(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.calibration.files import records_dir
    from judge.calibration.lookup import records_folder_exists

    monkeypatch.delenv("JUDGE_CALIBRATION_DIR", raising=False)
    assert not records_folder_exists() and not records_dir().is_dir()
    records_dir().mkdir()
    assert records_folder_exists()
    monkeypatch.setenv("JUDGE_CALIBRATION_DIR", str(tmp_path / "elsewhere"))
    assert not records_folder_exists() and records_dir() == tmp_path / "elsewhere"
    (tmp_path / "elsewhere").mkdir()
    assert records_folder_exists()
