"""Properties of `judge serve`'s pure parts: any stored item dict, however malformed or
hostile, gives an item view and a rendered page (never an exception), and the page carries
no raw control or format character and no live markup from the item; any CSRF token that
was not made for this session fails."""

from __future__ import annotations

import re
from typing import Any

from hostile_text import HOSTILE, raw_controls
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from judge.serve.auth import CSRF_COOKIE, Csrf
from judge.serve.templating import environment
from judge.serve.views import item_view

text = st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), text)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=8)
entry = st.dictionaries(st.sampled_from(["key", "value", "class", "sensitivity",
                                         "since_turn", "superseded_turn", "set_turn"]),
                        values, max_size=7)
event = st.dictionaries(st.sampled_from(["seq", "turn", "kind", "text", "tool", "args",
                                         "result", "error", "key", "value"]),
                        st.one_of(values, st.sampled_from(["tool_call", "tool_result",
                                                           "user", "state_write"])),
                        max_size=8)
items = st.fixed_dictionaries({}, optional={
    "goal": values, "seq": values, "turn": values, "kind": values, "rubric": values,
    "ledger": st.one_of(values, st.fixed_dictionaries({}, optional={
        "turn": values, "active": st.lists(st.one_of(entry, values), max_size=3),
        "superseded": st.lists(st.one_of(entry, values), max_size=2)})),
    "events": st.lists(st.one_of(event, values), max_size=4),
    "ledger_keys": st.lists(text, max_size=3), "slice_seqs": st.lists(st.integers(0, 99),
                                                                    max_size=3)})

ENV = environment()
TAG = re.compile(r"<(script|img|a |iframe|svg|!--)", re.I)


def render(data: dict[str, Any] | None, item_id: str) -> str:
    view = item_view(item_id, data, None)
    return ENV.get_template("item.html").render(
        csrf="n.m", csrf_field="csrf_token", lease_s=300, who="asha", item=view,
        entry=None, mine=True, labelled=False, n_done=0, rubric="", saved=None,
        saved_label=None, undone=False)


@settings(max_examples=150, deadline=None)
@given(items, st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30)))
def test_any_item_renders_inert(data: dict[str, Any], item_id: str) -> None:
    page = render(data, item_id)
    assert raw_controls(page.encode("utf-8", "surrogatepass")) == []
    # the template's own tags are fixed: any <script, <img, <a … must be ours, not the item's
    assert len(TAG.findall(page)) == len(TAG.findall(render({}, "x#1:r")))


def _request(cookie: str, origin: str | None = None) -> Request:
    headers = [(b"host", b"127.0.0.1:8000"), (b"cookie", f"{CSRF_COOKIE}={cookie}".encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers,
                    "query_string": b""})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.text(alphabet="abcdef0123456789", max_size=64))
def test_only_tokens_made_for_the_session_pass(sent: str, session: str) -> None:
    csrf = Csrf(b"k" * 32)
    nonce = "n" * 32
    good = csrf.token(nonce, session)
    req = _request(nonce)
    assert csrf.valid(req, good, session)
    if sent != good:
        assert not csrf.valid(req, sent, session)
    assert not csrf.valid(req, good, session + "x")  # another session's token
    assert not csrf.valid(_request("m" * 32), good, session)  # another browser's nonce
    assert not csrf.valid(_request(nonce, "http://evil.example"), good, session)


# -- the parsers of judge serve's options ------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80), st.sampled_from(HOSTILE),
                 st.ip_addresses().map(str), st.from_regex(r"[a-z0-9.-]{1,70}", fullmatch=True)))
def test_a_host_is_an_address_a_name_or_one_clear_error(host: str) -> None:
    """Any --host text is accepted as an IP address or a DNS-shaped name, or refused with a
    ListenError naming it; never another exception."""
    import ipaddress

    from judge.serve.listen import ListenError, check_host

    try:
        got = check_host(host)
    except ListenError as exc:
        assert "--host" in exc.message
        return
    try:
        ipaddress.ip_address(got)
    except ValueError:  # a name: what resolvers take
        assert got.isascii() and " " not in got and 0 < len(got) <= 253


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str)),
       st.sampled_from([0, 1, 80, 65535]))
def test_binding_any_address_listens_or_is_one_clear_error(host: str, port: int) -> None:
    from judge.serve.listen import ListenError, bind

    try:
        sockets = bind(host, port)
    except ListenError as exc:
        assert exc.message.startswith("cannot listen on") and "\n" not in exc.message
        return
    for sock in sockets:
        sock.close()


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.text(max_size=60), st.sampled_from(HOSTILE),
                       st.sampled_from(["sqlite:///x.db", "postgresql://u@h/d", "x.db", "a b",
                                        "mysql://h/d", "postgres://u:p@h:99999/d",
                                        "sqlite://"])))
def test_a_database_url_is_accepted_or_one_clear_error_and_nothing_is_made(
        value: str, tmp_path_factory: Any) -> None:
    import os

    from judge.cli.database import check_database_url
    from judge.errors import ConfigError

    here = tmp_path_factory.mktemp("db")
    before = os.getcwd()
    os.chdir(here)
    try:
        check_database_url(value, "--db")
    except ConfigError as exc:
        assert exc.message.startswith("--db ") and "\n" not in exc.message
    finally:
        os.chdir(before)
    assert list(here.iterdir()) == []  # checking makes nothing
