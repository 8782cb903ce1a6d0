"""The review web app: Starlette routes over one Store (the same queue, leases and labels as
`judge review` and `judge label`).

Reads and writes run in Starlette's thread pool (the store is synchronous SQLAlchemy); every
write is a POST with a CSRF token; every page needs a signed-in annotator (a session started
by signing in with a token: judge.serve.auth). An annotator labels only what the queue handed
to them (the item's claim is theirs when the label is stored, in the same transaction);
annotators named in `ServeConfig.allow_direct` may also label any item nobody else holds by
its id, and each such label is logged and marked `"direct": true` in its metadata. Each label
form carries a one-time id: the same form sent twice stores one label. Routes:

    GET  /login, POST /login, POST /logout
    GET  /                      the queue: counts by reason and rubric, agreement, "next"
    POST /next                  claim (or resume) an item, then go to it
    GET  /item?id=ID            the blind item page (yours while you hold its lease)
    POST /label                 save a label of the item you hold, then claim the next one
    POST /skip, POST /undo      give this item back / go back to the one you just labelled
    POST /renew                 the page's heartbeat: extend your lease (204)
    POST /reveal                show the judge's verdict of an item you labelled (recorded)
    GET  /agreement[?rubric=R]  the agreement report (judge report agreement's HTML)
    GET  /runs, /runs/report?id=RUN   stored runs and a run's report
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from judge.errors import InputError, JudgeError, StoreError
from judge.formats import HumanLabel
from judge.review.labeling import check_label
from judge.safe_text import one_line
from judge.serve.auth import (
    CSRF_COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    SESSION_COOKIE,
    Csrf,
    session_id,
)
from judge.serve.headers import REPORT_CSP, SecurityHeaders
from judge.serve.listen import LOOPBACK_NAMES
from judge.serve.templating import environment
from judge.serve.views import item_view, verdict_lines
from judge.store import Store
from judge.store.annotators import SESSION_S

log = logging.getLogger("judge.serve")

STATIC = Path(__file__).parent / "static"
LOOPBACK_HOSTS = LOOPBACK_NAMES
LABEL_KEYS = {"p": "pass", "f": "fail", "u": "unsure"}
MAX_NOTE = 4000
#: the longest claim lease `judge serve` takes (a day): an open page renews it anyway
MAX_LEASE_S = 86_400.0


@dataclass
class Desk:
    """One annotator's session state in this process: items skipped (not offered again
    until restart) and the items labelled here, newest last (what undo walks back)."""

    skipped: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)


@dataclass
class ServeConfig:
    """`lease_s`: seconds a claim lasts unless the page renews it (finite, 0 < s ≤ a day);
    `allow_direct`: annotators (admins) who may label any item by id, not only what the
    queue handed them; `session_s`: how long a sign-in lasts."""

    lease_s: float = 300.0
    n_boot: int = 1000
    allowed_hosts: list[str] = field(default_factory=lambda: list(LOOPBACK_HOSTS))
    secure_cookies: bool = False
    allow_direct: frozenset[str] = frozenset()
    session_s: float = SESSION_S

    def __post_init__(self) -> None:
        for name in ("lease_s", "session_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or \
                    not 0 < value <= (MAX_LEASE_S if name == "lease_s" else 366 * 86_400):
                raise InputError(f"{name}: want a finite number of seconds above 0 (at most "
                                 f"{MAX_LEASE_S:.0f} for the lease), got {value!r}",
                                 field=name)
        if self.n_boot < 1:
            raise InputError(f"n_boot: want 1 or more, got {self.n_boot!r}", field="n_boot")
        self.allow_direct = frozenset(self.allow_direct)


class Forbidden(Exception):
    pass


class Review:
    """The app's state: the store, the CSRF signer, the annotators' desks, templates."""

    def __init__(self, store: Store, config: ServeConfig) -> None:
        self.store = store
        self.config = config
        self.csrf = Csrf()
        self.env = environment()
        self._desks: dict[str, Desk] = {}
        self._lock = threading.Lock()

    def desk(self, who: str) -> Desk:
        with self._lock:
            return self._desks.setdefault(who, Desk())

    # -- rendering --------------------------------------------------------------------------
    def page(self, request: Request, template: str, status: int = 200,
             **context: Any) -> HTMLResponse:
        nonce, fresh = self.csrf.nonce(request)
        token = self.csrf.token(nonce, session_id(request) if context.get("who") else "")
        html = self.env.get_template(template).render(csrf=token, csrf_field=CSRF_FIELD,
                                                      lease_s=int(self.config.lease_s),
                                                      **context)
        response = HTMLResponse(html, status_code=status)
        if fresh:
            self.set_cookie(response, CSRF_COOKIE, nonce)
        return response

    def set_cookie(self, response: Response, name: str, value: str) -> None:
        response.set_cookie(name, value, httponly=True, samesite="strict", path="/",
                            secure=self.config.secure_cookies)

    def who(self, request: Request) -> str | None:
        secret = request.cookies.get(SESSION_COOKIE)
        return self.store.annotators.session(secret) if secret else None


def _go(path: str, **query: str | None) -> RedirectResponse:
    q = {k: v for k, v in query.items() if v}
    return RedirectResponse(path + (f"?{urlencode(q)}" if q else ""), status_code=303)


Handler = Callable[[Request, Review, str], Awaitable[Response]]


def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """Run `handler` for a signed-in annotator; others go to /login (GET) or get 403.
    A POST must carry a valid CSRF token (form field or X-CSRF-Token header)."""

    async def endpoint(request: Request) -> Response:
        review: Review = request.app.state.review
        try:
            who = await run_in_threadpool(review.who, request)
            if who is None:
                if request.method == "GET":
                    return _go("/login")
                return review.page(request, "error.html", 403, who=None,
                                   message="sign in first")
            if request.method == "POST":
                sent = request.headers.get(CSRF_HEADER)
                if sent is None:
                    form = await request.form(max_files=0, max_fields=20)
                    value = form.get(CSRF_FIELD)
                    sent = value if isinstance(value, str) else None
                if not review.csrf.valid(request, sent, session_id(request)):
                    return review.page(request, "error.html", 403, who=who,
                                       message="this form has expired or did not come from "
                                               "this page; reload and try again")
            return await handler(request, review, who)
        except Forbidden as exc:
            return review.page(request, "error.html", 403, who=None, message=str(exc))
        except InputError as exc:
            return review.page(request, "error.html", 400, who=None, message=exc.message)
        except StoreError as exc:
            return review.page(request, "error.html", 503, who=None, message=exc.message)
        except JudgeError as exc:
            return review.page(request, "error.html", 400, who=None, message=exc.message)

    return endpoint


async def _field(request: Request, name: str, limit: int = 1000) -> str:
    form = await request.form(max_files=0, max_fields=20)
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise InputError(f"{name}: not a short text field", field=name)
    return value


# -- sign in ---------------------------------------------------------------------------------
async def login_page(request: Request) -> Response:
    review: Review = request.app.state.review
    return review.page(request, "login.html", who=None, error=None)


async def login(request: Request) -> Response:
    review: Review = request.app.state.review
    form = await request.form(max_files=0, max_fields=5)
    sent = form.get(CSRF_FIELD)
    if not review.csrf.valid(request, sent if isinstance(sent, str) else None, ""):
        return review.page(request, "login.html", 403, who=None,
                           error="this form has expired; try again")
    token = form.get("token")
    token = token.strip() if isinstance(token, str) else ""
    started = await run_in_threadpool(review.store.annotators.start_session, token,
                                      lifetime_s=review.config.session_s)
    if started is None:
        return review.page(request, "login.html", 403, who=None, error="unknown or revoked token")
    response = _go("/")
    review.set_cookie(response, SESSION_COOKIE, started[0])  # the session, never the token
    return response


async def logout(request: Request, review: Review, who: str) -> Response:
    await run_in_threadpool(review.store.annotators.end_session,
                            request.cookies.get(SESSION_COOKIE, ""))
    response = _go("/login")
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# -- the queue ---------------------------------------------------------------------------------
def _queue_context(review: Review, who: str) -> dict[str, Any]:
    from judge.labels import human_human_agreement, reference_labels

    store = review.store
    stats = store.queue.stats()
    held = store.queue.held_by(who)
    return {"stats": stats, "by_rubric": store.queue.pending_by_rubric(),
            "remaining": store.queue.remaining_for(who), "held": held,
            # only items two or more people labelled count: read just their labels
            "human_human": human_human_agreement(reference_labels(
                store.labels_for(store.multi_annotator_items()))),
            "n_labels": store.count_labels()}


async def queue_page(request: Request, review: Review, who: str) -> Response:
    ctx = await run_in_threadpool(_queue_context, review, who)
    return review.page(request, "queue.html", who=who, message=request.query_params.get("msg"),
                       **ctx)


def _claim_next(review: Review, who: str, rubric: str | None) -> str | None:
    held = review.store.queue.held_by(who)
    if held is not None and held.item_id not in review.desk(who).skipped:
        return held.item_id
    entry = review.store.queue.claim(who, lease_s=review.config.lease_s, rubric=rubric or None,
                                     exclude=review.desk(who).skipped)
    return entry.item_id if entry is not None else None


def _next_or_queue(item_id: str | None, **query: str | None) -> RedirectResponse:
    if item_id is None:
        return _go("/", msg="nothing left for you to label", **query)
    return _go("/item", id=item_id, **query)


async def next_item(request: Request, review: Review, who: str) -> Response:
    rubric = await _field(request, "rubric", 200)
    return _next_or_queue(await run_in_threadpool(_claim_next, review, who, rubric),
                          rubric=rubric)


# -- the item ----------------------------------------------------------------------------------
def _item_context(review: Review, who: str, item_id: str) -> dict[str, Any]:
    store = review.store
    entry = store.queue.get(item_id)
    data = store.get_item(item_id)
    if entry is None and data is None:
        raise InputError(f"unknown item {item_id!r}", field="id")
    mine = entry is not None and entry.state == "claimed" and entry.claimed_by == who
    if mine:
        store.queue.renew(item_id, who, lease_s=review.config.lease_s)
    labelled = store.has_labelled(item_id, who)
    if not mine and not labelled:
        raise Forbidden("this item is not yours to label now: take the next one from the "
                        "queue")
    # No count of what is left here: counting the queue is a scan, and this page must stay
    # fast with 100,000 items queued (the queue page has the counts).
    return {"entry": entry, "item": item_view(item_id, data, entry.rubric if entry else None),
            "mine": mine, "labelled": labelled, "n_done": len(review.desk(who).done),
            "once": secrets.token_urlsafe(16)}


async def item_page(request: Request, review: Review, who: str) -> Response:
    item_id = request.query_params.get("id", "")
    ctx = await run_in_threadpool(_item_context, review, who, item_id)
    q = request.query_params
    return review.page(request, "item.html", who=who, saved=q.get("saved"),
                       saved_label=q.get("as"), undone=q.get("undo") == "1",
                       rubric=q.get("rubric", ""), **ctx)


def request_key(who: str, item_id: str, once: str, value: str, key: str | None,
                evidence: int | None, note: str | None) -> str | None:
    """The identity of one sent label form: the same form sent again has the same key (and
    stores nothing new); a form without its one-time id has none."""
    if not once:
        return None
    ident = json.dumps([who, item_id, once, value, key, evidence, note], ensure_ascii=True)
    return "serve:" + hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()


def _save_label(review: Review, who: str, item_id: str, value: str, key: str | None,
                evidence: int | None, note: str | None, rubric: str, once: str) -> str | None:
    store = review.store
    entry = store.queue.get(item_id)
    data = store.get_item(item_id)
    if entry is None and data is None:
        raise InputError(f"unknown item {item_id!r}", field="id")
    handed = entry is not None and entry.state == "claimed" and entry.claimed_by == who
    direct = not handed and who in review.config.allow_direct
    check_label(data, value, key, evidence, item_id=item_id, annotator=who)
    meta: dict[str, object] = {"via": "serve", "direct": True} if direct else {"via": "serve"}
    outcome = store.add_handed_label(
        HumanLabel(item_id=item_id, label=value, violated_key=key, evidence_event=evidence,
                   annotator=who, note=note, metadata=meta),
        request_key=request_key(who, item_id, once, value, key, evidence, note),
        direct=direct)
    if outcome == "held" or (outcome == "not handed" and entry is not None
                             and entry.state == "claimed"):
        raise Forbidden("someone else holds this item now (your claim on it ended)")
    if outcome == "not handed":
        raise Forbidden("this item is not yours to label: you label the items the queue "
                        "hands you (take the next one from the queue)")
    if outcome == "added":
        review.desk(who).done.append(item_id)
        if direct:
            log.warning("judge serve: %s labelled %s directly (--allow-direct: not handed "
                        "out by the queue)", one_line(who), one_line(item_id))
    return _claim_next(review, who, rubric)  # a form sent twice: as the first time


async def label(request: Request, review: Review, who: str) -> Response:
    item_id = await _field(request, "id")
    value = await _field(request, "label", 20)
    value = LABEL_KEYS.get(value, value)
    key = (await _field(request, "key", 500)) or None
    raw_ev = await _field(request, "evidence", 20)
    note = (await _field(request, "note", MAX_NOTE)).strip() or None
    rubric = await _field(request, "rubric", 200)
    once = await _field(request, "once", 100)
    if note is not None and "\x00" in note:
        raise InputError("note: a NUL character cannot be stored", field="note")
    if value != "fail":
        key, raw_ev = None, ""  # the key and evidence pickers only count for a fail
    try:
        evidence = int(raw_ev) if raw_ev else None
    except ValueError:
        raise InputError(f"evidence: want an event seq, got {raw_ev!r}",
                         field="evidence") from None
    nxt = await run_in_threadpool(_save_label, review, who, item_id, value, key, evidence,
                                  note, rubric, once)
    return _next_or_queue(nxt, saved=item_id, rubric=rubric, **{"as": value})


def _skip(review: Review, who: str, item_id: str, rubric: str) -> str | None:
    # only an item given back is remembered: any other id posted here (made up, someone
    # else's) would only grow the desk and every later claim's exclusion list
    released = review.store.queue.release(item_id, who)
    desk = review.desk(who)
    if released and item_id not in desk.skipped:
        desk.skipped.append(item_id)
    return _claim_next(review, who, rubric)


async def skip(request: Request, review: Review, who: str) -> Response:
    item_id = await _field(request, "id")
    rubric = await _field(request, "rubric", 200)
    return _next_or_queue(await run_in_threadpool(_skip, review, who, item_id, rubric),
                          rubric=rubric)


def _undo(review: Review, who: str, current: str) -> tuple[str | None, str]:
    """Give `current` back and take the item labelled last; (item to show, message)."""
    store = review.store
    desk = review.desk(who)
    previous: str | None = None
    if desk.done:
        previous = desk.done.pop()
    else:  # a new process: the newest label this annotator made
        last = store.last_label(who)
        previous = last.item_id if last is not None else None
    if previous is None or previous == current:
        return (current or None), "nothing to undo"
    if current:
        store.queue.release(current, who)
    back = store.queue.reclaim(previous, who, lease_s=review.config.lease_s)
    if back is None and store.queue.get(previous) is not None:
        nxt = store.queue.claim(who, lease_s=review.config.lease_s, exclude=desk.skipped)
        return (nxt.item_id if nxt else None), f"cannot go back to {previous}: it is held " \
                                               "by someone else"
    return previous, ""


async def undo(request: Request, review: Review, who: str) -> Response:
    current = await _field(request, "id")
    rubric = await _field(request, "rubric", 200)
    item_id, message = await run_in_threadpool(_undo, review, who, current)
    if item_id is None:
        return _go("/", msg=message or "nothing to undo")
    return _go("/item", id=item_id, undo="" if message else "1", msg=message, rubric=rubric)


async def renew(request: Request, review: Review, who: str) -> Response:
    item_id = request.query_params.get("id", "")
    ok = await run_in_threadpool(review.store.queue.renew, item_id, who,
                                 lease_s=review.config.lease_s)
    return Response(status_code=204 if ok else 409)


def _reveal(review: Review, who: str, item_id: str) -> dict[str, Any]:
    store = review.store
    if not store.has_labelled(item_id, who):
        raise Forbidden("the judge's verdict is shown only after you have labelled the item")
    verdict = store.verdict_for_item(item_id)
    store.annotators.record_reveal(item_id, who, store.newest_verdict_id(item_id))
    mine = store.labels_for([item_id], annotator=who, newest_only=True)
    return {"item_id": item_id, "verdict": verdict_lines(verdict),
            "mine": mine[-1] if mine else None}


async def reveal(request: Request, review: Review, who: str) -> Response:
    item_id = await _field(request, "id")
    ctx = await run_in_threadpool(_reveal, review, who, item_id)
    return review.page(request, "reveal.html", who=who, **ctx)


# -- reports -----------------------------------------------------------------------------------
def _agreement_html(review: Review, rubric: str) -> str:
    from judge.reports import report_from_store, to_html

    report = report_from_store(review.store, rubric, n_boot=review.config.n_boot)
    return to_html(report)


async def agreement(request: Request, review: Review, who: str) -> Response:
    rubric = request.query_params.get("rubric")
    if not rubric:
        rubrics = await run_in_threadpool(review.store.verdict_rubrics)
        return review.page(request, "agreement.html", who=who, rubrics=rubrics)
    html = await run_in_threadpool(_agreement_html, review, rubric)
    return HTMLResponse(html, headers={"content-security-policy": REPORT_CSP})


async def runs(request: Request, review: Review, who: str) -> Response:
    rows = await run_in_threadpool(review.store.runs)
    return review.page(request, "runs.html", who=who, runs=rows)


def _run_html(review: Review, run_id: str) -> str:
    from judge.reports.run import run_report, to_html
    from judge.suite.run import stored_summary

    summary = stored_summary(review.store, run_id)
    return to_html(run_report(review.store, run_id, summary))  # judge report run's page


async def run_report(request: Request, review: Review, who: str) -> Response:
    html = await run_in_threadpool(_run_html, review, request.query_params.get("id", ""))
    return HTMLResponse(html, headers={"content-security-policy": REPORT_CSP})


async def _not_found(request: Request, exc: Exception) -> Response:
    return HTMLResponse("<!doctype html><title>not found</title><p>not found</p>",
                        status_code=404)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """The client went away while sending its request: nobody is left to answer, and it is
    not the server's error (no traceback in the log)."""
    return Response(status_code=400)


async def _server_error(request: Request, exc: Exception) -> Response:
    return HTMLResponse("<!doctype html><title>error</title><p>internal error: the server "
                        "log says more</p>", status_code=500)


def create_app(store: Store, config: ServeConfig | None = None) -> Starlette:
    """The ASGI app over `store` (which the caller opens and closes)."""
    cfg = config or ServeConfig()
    routes = [
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", signed_in(logout), methods=["POST"]),
        Route("/", signed_in(queue_page), methods=["GET"]),
        Route("/next", signed_in(next_item), methods=["POST"]),
        Route("/item", signed_in(item_page), methods=["GET"]),
        Route("/label", signed_in(label), methods=["POST"]),
        Route("/skip", signed_in(skip), methods=["POST"]),
        Route("/undo", signed_in(undo), methods=["POST"]),
        Route("/renew", signed_in(renew), methods=["POST"]),
        Route("/reveal", signed_in(reveal), methods=["POST"]),
        Route("/agreement", signed_in(agreement), methods=["GET"]),
        Route("/runs", signed_in(runs), methods=["GET"]),
        Route("/runs/report", signed_in(run_report), methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityHeaders),
                    Middleware(TrustedHostMiddleware, allowed_hosts=cfg.allowed_hosts)],
        exception_handlers={404: _not_found, 500: _server_error,
                            ClientDisconnect: _client_gone})
    app.state.review = Review(store, cfg)
    return app
