"""8 annotators at once, each a real HTTP client with its own session, label the whole queue
through `judge serve`: nobody is ever given an item someone else was given, and every item
is labelled exactly once (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from collections import Counter

from serve_live import client, csrf_of, fill, item, live, location_item, post

from judge.store import Store

N_ANNOTATORS = 8
N_ITEMS = 48


def test_eight_annotators_never_get_the_same_item(store: Store) -> None:
    fill(store, [item(n) for n in range(N_ITEMS)])
    tokens = {f"annotator-{i}": store.annotators.add_token(f"annotator-{i}")
              for i in range(N_ANNOTATORS)}
    given: dict[str, list[str]] = {name: [] for name in tokens}
    errors: list[BaseException] = []
    start = threading.Barrier(N_ANNOTATORS)

    def work(name: str, url: str) -> None:
        try:
            c = client(url, tokens[name])
            try:
                page = c.get("/").text
                start.wait()
                iid = location_item(post(c, "/next", {}, page))
                while iid is not None:
                    given[name].append(iid)
                    html = c.get("/item", params={"id": iid}).text
                    assert csrf_of(html)
                    iid = location_item(post(c, "/label", {"id": iid, "label": "pass"}, html))
            finally:
                c.close()
        except BaseException as exc:  # reported below, with the annotator's name
            errors.append(exc)

    with live(store) as url:
        threads = [threading.Thread(target=work, args=(name, url)) for name in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert not errors, errors
    handed = Counter(i for ids in given.values() for i in ids)
    assert [i for i, n in handed.items() if n > 1] == []  # never the same item twice
    assert set(handed) == {item(n)["item_id"] for n in range(N_ITEMS)}
    assert sum(1 for ids in given.values() if ids) > 1  # they really worked side by side
    labels = store.labels_for()
    assert len(labels) == N_ITEMS
    assert Counter(lb.item_id for lb in labels).most_common(1)[0][1] == 1
    assert {lb.item_id: lb.annotator for lb in labels} == {
        i: name for name, ids in given.items() for i in ids}
    assert store.queue.stats()["by_state"] == {"open": 0, "claimed": 0, "done": N_ITEMS}
