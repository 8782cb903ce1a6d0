from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.trace import iter_traces
from judge.trace.loader import iter_trace_streams

TRACE = {
    "trace_id": "t/1", "scenario": "s", "candidate": {"model": "m"},
    "events": [
        {"kind": "user", "text": "hi"},
        {"kind": "tool-call", "tool": "get", "args": {"id": 1}},
        {"kind": "tool_result", "tool": "get", "result": {"id": 1}},
        {"kind": "user", "text": "again"},
    ],
}


def test_defaults_and_aliases(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps(TRACE))
    (trace,) = list(iter_traces(p))
    assert [e.seq for e in trace.events] == [1, 2, 3, 4]
    assert [e.turn for e in trace.events] == [1, 1, 1, 2]
    assert trace.events[1].kind.value == "tool_call"


def test_bad_line_names_file_line_field_and_keeps_others(tmp_path: Path) -> None:
    bad = {**TRACE, "trace_id": "t/2",
           "events": [{"kind": "user", "text": "a"}, {"kind": "shout", "text": "b"}]}
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([json.dumps(TRACE), json.dumps(bad), "{not json", json.dumps(TRACE)]))
    errors: list[InputError] = []
    traces = list(iter_traces(p, errors))
    assert len(traces) == 2
    assert len(errors) == 2
    assert f"{p}:2: events[1].kind" in errors[0].message
    assert f"{p}:3" in errors[1].message and "malformed JSON" in errors[1].message


def test_duplicate_seq_is_an_error(tmp_path: Path) -> None:
    bad = {**TRACE, "events": [{"seq": 1, "kind": "user", "text": "a"},
                               {"seq": 1, "kind": "user", "text": "b"}]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="duplicate seq 1"):
        list(iter_traces(p))


def test_streamed_trace(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    lines = [json.dumps({"trace_id": "big"})]
    lines += [json.dumps({"kind": "user", "text": f"m{i}"}) for i in range(50)]
    lines += [json.dumps(TRACE)]
    p.write_text("\n".join(lines) + "\n")
    streams = iter_trace_streams(p)
    first = next(streams)
    assert first.header.trace_id == "big"
    assert sum(1 for _ in first.events) == 50
    second = next(streams)
    assert second.header.trace_id == "t/1"
