"""8 annotator processes claiming and labelling at once: no item claimed twice, no label lost."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from judge.formats import HumanLabel
from judge.store import ReviewRequest, open_store
from judge.store.review_queue import enqueue

N_ITEMS = 240
N_WORKERS = 8


def annotate(url: str, who: str, out: mp.Queue, start) -> None:  # runs in a child process
    store = open_store(url)
    start.wait(timeout=120)  # everyone starts claiming at the same moment
    claimed = []
    while True:
        entry = store.queue.claim(who)
        if entry is None:
            # Nothing for me now; an item someone else holds may still reopen for a second
            # annotator, so a real annotator waits until nothing is in anyone's hands.
            if store.queue.stats()["by_state"]["claimed"] == 0:
                break
            time.sleep(0.02)
            continue
        claimed.append(entry.item_id)
        store.add_label(HumanLabel(item_id=entry.item_id, label="pass", annotator=who))
    store.close()
    out.put((who, claimed))


def run_annotators(url: str, double_every: int = 0) -> None:
    store = open_store(url)
    with store.engine.begin() as conn:
        enqueue(conn, [ReviewRequest(
            f"t{i}#1:r", reason="audit", rubric="r", safety_critical=i % 7 == 0,
            confidence=(i % 13) / 13, required=2 if double_every and i % double_every == 0
            else 1) for i in range(N_ITEMS)])
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    start = ctx.Barrier(N_WORKERS)
    procs = [ctx.Process(target=annotate, args=(url, f"ann{i}", out, start))
             for i in range(N_WORKERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    claims = [(who, item) for who, items in results for item in items]
    per_person = [(who, item) for who, item in claims]
    assert len(per_person) == len(set(per_person)), "an annotator got the same item twice"
    required = {f"t{i}#1:r": 2 if double_every and i % double_every == 0 else 1
                for i in range(N_ITEMS)}
    by_item: dict[str, set[str]] = {}
    for who, item in claims:
        by_item.setdefault(item, set()).add(who)
    assert {i: len(w) for i, w in by_item.items()} == required  # claimed exactly as needed
    labels = store.labels_for()
    assert len(labels) == len(claims) == sum(required.values())  # no label lost
    assert store.queue.stats()["by_state"]["done"] == N_ITEMS
    assert sum(1 for _, items in results if items) >= 4  # the work really was shared
    store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_eight_annotators_on_postgres(pg_url: str) -> None:
    run_annotators(pg_url, double_every=5)


@pytest.mark.slow
def test_eight_annotators_on_sqlite(tmp_path) -> None:
    run_annotators(f"sqlite:///{tmp_path / 'judge.db'}", double_every=5)
