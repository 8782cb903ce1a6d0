"""Importers of agent telemetry and logs: OpenTelemetry (GenAI conventions, OpenInference),
LangSmith, Anthropic Messages, inspect_ai; `judge import auto`. Fixtures: tests/data/importers
(SOURCES.md says where each shape comes from)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.importers import ImportedTrace, detect, iter_format, write_imported
from judge.importers.imported import BUFFER_EVENTS
from judge.trace import Trace, iter_traces

DATA = Path(__file__).resolve().parent / "data" / "importers"
OTEL = DATA / "otel"


def traces(fmt: str, path: Path, **options: Any) -> list[Trace]:
    return [t.materialize() for t in iter_format(fmt, path, **options)]


def steps(trace: Trace) -> list[tuple[Any, ...]]:
    """(kind, tool or text, args / result / error) of each event, for exact comparison."""
    out: list[tuple[Any, ...]] = []
    for e in trace.events:
        k = e.kind.value
        if k in ("user", "assistant"):
            out.append((k, e.text))
        elif k == "tool_call":
            out.append((k, e.tool, e.args))
        else:
            out.append((k, e.tool, e.error if e.error is not None else e.result))
    return out


# -- OpenTelemetry -----------------------------------------------------------------------------
def test_genai_otlp_export_one_trace_per_trace_id_each_message_once() -> None:
    t1, t2 = traces("otel", OTEL / "genai_otlp.json")
    assert t1.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert steps(t1) == [
        ("user", "Refund order-17 please, it arrived broken."),
        ("tool_call", "get_order", {"orderId": "order-17"}),
        ("tool_result", "get_order", {"orderId": "order-17", "paidCents": 4200}),
        ("assistant", "I can refund $42.00 for order-17. Shall I go ahead?"),
        ("user", "yes"),
        ("assistant", "Refunding now."),
        ("tool_call", "refund_order", {"orderId": "order-17", "amountCents": 4200}),
        ("tool_result", "refund_order", {"status": "confirmed", "refundId": "rf-1"}),
        ("assistant", "Refund rf-1 of $42.00 is confirmed."),
    ]
    assert [e.turn for e in t1.events] == [1, 1, 1, 1, 2, 2, 2, 2, 2]
    assert [e.call_id for e in t1.events if e.kind.value == "tool_call"] == ["call_1", "call_2"]
    # every event names the span it came from: calls from the chat span, results from the
    # execute_tool span
    src = [e.metadata["source_span_id"] for e in t1.events]  # type: ignore[index]
    assert src[1:3] == ["b7ad6b7169203331", "c1a9e4f2b3d40001"]
    assert all(e.metadata["source_trace_id"] == t1.trace_id for e in t1.events)  # type: ignore[index]
    assert t1.candidate == {"model": "gpt-4o-mini", "agent": "SupportBot"}
    # the system instructions stay out of the events; only a fingerprint is kept
    assert len(t1.metadata["system_prompts"]) == 1
    assert all("Never refund twice" not in (e.text or "") for e in t1.events)
    # base64 ids (protobuf JSON mapping) become hex; an ERROR status is the tool's error
    assert t2.trace_id == "5b8efff798038103d269b633813fc60c"
    assert steps(t2)[-1] == ("tool_result", "cancel_reservation",
                             "reservation is already flown")
    assert t2.candidate == {"model": "claude-sonnet", "agent": "booking-agent"}


def test_openinference_span_list_dedupes_history_keeps_repeated_user_turns() -> None:
    (t,) = traces("otel", OTEL / "openinference_spans.json")
    assert steps(t) == [
        ("user", "Book me the 9am slot on Friday"),
        ("tool_call", "list_slots", {"day": "friday"}),
        ("tool_result", "list_slots", ["09:00", "11:30"]),
        ("assistant", "09:00 on Friday is free. Shall I book it?"),
        ("user", "yes"),
        ("tool_call", "book_slot", {"day": "friday", "time": "09:00"}),
        ("tool_result", "book_slot", {"booked": True, "ref": "bk-77"}),
        ("assistant", "Booked: reference bk-77. Anything else?"),
        ("user", "yes"),  # the second "yes" is a new turn, not a repeat of the first
        ("assistant", "Glad to help. Reply yes again to also book 11:30?"),
    ]
    # the framework's LLM span around the SDK's span is the same call: the inner span (the
    # actual model call) is the source, the wrapper is not
    sources = {e.metadata["source_span_id"] for e in t.events}  # type: ignore[index]
    assert "3333333333333331" in sources and "2222222222222221" not in sources
    assert t.metadata["task"] == {"instruction": "Book me the 9am slot on Friday"}


def test_smolagents_code_agent_actions_are_python_interpreter_calls() -> None:
    (t,) = traces("otel", OTEL / "smolagents_codeagent.json")
    s = steps(t)
    calls = [x for x in s if x[0] == "tool_call"]
    assert calls == [
        ("tool_call", "python_interpreter", {"code": "result = 17 * 23\nprint(result)"}),
        ("tool_call", "python_interpreter",
         {"code": 'r = web_search(query="capital of France")\nprint(r)'}),
        ("tool_call", "web_search", {"query": "capital of France"}),
        ("tool_call", "python_interpreter", {"code": 'final_answer("391; Paris")'}),
        ("tool_call", "final_answer", {"args": ["391; Paris"]}),
    ]
    assert s[0] == ("user", "New task:\nWhat is 17 * 23? Then find the capital of France.")
    assert s[1] == ("assistant", "Thought: I will compute the product first.")
    # the step's observations are the interpreter's result, once each (the later LLM inputs
    # repeat them as tool-response messages)
    results = [x for x in s if x[0] == "tool_result" and x[1] == "python_interpreter"]
    assert [r[2].splitlines()[1] for r in results] == ["391", "Paris is the capital of France.",
                                                       "Last output from code snippet:"]
    assert sum(1 for x in s if x[0] == "user") == 1
    # the trace id of the wrapping document reaches every nested span
    assert t.trace_id == "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    by_src = {e.seq: e.metadata for e in t.events}
    step2 = [seq for seq, md in by_src.items()
             if md and md.get("source_parent_span_id") == "b000000000000002"]
    assert step2 == [5, 6, 7, 8]  # the LLM and the tool inside Step 2


def test_legacy_gen_ai_prompt_attributes_and_collector_jsonl() -> None:
    (t,) = traces("otel", OTEL / "openllmetry_collector.jsonl")
    assert steps(t) == [
        ("user", "Delete the task called groceries"),
        ("tool_call", "delete_task", {"title": "groceries"}),
        ("tool_result", "delete_task", {"deleted": 1}),
        ("assistant", "Done: groceries is deleted."),
    ]
    assert t.candidate == {"model": "gpt-4o-mini", "agent": "todo-agent"}


@pytest.mark.parametrize(("fmt", "path"), [
    ("otel", OTEL / "genai_otlp.json"), ("otel", OTEL / "openinference_spans.json"),
    ("otel", OTEL / "smolagents_codeagent.json"),
    ("langsmith", DATA / "langsmith" / "run_tree.json"),
])
def test_streaming_and_whole_file_reads_agree(fmt: str, path: Path) -> None:
    whole = [t.model_dump() for t in traces(fmt, path, stream=False)]
    streamed = [t.model_dump() for t in traces(fmt, path, stream=True)]
    assert whole == streamed and whole


# -- LangSmith, Anthropic, inspect -------------------------------------------------------------
def test_langsmith_run_tree() -> None:
    (t,) = traces("langsmith", DATA / "langsmith" / "run_tree.json")
    assert steps(t) == [
        ("user", "Delete my account, username jo_42."),
        ("tool_call", "find_user", {"username": "jo_42"}),
        ("tool_result", "find_user", {"user_id": 913}),
        ("tool_call", "delete_user", {"user_id": 913}),
        ("tool_result", "delete_user", "PermissionError: permission denied"),
        ("assistant", "I could not delete the account: permission denied."),
    ]
    assert t.trace_id == "1ef4b2c6-3a9d-4e2f-9c1b-7d5e3f2a1b0c"
    assert t.candidate == {"model": "gpt-4.1-mini"}
    assert [e.metadata["source_span_id"] for e in t.events][1:3] == ["r-llm1", "r-tool1"]  # type: ignore[index]


def test_anthropic_exchanges_each_message_once() -> None:
    (t,) = traces("anthropic", DATA / "anthropic" / "exchanges.json")
    assert steps(t) == [
        ("user", "Move booking QX7 to Tuesday."),
        ("assistant", "Let me look up QX7."),  # the thinking block is left out
        ("tool_call", "get_booking", {"ref": "QX7"}),
        ("tool_result", "get_booking", {"ref": "QX7", "day": "Monday"}),
        ("assistant", "QX7 is on Monday. Shall I move it to Tuesday?"),
        ("user", "yes please"),
        ("tool_call", "move_booking", {"ref": "QX7", "day": "Tuesday"}),
        ("tool_result", "move_booking", "no seats on Tuesday"),
        ("assistant", "Tuesday is full, so QX7 stays on Monday."),
    ]
    assert t.events[7].failed
    assert t.events[2].metadata == {"source_record": 0, "source_message_id": "msg_01A"}
    assert t.candidate == {"model": "claude-sonnet-4-5"}
    assert len(t.metadata["system_prompts"]) == 1


def test_anthropic_conversations_jsonl() -> None:
    a, b = traces("anthropic", DATA / "anthropic" / "conversations.jsonl")
    assert a.trace_id == "conversations/1" and b.trace_id == "conv-2"
    assert [x[0] for x in steps(a)] == ["user", "assistant", "tool_call", "tool_result",
                                        "assistant"]
    assert steps(b) == [("user", "What time is it in Lima?"),
                        ("assistant", "It is 09:00 in Lima.")]


def test_inspect_json_log_one_trace_per_sample_and_epoch(tmp_path: Path) -> None:
    log = DATA / "inspect" / "eval_log.json"
    ts = traces("inspect", log)
    assert [t.trace_id for t in ts] == ["largest_file/1/1", "largest_file/1/2",
                                        "largest_file/b-2/1"]
    assert steps(ts[1])[2:4] == [("tool_call", "bash", {"cmd": "ls -S /srv | head -1"}),
                                 ("tool_result", "bash", "Command timed out before completing.")]
    assert ts[0].metadata["scores"] == {"match": "C"}
    assert ts[0].candidate == {"model": "openai/gpt-4o"}
    # the same log as a .eval zip (header.json + samples/*.json)
    doc = json.loads(log.read_text())
    zpath = tmp_path / "log.eval"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("header.json", json.dumps({k: v for k, v in doc.items() if k != "samples"}))
        for s in doc["samples"]:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    zipped = traces("inspect", zpath)
    assert sorted(t.model_dump_json() for t in zipped) == sorted(
        t.model_dump_json() for t in ts)
    assert detect(zpath) == "inspect"


# -- auto, CLI, writing ------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "fmt"), [
    (OTEL / "genai_otlp.json", "otel"), (OTEL / "openinference_spans.json", "otel"),
    (OTEL / "smolagents_codeagent.json", "otel"), (OTEL / "openllmetry_collector.jsonl", "otel"),
    (DATA / "langsmith" / "run_tree.json", "langsmith"),
    (DATA / "anthropic" / "exchanges.json", "anthropic"),
    (DATA / "anthropic" / "conversations.jsonl", "anthropic"),
    (DATA / "inspect" / "eval_log.json", "inspect"),
    (Path(__file__).resolve().parent.parent / "examples" / "data" / "tau-bench-airline"
     / "historical_trajectories" / "gpt-4o-airline.json", "tau-bench"),
])
def test_auto_recognises_every_format(path: Path, fmt: str) -> None:
    assert detect(path) == fmt


def test_auto_names_the_formats_it_knows(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"rows": [1, 2]}))
    result = CliRunner().invoke(app, ["import", "auto", str(odd), "-o",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2
    for name in ("otel", "anthropic", "langsmith", "inspect", "openai-chat", "tau-bench"):
        assert name in result.stderr
    assert str(odd) in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(("cmd", "path", "n"), [
    ("otel", OTEL / "genai_otlp.json", 2), ("langsmith", DATA / "langsmith" / "run_tree.json", 1),
    ("anthropic", DATA / "anthropic" / "exchanges.json", 1),
    ("inspect", DATA / "inspect" / "eval_log.json", 3), ("auto", OTEL / "genai_otlp.json", 2),
])
def test_cli_import_writes_traces_the_loader_reads(tmp_path: Path, cmd: str, path: Path,
                                                   n: int) -> None:
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["import", cmd, str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"imported {n} trace(s)" in result.stderr
    loaded = list(iter_traces(out))
    direct = traces(detect(path), path)
    assert [t.model_dump() for t in loaded] == [t.model_dump() for t in direct]


def test_long_trace_is_written_streamed_and_reads_back(tmp_path: Path) -> None:
    n = BUFFER_EVENTS + 5
    events = [{"kind": "user", "text": f"m{i}", "metadata": {"source_span_id": str(i)}}
              for i in range(n)]
    t = ImportedTrace({"trace_id": "long", "candidate": {}, "metadata": {}}, iter(events),
                      "mem")
    out = tmp_path / "long.jsonl"
    assert write_imported([t], out) == 1
    lines = out.read_text().splitlines()
    assert len(lines) == n + 1 and "events" not in json.loads(lines[0])
    (back,) = iter_traces(out)
    assert [e.text for e in back.events] == [f"m{i}" for i in range(n)]


# -- bad input: exit 2, one line naming file, line or span id, and field ------------------------
def _otlp(span: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}


_SPAN = {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
         "name": "chat", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}


# (the last field: whether the rest of the file still imports when the bad part is left out)
@pytest.mark.parametrize(("cmd", "name", "content", "expect", "rest"), [
    ("otel", "a.json", "{\"resourceSpans\": [", "a.json: malformed JSON", False),
    ("otel", "b.json", json.dumps(_otlp({**_SPAN, "attributes": [
        {"key": "n", "value": {"intValue": "many"}}]})),
     "b.json: span 00f067aa0ba902b7: field 'attributes[0].value': expected an integer", False),
    ("otel", "c.json", json.dumps(_otlp({k: v for k, v in _SPAN.items() if k != "spanId"})),
     "c.json: span #2: field 'spanId': the span has no id", False),
    ("otel", "d.json", json.dumps(_otlp({**_SPAN, "attributes": [
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
            [{"role": "robot", "parts": []}])}}]})),
     "d.json: span 00f067aa0ba902b7: field 'gen_ai.input.messages[0].role': unknown role",
     False),
    ("otel", "e.json", json.dumps(_otlp({**_SPAN, "startTimeUnixNano": "soon"})),
     "e.json: span 00f067aa0ba902b7: field 'startTimeUnixNano': expected a time", False),
    ("otel", "f.jsonl", json.dumps(_otlp(_SPAN)) + "\n{oops\n", "f.jsonl:2: malformed JSON", False),
    ("otel", "g.json", json.dumps([{"span_id": "x1", "name": "orphan"}]),
     "g.json: span x1: field 'traceId': the span has no trace id", False),
    ("otel", "h.json", json.dumps({"resourceSpans": []}), "h.json: no spans found", False),
    ("otel", "h2.json", json.dumps({"rows": []}), "h2.json: span #1: field 'spanId'", False),
    ("langsmith", "i.json", json.dumps({"id": "r1", "trace_id": "t", "run_type": 3}),
     "i.json: run r1: field 'run_type': expected a string", False),
    ("anthropic", "j.json", json.dumps([{"role": "user", "content": 7.5},
                                        {"role": "wizard", "content": "x"}]),
     "j.json: [1]: field 'role': unknown role", True),
    ("anthropic", "k.jsonl", json.dumps([{"role": "user", "content": "hi"}]) + "\n"
     + json.dumps({"request": {"messages": "nope"}, "response": None}) + "\n",
     "k.jsonl:2: request: field 'messages': expected a list of messages", True),
    ("inspect", "l.json", json.dumps({"eval": {"task": "t"}, "samples": [
        {"id": 1, "epoch": 1, "messages": {}}]}),
     "l.json: samples[0]: field 'messages': expected the sample's message list", False),
])
def test_bad_input_exits_2_naming_file_place_and_field(tmp_path: Path, cmd: str, name: str,
                                                       content: str, expect: str,
                                                       rest: bool) -> None:
    """--strict refuses the file, one line naming the file, the place and the field; the
    default leaves the bad part out and says so — exit 0 when the rest imports, exit 2 with
    one line naming the first problem when nothing is left."""
    path = tmp_path / name
    path.write_text(content)
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(app, ["import", cmd, str(path), "-o", str(out), "--strict"])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in result.output
    assert line.startswith(f"judge: error: {tmp_path / expect.split(': ', 1)[0]}")
    assert expect.split(": ", 1)[1] in line, line
    assert not out.exists()

    result = CliRunner().invoke(app, ["import", cmd, str(path), "-o", str(out)])
    place, _, problem = expect.split(": ", 1)[1].rpartition(": ")
    if rest:
        assert result.exit_code == 0, result.output
        assert problem in result.stderr and out.exists()
        return
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in result.output
    assert line.startswith(f"judge: error: {tmp_path / expect.split(': ', 1)[0]}")
    assert problem in line and (place in line or not place), line
    assert not out.exists()


def test_library_errors_are_input_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(_otlp({**_SPAN, "parentSpanId": 3.5})))
    with pytest.raises(InputError, match="parentSpanId"):
        traces("otel", path)


def test_a_json_file_without_an_eval_object_is_not_an_inspect_log(tmp_path: Path) -> None:
    """Another format given to `judge import inspect` is bad input naming the field, not
    "imported 0 traces" with exit 0."""
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"resourceSpans": 5}))
    with pytest.raises(InputError) as err:
        list(iter_format("inspect", path))
    assert err.value.field == "eval"
    result = CliRunner().invoke(app, ["import", "inspect", str(path), "-o",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and not (tmp_path / "o.jsonl").exists()
