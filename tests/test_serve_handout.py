"""`judge serve` labels only what the queue handed to the annotator: an item nobody claimed,
someone else's item, an item never queued, or one whose claim ended cannot be labelled by
posting its (guessable) id; an admin named in --allow-direct can, and each such label is
logged and marked. The same label form sent twice, one after the other or at the same
moment, stores one label. SQLite and PostgreSQL; real HTTP against uvicorn."""

from __future__ import annotations

import logging
import threading
import time

import httpx
import pytest
from serve_live import client, csrf_of, fill, item, live, location_item, post

from judge.serve import ServeConfig
from judge.store import Store
from judge.store.lease import EXPIRE_EVERY_S

FORM_ID = 'name="once" value="'


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store, [item(n) for n in range(1, 6)])
    store.save_items([item(9)])  # stored, never queued
    return store


def _ids(*ns: int) -> list[str]:
    return [item(n)["item_id"] for n in ns]


def _label_form(page: str, item_id: str, label: str = "pass") -> dict[str, str]:
    """The label form of an item page, filled in as a browser sends it."""
    once = page.split(FORM_ID, 1)[1].split('"', 1)[0]
    return {"csrf_token": csrf_of(page), "id": item_id, "label": label, "rubric": "",
            "once": once}


def test_an_unclaimed_item_is_not_labellable_by_id(filled: Store) -> None:
    with live(filled) as url:
        asha = client(url, filled.annotators.add_token("asha"))
        bo = client(url, filled.annotators.add_token("bo"))
        held_by_bo = location_item(post(bo, "/next", {}))
        queue = asha.get("/").text
        # nothing claimed yet: neither an open item, nor bo's, nor one never queued
        for iid in [*_ids(2, 3), held_by_bo, *_ids(9)]:
            r = asha.post("/label", data={"csrf_token": csrf_of(queue), "id": iid,
                                          "label": "pass"})
            assert r.status_code == 403, (iid, r.status_code)
            assert "not yours to label" in r.text or "someone else holds" in r.text
        # holding one item does not open the others
        mine = location_item(post(asha, "/next", {}))
        page = asha.get("/item", params={"id": mine}).text
        for iid in _ids(4, 5):
            r = asha.post("/label", data={**_label_form(page, mine), "id": iid})
            assert r.status_code == 403
        assert filled.labels_for() == []
        assert filled.queue.get(item(4)["item_id"]).state == "open"
        # the item handed to her is hers to label
        r = asha.post("/label", data=_label_form(page, mine))
        assert r.status_code == 303
    [lb] = filled.labels_for()
    assert (lb.item_id, lb.annotator, lb.metadata) == (mine, "asha", {"via": "serve"})


def test_a_label_after_the_claim_ended_is_refused(store: Store) -> None:
    fill(store, [item(1)])
    with live(store, ServeConfig(lease_s=0.5)) as url:
        asha = client(url, store.annotators.add_token("asha"))
        bo = client(url, store.annotators.add_token("bo"))
        iid = location_item(post(asha, "/next", {}))
        page = asha.get("/item", params={"id": iid}).text
        time.sleep(EXPIRE_EVERY_S + 0.3)  # no page renews it: the lease runs out
        assert location_item(post(bo, "/next", {})) == iid  # and the queue hands it to bo
        late = asha.post("/label", data=_label_form(page, iid))
        assert late.status_code == 403 and "someone else holds" in late.text
        store.queue.release(iid)  # back in the queue, nobody's
        again = asha.post("/label", data=_label_form(page, iid))
        assert again.status_code == 403 and "not yours to label" in again.text
    assert store.labels_for() == []


def test_the_same_label_form_sent_twice_stores_one_label(filled: Store) -> None:
    with live(filled) as url:
        asha = client(url, filled.annotators.add_token("asha"))
        iid = location_item(post(asha, "/next", {}))
        page = asha.get("/item", params={"id": iid}).text
        form = _label_form(page, iid, "fail") | {"key": "refundOnce", "evidence": "4"}
        first = asha.post("/label", data=form)
        replays = [asha.post("/label", data=form) for _ in range(3)]
        assert first.status_code == 303
        # each replay is answered as the first was: on to the item asha holds now
        assert {r.headers["location"] for r in replays} == {first.headers["location"]}
        # the same page sent with another label is a new label of an item she no longer holds
        changed = asha.post("/label", data=form | {"label": "pass"})
        assert changed.status_code == 403
    [lb] = filled.labels_for()
    assert (lb.item_id, lb.label, lb.violated_key, lb.evidence_event) == \
        (iid, "fail", "refundOnce", 4)
    assert filled.queue.get(iid).state == "done"


def test_a_form_sent_twice_at_the_same_moment_stores_one_label(filled: Store) -> None:
    with live(filled) as url:
        asha = client(url, filled.annotators.add_token("asha"))
        iid = location_item(post(asha, "/next", {}))
        form = _label_form(asha.get("/item", params={"id": iid}).text, iid)
        cookies = dict(asha.cookies)
        start = threading.Barrier(4)
        codes: list[int] = []

        def send() -> None:
            with httpx.Client(base_url=url, cookies=cookies, timeout=30) as c:
                start.wait()
                codes.append(c.post("/label", data=form).status_code)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert codes == [303] * 4
    assert [lb.item_id for lb in filled.labels_for()] == [iid]


def test_an_admin_allowed_direct_labels_by_id_and_each_is_logged(
        filled: Store, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="judge.serve")
    with live(filled, ServeConfig(allow_direct=frozenset({"root"}))) as url:
        root = client(url, filled.annotators.add_token("root"))
        asha = client(url, filled.annotators.add_token("asha"))
        held = location_item(post(asha, "/next", {}))
        queue = root.get("/").text
        for iid in _ids(3, 9):  # an open item, and one never queued
            r = root.post("/label", data={"csrf_token": csrf_of(queue), "id": iid,
                                          "label": "unsure"})
            assert r.status_code == 303, r.text
        taken = root.post("/label", data={"csrf_token": csrf_of(queue), "id": held,
                                           "label": "pass"})
        assert taken.status_code == 403 and "someone else holds" in taken.text
        other = asha.post("/label", data={"csrf_token": csrf_of(asha.get("/").text),
                                          "id": item(4)["item_id"], "label": "pass"})
        assert other.status_code == 403  # only the admin named
    labels = filled.labels_for(annotator="root")
    assert sorted(lb.item_id for lb in labels) == sorted(_ids(3, 9))
    assert all(lb.metadata == {"via": "serve", "direct": True} for lb in labels)
    assert filled.labels_for(annotator="asha") == []
    logged = [r.getMessage() for r in caplog.records if r.name == "judge.serve"]
    for iid in _ids(3, 9):
        assert any(f"root labelled {iid} directly" in m for m in logged), logged
    assert filled.queue.get(item(3)["item_id"]).state == "done"


def test_undo_then_relabel_is_still_allowed(filled: Store) -> None:
    """Going back to the item just labelled takes its claim again: the new label is stored
    (it supersedes the old), so the hand-out rule does not get in the way of undo."""
    with live(filled) as url:
        asha = client(url, filled.annotators.add_token("asha"))
        first = location_item(post(asha, "/next", {}))
        page = asha.get("/item", params={"id": first}).text
        second = location_item(asha.post("/label", data=_label_form(page, first)))
        back = post(asha, "/undo", {"id": second}, asha.get("/item", params={"id": second}).text)
        assert location_item(back) == first
        again = asha.get(back.headers["location"]).text
        assert asha.post("/label", data=_label_form(again, first, "unsure")).status_code == 303
    assert [lb.label for lb in filled.labels_for(annotator="asha")] == ["pass", "unsure"]


def test_skipping_ids_one_does_not_hold_remembers_nothing(filled: Store) -> None:
    from serve_live import Live

    server = Live(filled)
    url = server.start()
    try:
        asha = client(url, filled.annotators.add_token("asha"))
        queue = asha.get("/").text
        for n in range(30):  # made-up ids and bo's item: nothing of hers to give back
            asha.post("/skip", data={"csrf_token": csrf_of(queue), "id": f"made/up#{n}:r"})
        mine = location_item(post(asha, "/next", {}))
        page = asha.get("/item", params={"id": mine}).text
        asha.post("/skip", data={"csrf_token": csrf_of(page), "id": mine})
        assert server.app.state.review.desk("asha").skipped == [mine]
    finally:
        server.stop()
