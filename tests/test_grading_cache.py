"""Cache keys and the call caches (memory, JSONL file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.errors import StoreError
from judge.grading.cache import JsonlCache, MemoryCache
from judge.grading.keys import KeyMaker, cache_key, normalize_endpoint
from judge.providers.base import CallRecord, JudgeRequest, ModelParams

SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}}}
HOST = "https://judge.example.com/v1"


def request(content: str = "item 1", system: str = "You are a judge.") -> JudgeRequest:
    return JudgeRequest(item_id="t#1:r", system=system,
                        messages=({"role": "user", "content": content},), schema=SCHEMA)


def record(key: str, text: str = '{"label": "pass"}') -> CallRecord:
    return CallRecord(cache_key=key, item_id="t#1:r", prompt_hash="sha256:p", model="m",
                      params=ModelParams().to_dict(), request={"system": "s"},
                      response_text=text, usage={"prompt_tokens": 3}, latency_s=0.25)


def key(prompt: str = "sha256:a", model: str = "openai:x", params: ModelParams | None = None,
        req: JudgeRequest | None = None, endpoint: str = HOST) -> str:
    return cache_key(prompt, model, params or ModelParams(), req or request(),
                     endpoint=endpoint)


def test_key_is_stable_and_depends_on_every_part() -> None:
    base = key()
    assert base == key()
    assert base.startswith("sha256:") and len(base) == 7 + 64
    variants = {
        key(prompt="sha256:b"),
        key(model="openai:y"),
        key(params=ModelParams(temperature=0.5)),
        key(params=ModelParams(seed=1)),
        key(req=request(content="item 2")),
        key(req=request(system="Other.")),
    }
    other_schema = JudgeRequest(item_id="t#1:r", system="You are a judge.",
                                messages=request().messages, schema={"type": "object"})
    variants.add(key(req=other_schema))
    assert base not in variants and len(variants) == 7


def test_key_depends_on_the_endpoint() -> None:
    """Another server under the same model name is another judge (issue 9): its replies
    are never served for this one. Spellings of one endpoint are one endpoint."""
    others = {key(endpoint=e) for e in ("http://localhost:8000/v1", "https://other.example/v1",
                                        "https://judge.example.com/v2", "")}
    assert key() not in others and len(others) == 4
    same = {key(endpoint=e) for e in ("https://JUDGE.example.com/v1/",
                                      "https://judge.example.com:443/v1",
                                      "https://user:secret@judge.example.com/v1")}
    assert same == {key()}
    assert normalize_endpoint("HTTP://[::1]:8080/v1/") == "http://[::1]:8080/v1"
    assert normalize_endpoint("https://u:p@h.example/v1#x") == "https://h.example/v1"
    assert normalize_endpoint(None) == "" and normalize_endpoint("  ") == ""


def test_key_cannot_be_forged_by_moving_text_between_messages() -> None:
    a = JudgeRequest(item_id="i", system="s", schema=SCHEMA,
                     messages=({"role": "user", "content": "ab"}, {"role": "user", "content": "c"}))
    b = JudgeRequest(item_id="i", system="s", schema=SCHEMA,
                     messages=({"role": "user", "content": "a"}, {"role": "user", "content": "bc"}))
    km = KeyMaker("p", "m", ModelParams(), SCHEMA, endpoint=HOST)
    assert km.key(a) != km.key(b)


def test_key_ignores_item_id() -> None:
    # the same rendered input is the same call, whatever item asked for it
    km = KeyMaker("p", "m", ModelParams(), SCHEMA, endpoint=HOST)
    other = JudgeRequest(item_id="u#9:r", system="You are a judge.",
                         messages=request().messages, schema=SCHEMA)
    assert km.key(request()) == km.key(other)


def test_memory_cache_counts_hits() -> None:
    c = MemoryCache()
    assert c.get("k") is None
    c.put(record("k"))
    got = c.get("k")
    assert got is not None and got.response_text == '{"label": "pass"}'
    assert (c.hits, c.misses) == (1, 1)


def test_jsonl_cache_persists_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as c:
        c.put(record("k1"))
        c.put(record("k2", "second"))
    assert len(path.read_text().splitlines()) == 2
    with JsonlCache(path) as again:
        got = again.get("k2")
        assert got is not None
        assert got.response_text == "second" and got.latency_s == 0.25
        assert got.usage == {"prompt_tokens": 3} and got.request == {"system": "s"}
        assert again.get("missing") is None


def test_jsonl_cache_skips_a_half_written_line_and_keeps_appending(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as c:
        c.put(record("k1"))
    with path.open("a") as fh:
        fh.write('{"cache_key": "k2", "respo')  # killed mid-write
    with JsonlCache(path) as c:
        assert c.skipped == 1
        assert c.get("k1") is not None and c.get("k2") is None
        c.put(record("k3"))
    with JsonlCache(path) as c:
        assert c.skipped == 1  # the partial line stayed alone on its line
        assert c.get("k3") is not None


def test_jsonl_cache_truncated_record_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as c:
        c.put(record("k1"))
        c.put(record("k2"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # the last record cut short
    with JsonlCache(path) as c:
        assert c.get("k1") is not None
        assert c.get("k2") is None and c.skipped == 1
        c.put(record("k2", "again"))
        got = c.get("k2")
        assert got is not None and got.response_text == "again"
    with JsonlCache(path) as c:
        got = c.get("k2")
        assert got is not None and got.response_text == "again"


def test_render_memo_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with JsonlCache(path) as c:
        c.put(record("k1"))
        c.put_memo("memo:abc", "k1", '{"label": "pass"}')
        c.put_memo("memo:abc", "k1", '{"label": "pass"}')  # unchanged: not written twice
    assert len(path.read_text().splitlines()) == 2
    with JsonlCache(path) as c:
        assert c.get_memo("memo:abc") == ("k1", '{"label": "pass"}')
        assert c.get_memo("memo:zzz") is None
    m = MemoryCache()
    m.put_memo("memo:x", "k", "t")
    assert m.get_memo("memo:x") == ("k", "t")


def test_jsonl_cache_unwritable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the call cache"):
        JsonlCache(tmp_path / "no-such-dir" / "calls.jsonl")


def test_repeated_schema_is_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    system = "You are a careful judge. " * 40
    schema = {"type": "object", "description": "x" * 400}
    with JsonlCache(path) as c:
        for i in range(5):
            rec = record(f"k{i}")
            rec.request = {"system": system, "schema": schema,
                           "messages": [{"role": "user", "content": f"item {i}"}]}
            c.put(rec)
    text = path.read_text()
    assert text.count("x" * 400) == 1  # one blob line
    assert text.count("You are a careful judge.") == 5 * 40  # per-item nonce: kept inline
    with JsonlCache(path) as c:
        got = c.get("k3")
        assert got is not None
        assert got.request == {"system": system, "schema": schema,
                               "messages": [{"role": "user", "content": "item 3"}]}
