"""`judge serve`: sign-in, CSRF, security headers, the blind item page, labels, undo, skip,
reveal (recorded), leases, double labelling, reports; hostile trace text stays inert. Every
test talks HTTP to the app under a real uvicorn server."""

from __future__ import annotations

import html as htmllib
import time

import httpx
import pytest
from hostile_text import CORPUS, HOSTILE, raw_controls
from serve_live import RATIONALE, client, csrf_of, fill, item, live, location_item, post

from judge.formats import HumanLabel, Verdict
from judge.serve import ServeConfig
from judge.store import Store
from judge.store.lease import EXPIRE_EVERY_S


@pytest.fixture
def filled(store: Store) -> Store:
    fill(store, [item(n, safety=(n == 1)) for n in range(1, 6)])
    return store


def labels_of(store: Store, who: str | None = None) -> list:
    return store.labels_for(annotator=who)


def test_nothing_without_a_token(filled: Store) -> None:
    with live(filled) as url, httpx.Client(base_url=url) as c:
        r = c.get("/", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.get("/item", params={"id": item(1)["item_id"]}).status_code == 303
        assert c.get("/agreement").status_code == 303
        login = c.get("/login")
        wrong = c.post("/login", data={"csrf_token": csrf_of(login.text), "token": "jdg_nope"})
        assert wrong.status_code == 403 and "unknown or revoked token" in wrong.text
        anon = c.post("/label", data={"id": item(1)["item_id"], "label": "pass",
                                      "csrf_token": csrf_of(login.text)})
        assert anon.status_code == 403
    assert labels_of(filled) == []


def test_revoked_token_signs_nobody_in(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        assert c.get("/").status_code == 200
        assert filled.annotators.revoke("asha") == 1
        assert c.get("/").status_code == 303  # back to sign-in
    assert filled.annotators.who(token) is None
    [info] = filled.annotators.tokens(include_revoked=True)
    assert info.revoked_at is not None and token not in repr(info)


def test_every_form_needs_its_csrf_token(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        # no token, a made-up token, another session's token, a foreign Origin
        assert c.post("/next", data={}).status_code == 403
        assert c.post("/next", data={"csrf_token": "x.y"}).status_code == 403
        other = client(url, filled.annotators.add_token("bo"))
        theirs = csrf_of(other.get("/").text)
        assert c.post("/next", data={"csrf_token": theirs}).status_code == 403
        mine = csrf_of(c.get("/").text)
        assert c.post("/next", data={"csrf_token": mine},
                      headers={"origin": "http://evil.example"}).status_code == 403
        assert filled.queue.held_by("asha") is None  # none of them claimed anything
        # a browser sends "Origin: null" on a form POST from a no-referrer page: the token
        # decides (a valid one passes; a missing one is refused above)
        assert c.post("/next", data={"csrf_token": "x.y"},
                      headers={"origin": "null"}).status_code == 403
        ok = c.post("/next", data={"csrf_token": mine},
                    headers={"origin": url})
        iid = location_item(ok)
        assert iid is not None and filled.queue.held_by("asha").item_id == iid
        # label without CSRF: refused, nothing stored
        assert c.post("/label", data={"id": iid, "label": "pass"}).status_code == 403
        assert c.post("/renew", params={"id": iid}).status_code == 403
        assert c.post("/renew", params={"id": iid},
                      headers={"x-csrf-token": mine}).status_code == 204
        assert c.post("/logout", data={}).status_code == 403
    assert labels_of(filled) == []


def test_security_headers(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        for r in (c.get("/"), c.get("/login"), c.get("/static/keys.js")):
            h = r.headers
            csp = h["content-security-policy"]
            assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
            assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
            assert h["x-frame-options"] == "DENY"
            assert h["referrer-policy"] == "no-referrer"
            assert h["x-content-type-options"] == "nosniff"
            assert h["server-timing"].startswith("app;dur=")
        assert "no-store" in c.get("/").headers["cache-control"]
        cookie = c.get("/login").headers.get("set-cookie", "")
        # the sign-in cookie is HttpOnly and SameSite=Strict (set on the login redirect)
        login = httpx.Client(base_url=url)
        page = login.get("/login")
        r = login.post("/login", data={"csrf_token": csrf_of(page.text), "token": token})
        set_cookie = r.headers["set-cookie"].lower()
        assert "judge_session=" in set_cookie and token.lower() not in set_cookie
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie
        assert cookie == "" or "httponly" in cookie.lower()
        # a Host that is not loopback is refused (DNS rebinding)
        assert c.get("/", headers={"host": "evil.example"}).status_code == 400


def test_label_flow_blind_then_reveal_recorded(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        first = location_item(post(c, "/next", {}))
        assert first == item(1)["item_id"]  # safety-critical first
        page = c.get("/item", params={"id": first}).text
        assert "Refund order-1 once" in page and "SAFETY-CRITICAL" in page
        assert RATIONALE not in page and "heuristic" not in page  # blind
        assert "<del>10</del>" in page  # the superseded value, struck through
        assert "changed now" in page  # orderId was set at this turn
        assert 'class="event judged"' in page  # the judged event highlighted
        for key in ("refundOnce", "orderId", "amount"):
            assert f'<option value="{key}">' in page
        # reveal before labelling: refused, not recorded
        assert post(c, "/reveal", {"id": first}, page).status_code == 403
        assert filled.annotators.reveals() == []
        # a fail needs a key of the ledger and an event of the slice
        bad = post(c, "/label", {"id": first, "label": "fail", "key": "nope",
                                  "evidence": "4"}, page)
        assert bad.status_code == 400 and "is not a key" in bad.text
        bad_ev = post(c, "/label", {"id": first, "label": "fail", "key": "refundOnce",
                                     "evidence": "2"}, page)
        assert bad_ev.status_code == 400 and "not in this item&#39;s trace slice" in bad_ev.text
        r = post(c, "/label", {"id": first, "label": "fail", "key": "refundOnce",
                                "evidence": "3", "note": "refunded twice"}, page)
        second = location_item(r)
        assert second == item(2)["item_id"]
        [lb] = labels_of(filled, "asha")
        assert (lb.item_id, lb.label, lb.violated_key, lb.evidence_event, lb.note) == \
            (first, "fail", "refundOnce", 3, "refunded twice")
        nxt = c.get(r.headers["location"]).text
        assert "reveal the judge" in nxt and RATIONALE not in nxt
        shown = post(c, "/reveal", {"id": first}, nxt)
        assert shown.status_code == 200 and RATIONALE in shown.text
        [rev] = filled.annotators.reveals()
        assert (rev.item_id, rev.annotator) == (first, "asha") and rev.verdict_id is not None
        # someone else's held item is not shown to asha
        bo = client(url, filled.annotators.add_token("bo"))
        third = location_item(post(bo, "/next", {}))
        assert third == item(3)["item_id"]
        assert c.get("/item", params={"id": third}).status_code == 403


def test_undo_goes_back_and_supersedes(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        first = location_item(post(c, "/next", {}))
        page = c.get("/item", params={"id": first}).text
        second = location_item(post(c, "/label", {"id": first, "label": "pass"}, page))
        page2 = c.get("/item", params={"id": second}).text
        back = post(c, "/undo", {"id": second}, page2)
        assert location_item(back) == first and "undo=1" in back.headers["location"]
        assert filled.queue.get(second).state == "open"  # given back
        assert filled.queue.held_by("asha").item_id == first
        again = c.get(back.headers["location"]).text
        assert "supersede" in again
        post(c, "/label", {"id": first, "label": "unsure"}, again)
    history = labels_of(filled, "asha")
    assert [lb.label for lb in history] == ["pass", "unsure"]
    [newest] = filled.labels_for([first], annotator="asha", newest_only=True)
    assert newest.label == "unsure"


def test_skip_gives_back_and_moves_on(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        first = location_item(post(c, "/next", {}))
        page = c.get("/item", params={"id": first}).text
        second = location_item(post(c, "/skip", {"id": first}, page))
        assert second != first and filled.queue.get(first).state == "open"
        # "next" resumes the item held, never the skipped one
        assert location_item(post(c, "/next", {})) == second
    assert labels_of(filled) == []


def test_a_closed_tab_gives_its_claim_back_when_the_lease_expires(filled: Store) -> None:
    with live(filled, ServeConfig(lease_s=0.5)) as url:
        a = client(url, filled.annotators.add_token("asha"))
        b = client(url, filled.annotators.add_token("bo"))
        held = location_item(post(a, "/next", {}))
        assert location_item(post(b, "/next", {})) != held
        a.close()  # asha closes the tab: nothing renews the lease
        time.sleep(EXPIRE_EVERY_S + 0.3)  # past the lease and the queue's expiry sweep
        c = client(url, filled.annotators.add_token("cy"))
        assert location_item(post(c, "/next", {})) == held


def test_double_labelling_and_human_agreement(store: Store) -> None:
    fill(store, [item(n) for n in range(1, 4)], double_share=1.0)
    with live(store) as url:
        a = client(url, store.annotators.add_token("asha"))
        b = client(url, store.annotators.add_token("bo"))
        for who in (a, b):
            iid = location_item(post(who, "/next", {}))
            while iid is not None:
                page = who.get("/item", params={"id": iid}).text
                iid = location_item(post(who, "/label", {"id": iid, "label": "pass"}, page))
        queue = a.get("/").text
    assert store.queue.stats()["double_labelled"] == {"items": 3, "done": 3}
    assert "Human–human agreement on 3 items (2 annotators)" in queue
    assert "3 of 3 double-labelled items done" in queue
    from judge.cli.review import human_agreement  # what `judge review stats` shows

    cli = human_agreement(store)
    assert cli is not None and cli["n_items"] == 3
    assert f"{100 * cli['percent_agreement']:.1f}% agree" in queue


def test_reports_are_served(filled: Store) -> None:
    run = filled.runs()[0]["run_id"]
    filled.finish_run(run, summary={"run_id": run, "suite": "s"})
    with live(filled, ServeConfig(n_boot=50)) as url:
        c = client(url, filled.annotators.add_token("asha"))
        none_yet = c.get("/agreement", params={"rubric": "scope_fidelity"})
        assert none_yet.status_code == 400 and "no stored labels" in none_yet.text
        filled.add_labels([HumanLabel(item_id=item(n)["item_id"], annotator="asha",
                                      label="fail" if n % 2 else "pass",
                                      violated_key="refundOnce" if n % 2 else None,
                                      evidence_event=4 if n % 2 else None)
                           for n in range(1, 6)])
        listing = c.get("/agreement").text
        assert "scope_fidelity" in listing
        report = c.get("/agreement", params={"rubric": "scope_fidelity"})
        assert report.status_code == 200 and "Judge agreement report" in report.text
        assert "data:image/png;base64," in report.text  # the plots of judge report agreement
        assert "script-src" not in report.headers["content-security-policy"]
        assert run in c.get("/runs").text
        missing = c.get("/runs/report", params={"id": "nope"})
        assert missing.status_code == 400 and "no run" in missing.text


def test_hostile_trace_text_is_inert(store: Store) -> None:
    """Every string of the hostile corpus, as goal, ledger value, event text and tool name:
    never live HTML, never a raw control or format character on the page."""
    items = []
    for n, s in enumerate(HOSTILE, 1):
        items.append(item(n, goal=s, text=s, value=s, tool=s))
    fill(store, items)
    token = store.annotators.add_token("asha")
    with live(store) as url:
        c = client(url, token)
        seen = 0
        iid = location_item(post(c, "/next", {}))
        while iid is not None:
            page = c.get("/item", params={"id": iid})
            body = page.text
            assert raw_controls(page.content) == [], iid
            assert "<script>alert" not in body and "<img src=x" not in body
            assert "onerror=alert" not in body.replace("onerror=alert(1)&gt;", "")
            assert "<a href='javascript" not in body and "<!-- comment -->" not in body
            seen += 1
            iid = location_item(post(c, "/skip", {"id": iid}, body))
    assert seen == len(HOSTILE)
    for s in CORPUS["html"]:
        assert htmllib.escape(s, quote=True) != s  # each has something to escape


def test_run_report_page_of_a_real_run(tmp_path) -> None:
    """A suite run stored by `judge run`, then its report page: the run report renderer's
    HTML, served with the script-free report CSP."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from judge.cli.main import app
    from judge.store import open_store

    suite = Path(__file__).resolve().parent.parent / "examples/nightly.yaml"
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    ran = CliRunner().invoke(app, ["run", str(suite), "--suite", "pull_request", "--db", url,
                                   "--format", "json"])
    assert ran.exit_code in (0, 1), ran.output
    run_id = json.loads(ran.stdout)["run_id"]
    with open_store(url) as store, live(store) as base:
        c = client(base, store.annotators.add_token("asha"))
        assert run_id in c.get("/runs").text
        r = c.get("/runs/report", params={"id": run_id})
        assert r.status_code == 200 and f"judge run {run_id}" in r.text
        assert "script-src" not in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"


def test_hostile_verdict_text_is_inert_when_revealed(store: Store) -> None:
    """The judge's rationale is text from a model that read the trace: as hostile as it."""
    from judge.pipeline.route import route_and_save
    from judge.routing import RoutingPolicy

    # NUL left out: PostgreSQL text cannot hold it (the store refuses such a verdict; see
    # test_a_note_with_nul_is_refused for the label form)
    hostile = " ".join(s for s in HOSTILE if "\x00" not in s)
    store.save_items([item(1)])
    route_and_save(store, [Verdict(item_id=item(1)["item_id"], label="fail",
                                   violated_key="refundOnce", evidence_event=4,
                                   confidence=0.31, rationale=hostile, rubric="scope_fidelity",
                                   prompt_hash="sha256:p", model="heuristic")],
                   store.save_run(), policy=RoutingPolicy(double_share=0.0, audit_share=0.0))
    with live(store) as url:
        c = client(url, store.annotators.add_token("asha"))
        iid = location_item(post(c, "/next", {}))
        page = c.get("/item", params={"id": iid}).text
        r = post(c, "/label", {"id": iid, "label": "pass", "note": hostile}, page)
        assert location_item(r) is None
        shown = post(c, "/reveal", {"id": iid}, c.get("/").text)
    assert shown.status_code == 200 and raw_controls(shown.content) == []
    assert "<script>alert" not in shown.text and "<img src=x" not in shown.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown.text  # shown, as text


def test_a_note_with_nul_is_refused(filled: Store) -> None:
    with live(filled) as url:
        c = client(url, filled.annotators.add_token("asha"))
        iid = location_item(post(c, "/next", {}))
        page = c.get("/item", params={"id": iid}).text
        r = post(c, "/label", {"id": iid, "label": "pass", "note": "nul\x00byte"}, page)
        assert r.status_code == 400 and "NUL" in r.text
    assert labels_of(filled) == []


def test_sign_out_ends_the_session_and_the_cookie_is_not_the_token(filled: Store) -> None:
    token = filled.annotators.add_token("asha")
    with live(filled) as url:
        c = client(url, token)
        session = c.cookies["judge_session"]
        assert session != token and token not in session
        assert c.get("/").status_code == 200
        assert post(c, "/logout", {}).status_code == 303
        # the cookie copied before signing out signs nobody in afterwards
        stolen = httpx.Client(base_url=url, cookies={"judge_session": session},
                              follow_redirects=False)
        assert stolen.get("/").status_code == 303
        assert stolen.post("/next", data={}).status_code == 403
        # nor does the token itself work as a cookie
        assert httpx.get(f"{url}/", cookies={"judge_session": token},
                         follow_redirects=False).status_code == 303
        # the token still signs in: a new session
        again = client(url, token)
        assert again.cookies["judge_session"] != session
        assert again.get("/").status_code == 200
        # revoking the token ends its live sessions too
        filled.annotators.revoke("asha")
        assert again.get("/").status_code == 303
    assert labels_of(filled) == []


def test_a_session_started_on_one_process_works_on_another(
        filled: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two `judge serve` processes behind one address share the database, and so the
    sessions: signed in on one, a browser is signed in on the other; signed out on one, on
    neither."""
    monkeypatch.setenv("JUDGE_SERVE_SECRET", "one secret for both processes")
    token = filled.annotators.add_token("asha")
    with live(filled) as first, live(filled) as second:
        a = client(first, token)
        b = httpx.Client(base_url=second, cookies=dict(a.cookies), follow_redirects=False)
        assert b.get("/").status_code == 200
        assert post(b, "/logout", {}).status_code == 303
        assert a.get("/").status_code == 303
