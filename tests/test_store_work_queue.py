"""The grading-work queue on both databases: chunked leases, no row leased twice, expired
leases come back, done rows stay done; and the store stores verdicts exactly as given."""

from __future__ import annotations

from datetime import timedelta

import pytest

from judge.formats import Verdict
from judge.store import ReviewRequest, Store, lease
from judge.store.db import utcnow


def queue(store: Store, run: str, n: int, vetoed: set[int] = frozenset()) -> list[str]:
    ids = [f"t{i}#2:scope_fidelity" for i in range(n)]
    store.save_run(run)
    assert store.work.enqueue(run, [(iid, "scope_fidelity", i in vetoed)
                                    for i, iid in enumerate(ids)]) == n
    return ids


def test_claims_are_disjoint_chunks_in_queue_order(store: Store) -> None:
    ids = queue(store, "r1", 10, vetoed={3})
    a = store.work.claim("w1", 4, run_id="r1")
    b = store.work.claim("w2", 4, run_id="r1")
    c = store.work.claim("w3", 4, run_id="r1")
    got = [w.item_id for w in a + b + c]
    assert sorted(got) == sorted(ids) and len(set(got)) == 10
    assert sorted(w.item_id for w in a) == sorted(ids[:4])  # lowest ids first
    assert [w.vetoed for w in a + b + c if w.item_id == ids[3]] == [True]
    assert store.work.claim("w4", 4, run_id="r1") == []
    assert store.work.outstanding("r1") == 10
    store.work.complete(a)
    assert store.work.outstanding("r1") == 6
    assert store.work.claim("w1", 4, run_id="other") == []


def test_an_expired_lease_goes_to_another_worker_and_done_rows_stay_done(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock is moved past the dead worker's lease, not waited for (a pause of the test
    process must not expire it before the second claim)."""
    ids = queue(store, "r2", 3)
    first = store.work.claim("dead", 2, run_id="r2", lease_s=60)
    rest = store.work.claim("alive", 5, run_id="r2")
    assert len(first) == 2 and len(rest) == 1
    store.work.complete(rest)
    later = utcnow() + timedelta(seconds=61 + lease.EXPIRE_EVERY_S)
    monkeypatch.setattr(lease, "utcnow", lambda: later)
    again = store.work.claim("alive", 5, run_id="r2")
    assert sorted(w.item_id for w in again) == sorted(w.item_id for w in first)
    store.work.complete(again)
    assert store.work.outstanding("r2") == 0
    assert store.work.claim("alive", 5, run_id="r2") == []
    assert {w.item_id for w in first + rest} == set(ids)


def test_enqueue_is_idempotent(store: Store) -> None:
    queue(store, "r3", 4)
    store.work.enqueue("r3", [("t0#2:scope_fidelity", "scope_fidelity", False)])
    assert store.work.outstanding("r3") == 4


def test_save_verdicts_stores_as_given_and_only_the_queue_it_is_handed(store: Store) -> None:
    run = store.save_run()
    vs = [Verdict(item_id=f"t{i}#2:r", label="pass", confidence=0.4, rubric="r",
                  prompt_hash="sha256:p", model="m") for i in range(3)]
    vs[0].route, vs[0].route_reason = "auto_accept", "given"
    store.save_verdicts(vs, run, queue=[ReviewRequest("t1#2:r", reason="audit", rubric="r",
                                                     safety_critical=True, confidence=0.4,
                                                     required=2)])
    got = {v.item_id: v for v in store.run_verdicts(run)}
    assert (got["t0#2:r"].route, got["t0#2:r"].route_reason) == ("auto_accept", "given")
    assert got["t2#2:r"].route is None and got["t2#2:r"].calibrated_confidence is None
    [entry] = store.queue.entries()
    assert (entry.item_id, entry.reason, entry.safety_critical, entry.required,
            entry.run_id) == ("t1#2:r", "audit", True, 2, run)
    store.save_verdicts(vs, run)  # stored again: kept, not duplicated
    assert store.count_verdicts(run) == 3
    assert store.has_verdict(run, "t0#2:r") and not store.has_verdict(run, "t9#2:r")


def test_queue_stats_of_one_rubric(store: Store) -> None:
    run = store.save_run()
    store.save_verdicts([], run, queue=[
        ReviewRequest("a#1:r", reason="audit", rubric="r"),
        ReviewRequest("b#1:s", reason="uncalibrated", rubric="s", safety_critical=True)])
    assert store.queue.stats()["total"] == 2
    only = store.queue.stats(rubric="s")
    assert only["total"] == 1 and only["by_reason"] == {"uncalibrated": 1}
    assert only["safety_critical_pending"] == 1
    assert store.queue.stats(rubric="none")["total"] == 0
