"""Property tests of judge.record: the JSON-safe copy, a recorder's trace as `judge check`
loads it, the LangChain adapter's JSON decoding, user-turn detection and the plugin's glob
check."""

from __future__ import annotations

import fnmatch
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.pytest_plugin.globs import pattern_problem, unclosed_bracket
from judge.record import Recorder
from judge.record.conversation import UserTurns
from judge.record.jsonsafe import copy_json
from judge.trace import load_traces

TEXT = st.text(max_size=20)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=25)
ODD: st.SearchStrategy[Any] = st.recursive(
    JSON | st.floats() | st.binary(max_size=8) | st.decimals(allow_nan=True)
    | st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1,
              max_size=3) | st.just(object()),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.frozensets(st.integers(), max_size=3)
    | st.dictionaries(st.integers() | TEXT, inner, max_size=3),
    max_leaves=15)


@given(JSON)
def test_json_values_are_copied_exactly_and_nothing_is_lossy(value: Any) -> None:
    copied = copy_json(value)
    assert copied.value == value and copied.lossy == []
    assert json.loads(json.dumps(copied.value)) == value


@given(ODD)
def test_any_value_copies_to_strict_json_that_round_trips(value: Any) -> None:
    copied = copy_json(value, "result")
    text = json.dumps(copied.value, allow_nan=False)  # strictly JSON
    text.encode("utf-8")  # writable as UTF-8: no lone surrogate survives
    assert json.loads(text) == copied.value
    assert all(p.startswith("result") for p in copied.lossy)


@given(st.decimals(allow_nan=False, allow_infinity=False, places=2))
def test_decimals_are_exact_or_listed(d: Decimal) -> None:
    copied = copy_json(d)
    if copied.lossy:
        assert Decimal(copied.value) == d  # the text form keeps every digit
    else:
        assert copied.value == d and isinstance(copied.value, int)


OPS = st.lists(st.one_of(
    st.tuples(st.just("user"), TEXT), st.tuples(st.just("assistant"), TEXT),
    st.tuples(st.just("call"), st.dictionaries(TEXT, JSON, max_size=3), JSON),
    st.tuples(st.just("fail"), st.dictionaries(TEXT, JSON, max_size=3), TEXT),
    st.tuples(st.just("write"), TEXT, JSON), st.tuples(st.just("summary"), TEXT)),
    max_size=12)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_a_recorded_trace_loads_as_recorded(tmp_path: Path, ops: list[tuple[Any, ...]]) -> None:
    rec = Recorder("prop/1", scenario="s")
    users = 0
    turns: list[int] = []
    for op in ops:
        kind = op[0]
        if kind == "user":
            users += 1
            rec.user(op[1])
        elif kind == "assistant":
            rec.assistant(op[1])
        elif kind == "call":
            rec.tool_result(rec.tool_call("t", op[1]), op[2])
        elif kind == "fail":
            rec.tool_result(rec.tool_call("t", op[1]), error=op[2])
        elif kind == "write":
            rec.state_write(op[1], op[2])
        else:
            rec.summary(op[1])
        turns += [users] * (len(rec) - len(turns))
    if not ops:
        rec.user("hi")
        turns.append(1)
    path = rec.save(tmp_path / "p.jsonl")
    (loaded,) = load_traces([path])
    assert [e.seq for e in loaded.events] == list(range(1, len(turns) + 1))
    assert [e.turn for e in loaded.events] == turns
    again = [e.model_dump(exclude_none=True, mode="json") for e in loaded.events]
    assert again == [{k: v for k, v in e.items() if v is not None} for e in rec.events]


@given(st.dictionaries(TEXT, JSON, max_size=4) | st.lists(JSON, max_size=4))
def test_langchain_json_text_decodes_back_to_the_tool_value(value: Any) -> None:
    from judge.record.langchain import _decoded

    assert _decoded(json.dumps(value, ensure_ascii=False)) == value


@given(TEXT)
def test_other_tool_text_is_kept_as_text(text: str) -> None:
    from judge.record.langchain import _decoded

    found = _decoded(text)
    if not isinstance(found, dict | list):
        assert found == text


@given(st.lists(st.lists(st.tuples(st.booleans(), TEXT), max_size=6), max_size=6))
def test_new_user_messages_are_the_trailing_ones(requests: list[list[tuple[bool, str]]]
                                                 ) -> None:
    turns = UserTurns()
    events = 0
    for messages in requests:
        found = turns.new(messages, events)
        trailing: list[str] = []
        for is_user, text in messages:
            trailing = [*trailing, text] if is_user else []
        assert found in ([], trailing)
        events += len(found) + 1  # something else is recorded between requests
        if trailing:
            assert found == trailing


@given(st.text(alphabet="ab[]!", max_size=12))
def test_unclosed_bracket_agrees_with_fnmatch(p: str) -> None:
    """A `[` the check calls unclosed is one fnmatch reads as a literal `[` (the pattern can
    then only match names holding that bracket, never what was meant); a closed class is a
    class: the pattern does not match its own text."""
    regex = fnmatch.translate(p)
    if unclosed_bracket(p) is None:
        assert pattern_problem(p) is None or not p.strip()
        if "[" in p:
            assert not fnmatch.fnmatchcase(p, p)
    else:
        assert "never closed" in (pattern_problem(p) or "")
        assert "\\[" in regex


def test_floats_that_are_not_finite_are_text() -> None:
    copied = copy_json([math.inf, -math.inf, math.nan])
    assert copied.value == ["inf", "-inf", "nan"] and len(copied.lossy) == 3
