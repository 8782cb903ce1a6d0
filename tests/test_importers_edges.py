"""Hand-made edge cases of the importers, beside the real exports (test_importers_real):
OpenTelemetry as exporters really write it, lossless-or-loud reporting, strictness, and
the inputs every importer must read alike (BOM, gzip)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.importers import iter_format
from judge.importers.report import ImportLog
from judge.trace import Trace, iter_traces

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def traces(fmt: str, path: Path, strict: bool = False) -> tuple[list[Trace], ImportLog]:
    log = ImportLog(str(path), fmt, strict=strict)
    return [t.materialize(log) for t in iter_format(fmt, path, log=log)], log


def steps(t: Trace) -> list[tuple[Any, ...]]:
    return [(e.kind.value, e.text if e.kind.value in ("user", "assistant") else e.tool)
            for e in t.events]


def oi_span(span_id: str, attrs: dict[str, Any], start: int, parent: str | None = None,
            kind: str = "LLM") -> dict[str, Any]:
    return {"context": {"trace_id": TRACE, "span_id": span_id}, "parent_id": parent,
            "name": kind.lower(), "span_kind": kind, "start_time": start,
            "end_time": start + 1, "attributes": attrs}


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


# -- OpenTelemetry as exporters write it -------------------------------------------------------
def test_sparse_and_out_of_order_flattened_indices(tmp_path: Path) -> None:
    """An exporter that strips the first messages leaves indices starting at 2, in any
    order; a message whose role was stripped too keeps its place (the input's default)."""
    attrs = {"llm.input_messages.3.message.role": "user",
             "llm.input_messages.3.message.content": "second",
             "llm.input_messages.2.message.content": "first (role stripped)",
             "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.content": "answer"}
    (t,), log = traces("otel", write(tmp_path, "s.json", [oi_span("a" * 16, attrs, 1)]))
    assert steps(t) == [("user", "first (role stripped)"), ("user", "second"),
                        ("assistant", "answer")]
    assert not log.notes


@pytest.mark.parametrize(("raw", "hexid"), [
    (TRACE, TRACE),
    ("0x" + TRACE.upper(), TRACE),
    (base64.b64encode(bytes.fromhex(TRACE)).decode(), TRACE),
    (int(TRACE, 16), TRACE),  # a 128-bit integer (any-agent writes them)
])
def test_ids_as_hex_base64_or_integers_of_any_width(tmp_path: Path, raw: Any,
                                                    hexid: str) -> None:
    span = {"traceId": raw, "spanId": 2**64 - 5, "name": "chat", "startTimeUnixNano": 1,
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}}
    path = tmp_path / "ids.json"
    path.write_text(json.dumps([span]))  # (json.dumps writes integers of any width)
    (t,), _ = traces("otel", path)
    assert t.trace_id == hexid
    assert t.events[0].metadata["source_span_id"] == format(2**64 - 5, "x")  # type: ignore[index]


def test_the_js_sdk_span_shape_span_context_and_hrtime(tmp_path: Path) -> None:
    span = {"name": "ai.generateText.doGenerate",
            "spanContext": {"traceId": TRACE, "spanId": "b" * 16},
            "startTime": [1770131992, 241000000], "endTime": [1770131994, 22541000],
            "attributes": {"ai.operationId": "ai.generateText.doGenerate",
                           "ai.prompt.messages": json.dumps(
                               [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
                           "ai.response.text": "hello",
                           "ai.response.toolCalls": json.dumps([
                               {"toolCallId": "t1", "toolName": "lookup",
                                "input": "{\"q\": 1}"}])}}
    (t,), log = traces("otel", write(tmp_path, "js.json", [span]))
    assert [(e.kind.value, e.tool or e.text) for e in t.events] == [
        ("user", "hi"), ("assistant", "hello"), ("tool_call", "lookup")]
    assert t.events[2].args == {"q": 1} and t.events[2].call_id == "t1"
    assert not log.notes


def test_a_repeated_span_id_is_one_span_when_identical_two_when_not(tmp_path: Path) -> None:
    msg = {"llm.input_messages.0.message.role": "user",
           "llm.input_messages.0.message.content": "hi"}
    same = oi_span("c" * 16, msg, 1)
    (t,), log = traces("otel", write(tmp_path, "same.json", [same, dict(same)]))
    assert steps(t) == [("user", "hi")] and log.omitted["repeated copies of a span"] == 1
    other = oi_span("c" * 16, {**msg, "llm.input_messages.0.message.content": "bye"}, 5)
    (t,), log = traces("otel", write(tmp_path, "differ.json", [same, other]))
    assert steps(t) == [("user", "hi"), ("user", "bye")]  # both kept
    assert log.notes and log.notes[0].action == "kept" and "2 spans kept" in log.notes[0].message


def test_gen_ai_tool_attributes_and_span_events_with_messages(tmp_path: Path) -> None:
    llm = {"traceId": TRACE, "spanId": "d" * 16, "name": "chat", "startTimeUnixNano": 10,
           "endTimeUnixNano": 20, "attributes": {"gen_ai.operation.name": "chat"},
           "events": [{"name": "gen_ai.user.message",
                       "attributes": {"content": "refund order-17"}},
                      {"name": "gen_ai.choice", "attributes": {"message": json.dumps(
                          {"role": "assistant", "tool_calls": [
                              {"id": "k1", "function": {"name": "refund",
                                                        "arguments": "{\"id\": 17}"}}]})}}]}
    tool = {"traceId": TRACE, "spanId": "e" * 16, "name": "execute_tool refund",
            "startTimeUnixNano": 30, "endTimeUnixNano": 40,
            "attributes": {"gen_ai.operation.name": "execute_tool",
                           "gen_ai.tool.name": "refund", "gen_ai.tool.call.id": "k1",
                           "gen_ai.tool.call.arguments": "{\"id\": 17}",
                           "gen_ai.tool.call.result": "{\"ok\": true}"}}
    (t,), log = traces("otel", write(tmp_path, "ev.json", [llm, tool]))
    assert [(e.kind.value, e.tool, e.call_id) for e in t.events] == [
        ("user", None, None), ("tool_call", "refund", "k1"), ("tool_result", "refund", "k1")]
    assert t.events[2].result == {"ok": True} and not log.notes


# -- lossless or loud -------------------------------------------------------------------------
def _otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {},
                                                               "spans": list(spans)}]}]}


GOOD = {"traceId": TRACE, "spanId": "f" * 16, "name": "chat", "startTimeUnixNano": 1,
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                       {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                           [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}}]}
BAD = {**GOOD, "spanId": "0" * 15 + "1",
       "attributes": [{"key": "n", "value": {"intValue": "many"}}]}


def test_one_odd_span_never_costs_the_others(tmp_path: Path) -> None:
    path = write(tmp_path, "mixed.json", _otlp(GOOD, BAD))
    out, report = tmp_path / "o.jsonl", tmp_path / "r.json"
    code, _, err = run("import", "otel", path, "-o", out, "--report", report)
    assert code == 0, err
    assert "span 0000000000000001: field 'attributes[0].value': expected an integer" in err
    assert "skipped 1" in err and [steps(t) for t in iter_traces(out)] == [[("user", "hi")]]
    doc = json.loads(report.read_text())
    assert doc["events"] == {"user": 1} and doc["notes"][0]["where"] == "span 0000000000000001"
    assert doc["notes"][0]["action"] == "skipped" and doc["strict"] is False
    # --strict: today's behaviour, the file refused on the first problem
    code, _, err = run("import", "otel", path, "-o", tmp_path / "s.jsonl", "--strict")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "field 'attributes[0].value': expected an integer" in err
    assert not (tmp_path / "s.jsonl").exists()


def test_a_non_empty_source_that_yields_no_event_is_exit_2(tmp_path: Path) -> None:
    embed = {"traceId": TRACE, "spanId": "a" * 16, "name": "ai.embed",
             "attributes": {"ai.operationId": "ai.embed", "ai.value": "x"}}
    path = write(tmp_path, "embed.json", [embed])
    code, _, err = run("import", "auto", path, "-o", tmp_path / "o.jsonl")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "read as otel" in err and "nothing to import" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_auto_names_the_format_and_the_first_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", _otlp(BAD))
    code, _, err = run("import", "auto", path, "-o", tmp_path / "o.jsonl")
    assert code == 2 and "cannot tell" not in err
    assert "read as otel" in err and "expected an integer" in err


def test_a_lone_surrogate_is_repaired_and_said_or_refused_when_strict(tmp_path: Path) -> None:
    path = tmp_path / "sur.json"
    path.write_text('[{"role": "user", "content": "bad \\ud800 here"}]')
    out = tmp_path / "o.jsonl"
    code, _, err = run("import", "anthropic", path, "-o", out)
    assert code == 0 and "replaced by U+FFFD" in err and "field 'text'" in err
    (t,) = iter_traces(out)  # what `judge check` then reads, no surrogate left
    assert t.events[0].text == "bad \ufffd here"
    code, _, err = run("import", "anthropic", path, "-o", tmp_path / "s.jsonl", "--strict")
    assert code == 2 and "lone surrogate" in err


def test_nan_and_out_of_range_times_are_ignored_and_said(tmp_path: Path) -> None:
    span = {"context": {"trace_id": TRACE, "span_id": "a" * 16}, "span_kind": "LLM",
            "start_time": "NaN", "end_time": 1e308,
            "attributes": {"llm.input_messages.0.message.role": "user",
                           "llm.input_messages.0.message.content": "hi"}}
    (t,), log = traces("otel", write(tmp_path, "nan.json", [span]))
    assert steps(t) == [("user", "hi")]
    assert [(n.field, n.action) for n in log.notes] == [("start_time", "ignored"),
                                                         ("end_time", "ignored")]
    with pytest.raises(InputError, match="start_time"):
        traces("otel", tmp_path / "nan.json", strict=True)


# -- what every importer reads alike ----------------------------------------------------------
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
EVERY = {
    "openai-chat": CHAT,
    "anthropic": CHAT,
    "otel": [{"context": {"trace_id": TRACE, "span_id": "a" * 16}, "span_kind": "LLM",
              "attributes": {"llm.input_messages.0.message.role": "user",
                             "llm.input_messages.0.message.content": "hi"}}],
    "langsmith": {"id": "r1", "trace_id": "t", "run_type": "llm",
                  "inputs": {"messages": [{"role": "user", "content": "hi"}]}},
    "inspect": {"eval": {"task": "t"}, "samples": [
        {"id": 1, "epoch": 1, "messages": CHAT}]},
    "langfuse": {"trace": {"id": "t1"}, "observations": [
        {"id": "o1", "traceId": "t1", "type": "GENERATION", "input": CHAT[:1],
         "output": CHAT[1]}]},
    "swe-agent": {"history": CHAT, "info": {}},
}


@pytest.mark.parametrize("fmt", sorted(EVERY))
@pytest.mark.parametrize("how", ["plain", "bom", "gzip"])
def test_every_importer_reads_a_bom_and_gzip_alike(tmp_path: Path, fmt: str, how: str) -> None:
    data = json.dumps(EVERY[fmt]).encode()
    if how == "bom":
        data = b"\xef\xbb\xbf" + data
    elif how == "gzip":
        data = gzip.compress(data)
    path = tmp_path / "in.json"
    path.write_bytes(data)
    out = tmp_path / "o.jsonl"
    code, _, err = run("import", fmt, path, "-o", out)
    assert code == 0, err
    (t,) = iter_traces(out)
    assert t.events[0].text == "hi"
    code, _, err = run("import", "auto", path, "-o", tmp_path / "a.jsonl")
    seen = "openai-chat" if fmt == "anthropic" else fmt  # (a plain list is both: OpenAI's)
    assert code == 0 and f"(read as {seen})" in err, err


def test_a_gzip_file_past_the_cap_is_named_with_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(gzip.compress(json.dumps(CHAT).encode() + b" " * (3 << 20)))
    code, _, err = run("import", "openai-chat", path, "-o", tmp_path / "o.jsonl",
                       "--max-member-bytes", "1M")
    assert code == 2 and "decompresses to more than the cap of 1 MiB" in err
    assert "--max-member-bytes" in err


@pytest.mark.parametrize("what", ["dir", "fifo", "loop", "missing"])
def test_what_is_not_a_file_is_said_as_such(tmp_path: Path, what: str) -> None:
    import os
    path = tmp_path / "x.json"
    if what == "dir":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "loop":
        path.symlink_to(path)
    expect = {"dir": "is a directory", "fifo": "is a FIFO", "loop": "symbolic link loop",
              "missing": "no such file"}[what]
    for fmt in ("otel", "anthropic", "inspect", "openai-chat", "auto"):
        code, _, err = run("import", fmt, path, "-o", tmp_path / "o.jsonl")
        assert code == 2 and expect in err, (fmt, err)


def test_actions_text_makes_fenced_commands_tool_calls(tmp_path: Path) -> None:
    """A ReAct loop in an OpenAI message list: the fenced block is the call, the next user
    message its result, both marked; a block without a language uses --action-tool."""
    msgs = [{"role": "user", "content": "count the files"},
            {"role": "assistant", "content": "Let me look.\n```bash\nls | wc -l\n```"},
            {"role": "user", "content": "12"},
            {"role": "assistant", "content": "Now the big ones:\n```\nfind . -size +1M\n```"},
            {"role": "user", "content": "./a.bin"},
            {"role": "assistant", "content": "There are 12 files; a.bin is big."}]
    path = write(tmp_path, "react.json", msgs)
    out = tmp_path / "o.jsonl"
    code, _, err = run("import", "openai-chat", path, "-o", out, "--actions", "text",
                       "--action-tool", "shell")
    assert code == 0, err
    (t,) = iter_traces(out)
    assert [(e.kind.value, e.tool, e.args, e.result) for e in t.events] == [
        ("user", None, None, None),
        ("assistant", None, None, None),
        ("tool_call", "bash", {"command": "ls | wc -l"}, None),
        ("tool_result", "bash", None, "12"),
        ("assistant", None, None, None),
        ("tool_call", "shell", {"command": "find . -size +1M"}, None),
        ("tool_result", "shell", None, "./a.bin"),
        ("assistant", None, None, None)]
    assert t.events[1].text == "Let me look."
    assert all(e.metadata and e.metadata.get("action_from_text") for e in t.events[2:4])
    assert [e.turn for e in t.events] == [1] * 8  # observations are no user turns
    # without it, the messages as they are
    code, _, _ = run("import", "openai-chat", path, "-o", out)
    (t,) = iter_traces(out)
    assert [e.kind.value for e in t.events].count("tool_call") == 0


@pytest.mark.parametrize("orient", ["records", "columns"])
def test_a_phoenix_spans_dataframe_as_json(tmp_path: Path, orient: str) -> None:
    """`px.Client().get_spans_dataframe().to_json(orient=...)`: dotted columns
    (`context.span_id`, `attributes.llm.input_messages`), times in epoch milliseconds."""
    recs = [{"name": "ChatOpenAI", "span_kind": "LLM", "parent_id": None,
             "start_time": 1767261600000, "end_time": 1767261601000,
             "context.span_id": "a" * 16, "context.trace_id": TRACE,
             "attributes.llm.input_messages": [{"message.role": "user",
                                                "message.content": "hi"}],
             "attributes.llm.output_messages": [{"message.role": "assistant",
                                                 "message.content": "hello"}]},
            {"name": "search", "span_kind": "TOOL", "parent_id": "a" * 16,
             "start_time": 1767261602000, "end_time": 1767261603000,
             "context.span_id": "c" * 16, "context.trace_id": TRACE,
             "attributes.tool.name": "search", "attributes.input.value": "{\"q\": 1}",
             "attributes.output.value": "found"}]
    doc: Any = recs if orient == "records" else {
        k: {str(i): r.get(k) for i, r in enumerate(recs)} for k in recs[0] | recs[1]}
    path = write(tmp_path, f"{orient}.json", doc)
    code, _, err = run("import", "auto", path, "-o", tmp_path / "o.jsonl")
    assert code == 0 and "(read as otel)" in err, err
    (t,) = iter_traces(tmp_path / "o.jsonl")
    assert steps(t) == [("user", "hi"), ("assistant", "hello"), ("tool_call", "search"),
                        ("tool_result", "search")]
