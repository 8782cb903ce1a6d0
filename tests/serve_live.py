"""Helpers for the `judge serve` tests: a store with queued items, the app under a real
uvicorn server on a free loopback port (in a thread), and a signed-in HTTP client."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from judge.formats import Verdict
from judge.pipeline.route import route_and_save
from judge.routing import RoutingPolicy
from judge.serve import ServeConfig, create_app
from judge.store import Store

R = "scope_fidelity"
RATIONALE = "the judge thinks this is a duplicate refund"


def item(n: int, *, safety: bool = False, goal: str | None = None,
         text: str | None = None, value: Any = None, tool: str = "refund_order") -> dict:
    tid = f"refund-once/run-{n}"
    return {
        "item_id": f"{tid}#4:{R}", "trace_id": tid, "seq": 4, "turn": 2, "rubric": R,
        "kind": "tool_call", "goal": goal if goal is not None else f"Refund order-{n} once",
        "safety_critical": safety,
        "ledger": {"turn": 2,
                   "active": [{"key": "refundOnce", "value": True, "class": "constraint",
                               "sensitivity": "safety-critical", "since_turn": 1},
                              {"key": "orderId",
                               "value": value if value is not None else f"order-{n}",
                               "class": "mutable_fact", "sensitivity": "normal",
                               "since_turn": 2}],
                   "completed": [], "superseded": [{"key": "amount", "value": 10,
                                                    "class": "mutable_fact",
                                                    "sensitivity": "costly", "set_turn": 1,
                                                    "superseded_turn": 2}]},
        "events": [{"seq": 1, "turn": 1, "kind": "user",
                    "text": text if text is not None else f"Please refund order-{n}."},
                   {"seq": 3, "turn": 2, "kind": "tool_result", "tool": "get_order",
                    "result": {"paidCents": 4200}},
                   {"seq": 4, "turn": 2, "kind": "tool_call", "tool": tool,
                    "args": {"orderId": f"order-{n}"}}],
        "target": {"seq": 4, "kind": "tool_call", "tool": tool},
        "ledger_keys": ["refundOnce", "orderId", "amount"], "slice_seqs": [1, 3, 4],
    }


def fill(store: Store, items: Sequence[dict], *, double_share: float = 0.0) -> str:
    """Store items, a run and a low-confidence fail verdict for each (all routed to review)."""
    store.save_items(items)
    run = store.save_run()
    route_and_save(store, [Verdict(item_id=it["item_id"], label="fail", violated_key="refundOnce",
                                   evidence_event=4, confidence=0.3 + (i % 50) / 1000,
                                   rationale=RATIONALE, rubric=R, prompt_hash="sha256:p",
                                   model="heuristic")
                           for i, it in enumerate(items)], run,
                   policy=RoutingPolicy(double_share=double_share, audit_share=0.0))
    return run


class Live:
    """The app on a real uvicorn server in a thread."""

    def __init__(self, store: Store, config: ServeConfig | None = None) -> None:
        self.app = create_app(store, config or ServeConfig())
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


@contextmanager
def live(store: Store, config: ServeConfig | None = None) -> Iterator[str]:
    server = Live(store, config)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    m = CSRF.search(html)
    assert m, "no CSRF token on the page"
    return m.group(1)


def client(url: str, token: str | None = None) -> httpx.Client:
    """An HTTP client with its own cookie jar, signed in with `token` when given."""
    c = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
    if token is not None:
        page = c.get("/login")
        r = c.post("/login", data={"csrf_token": csrf_of(page.text), "token": token})
        assert r.status_code == 303, r.text
    return c


def post(c: httpx.Client, path: str, data: dict[str, Any], page: str | None = None
         ) -> httpx.Response:
    """POST a form with the CSRF token of `page` (default: the queue page)."""
    html = page if page is not None else c.get("/").text
    return c.post(path, data={"csrf_token": csrf_of(html), **data})


def location_item(r: httpx.Response) -> str | None:
    """The item id a redirect goes to (None: back to the queue)."""
    assert r.status_code == 303, (r.status_code, r.text[:300])
    loc = httpx.URL(r.headers["location"])
    if loc.path != "/item":
        return None
    return loc.params.get("id")
