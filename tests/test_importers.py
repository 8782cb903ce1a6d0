"""Importers: OpenAI chat message lists and tau-bench trajectories become valid traces."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.importers import iter_openai_chat, iter_tau_bench, write_traces
from judge.trace import Trace, iter_traces
from judge.trace.model import EventKind

TAU_DIR = Path(__file__).resolve().parent.parent / "examples" / "data" / "tau-bench-airline"
TAU_BENCH = TAU_DIR / "historical_trajectories" / "gpt-4o-airline.json"
WIKI = TAU_DIR / "airline" / "wiki.md"

SYSTEM = "You are a support bot. Never refund twice."
CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Refund order-17 please."},
    {"role": "assistant", "content": "Looking it up.", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "get_order", "arguments": "{\"orderId\": \"order-17\"}"}},
        {"id": "c2", "type": "function",
         "function": {"name": "get_policy", "arguments": ""}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"orderId\": \"order-17\", \"paid\": 42}"},
    {"role": "tool", "tool_call_id": "c2", "content": "Refunds within 30 days."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c3", "type": "function",
         "function": {"name": "refund_order", "arguments": "{\"orderId\": \"order-17\"}"}}]},
    {"role": "tool", "tool_call_id": "c3", "content": "Error: payment processor timeout"},
    {"role": "assistant", "content": [{"type": "text", "text": "The refund "},
                                      {"type": "text", "text": "timed out."}]},
    {"role": "user", "content": "ok"},
]


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj))
    return path


def test_chat_list_maps_roles_calls_and_results(tmp_path: Path) -> None:
    (trace,) = iter_openai_chat(_write(tmp_path / "conv.json", CHAT), scenario="refund-once")
    kinds = [e.kind.value for e in trace.events]
    assert kinds == ["user", "assistant", "tool_call", "tool_call", "tool_result",
                     "tool_result", "tool_call", "tool_result", "assistant", "user"]
    ev = trace.events
    assert trace.trace_id == "conv/1" and trace.scenario == "refund-once"
    # text sent with the calls comes first and is marked
    assert ev[1].text == "Looking it up." and ev[1].metadata == {"with_tool_calls": True}
    assert ev[2].tool == "get_order" and ev[2].args == {"orderId": "order-17"}
    assert ev[2].call_id == "c1" and ev[3].args == {}
    assert ev[4].tool == "get_order" and ev[4].result == {"orderId": "order-17", "paid": 42}
    assert ev[5].tool == "get_policy" and ev[5].result == "Refunds within 30 days."
    assert ev[7].error == "Error: payment processor timeout" and ev[7].failed
    assert ev[8].text == "The refund timed out." and ev[8].metadata is None
    assert [e.seq for e in ev] == list(range(1, 11))
    assert [e.turn for e in ev] == [1] * 9 + [2]
    # the system prompt is kept out of the events: only its fingerprint is stored
    assert all(SYSTEM not in (e.text or "") for e in ev)
    assert trace.metadata["system_prompts"] == [
        {"sha256": hashlib.sha256(SYSTEM.encode()).hexdigest(), "chars": len(SYSTEM)}]


def test_chat_object_jsonl_and_list_of_objects(tmp_path: Path) -> None:
    obj = {"id": "run-7", "model": "gpt-4o-mini", "temperature": 0, "messages": CHAT[:2]}
    (t,) = iter_openai_chat(_write(tmp_path / "o.json", obj))
    assert t.trace_id == "run-7" and t.candidate == {"model": "gpt-4o-mini"}
    assert t.metadata["request"] == {"temperature": 0}

    lines = tmp_path / "many.jsonl"
    lines.write_text(json.dumps(CHAT[:2]) + "\n\n" + json.dumps({"messages": CHAT[1:3]}) + "\n")
    traces = list(iter_openai_chat(lines, prefix="nightly"))
    assert [t.trace_id for t in traces] == ["nightly/1", "nightly/2"]
    assert [e.kind.value for e in traces[1].events] == [
        "user", "assistant", "tool_call", "tool_call"]

    several = [{"messages": CHAT[:2]}, {"trace_id": "x/2", "messages": CHAT[1:2]}]
    traces = list(iter_openai_chat(_write(tmp_path / "several.json", several)))
    assert [t.trace_id for t in traces] == ["several/1", "x/2"]


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda m: m[2]["tool_calls"][0]["function"].__setitem__("arguments", "{oops"),
     "f.json: [2].tool_calls[0].function: field 'arguments': arguments are not valid JSON"),
    (lambda m: m[2]["tool_calls"][0]["function"].__setitem__("arguments", "[1, 2]"),
     "f.json: [2].tool_calls[0].function: field 'arguments'"),
    (lambda m: m[1].__setitem__("role", "robot"), "f.json: [1]: field 'role': unknown role"),
    (lambda m: m[3].update(tool_call_id="nope", name=None) or m.__setitem__(2, m[1]),
     "f.json: [3]: field 'tool_call_id'"),
    (lambda m: m[1].__setitem__("content", {"a": 1}), "f.json: [1].content"),
    (lambda m: m.__setitem__(4, "not a message"), "f.json: [4]: expected a chat message"),
])
def test_chat_bad_input_names_file_path_and_field(tmp_path: Path, mutate: Any,
                                                   where: str) -> None:
    msgs = json.loads(json.dumps(CHAT))
    mutate(msgs)
    path = _write(tmp_path / "f.json", msgs)
    with pytest.raises(InputError) as exc:
        list(iter_openai_chat(path))
    assert exc.value.message.startswith(str(tmp_path / where))


def test_chat_bad_jsonl_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CHAT) + "\n" + json.dumps({"msgs": []}) + "\n")
    with pytest.raises(InputError, match=r"c\.jsonl:2: field 'messages'"):
        list(iter_openai_chat(path))
    path.write_text(json.dumps(CHAT) + "\n{broken\n")
    with pytest.raises(InputError, match=r"c\.jsonl:2: malformed JSON"):
        list(iter_openai_chat(path))


def _tau_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(TAU_BENCH.read_text())
    return records


@pytest.fixture(scope="module")
def tau_import(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Trace]]:
    out = tmp_path_factory.mktemp("tau") / "airline.jsonl"
    result = CliRunner().invoke(app, ["import", "tau-bench", str(TAU_BENCH), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "imported 200 trace(s)" in result.stderr
    return out, list(iter_traces(out))


def test_all_200_tau_bench_records_import(tau_import: tuple[Path, list[Trace]]) -> None:
    out, traces = tau_import
    records = _tau_records()
    assert len(records) == 200 and len(traces) == 200
    assert len(out.read_text().splitlines()) == 200  # one trace per line
    policy_sha = hashlib.sha256(WIKI.read_bytes()).hexdigest()
    ids = set()
    for rec, trace in zip(records, traces, strict=True):
        assert trace.trace_id == f"tau-airline/{rec['task_id']}/{rec['trial']}"
        ids.add(trace.trace_id)
        assert trace.scenario == "tau-airline"
        assert trace.candidate == {"model": "gpt-4o", "agent": "tau-bench tool-calling agent"}
        md = trace.metadata
        assert md["reward"] == rec["reward"]
        # the task (a string) and the trial: 50 tasks x 4 trials (docs/formats.md)
        assert (md["task_id"], md["trial"]) == (str(rec["task_id"]), rec["trial"])
        assert md["task"]["instruction"] == rec["info"]["task"]["instruction"]
        assert md["task"]["user_id"] == rec["info"]["task"]["user_id"]
        assert md["task"]["actions"] == rec["info"]["task"]["actions"]
        assert md["task"]["outputs"] == rec["info"]["task"]["outputs"]
        assert md["policy_sha256"] == policy_sha
        # the policy is kept out of the events
        assert not any("Airline Agent Policy" in (e.text or "") for e in trace.events)
        calls = [tc for m in rec["traj"] for tc in (m.get("tool_calls") or [])]
        ev_calls = [e for e in trace.events if e.kind is EventKind.TOOL_CALL]
        assert [e.tool for e in ev_calls] == [c["function"]["name"] for c in calls]
        assert [e.args for e in ev_calls] == [json.loads(c["function"]["arguments"])
                                             for c in calls]
        tools = [m for m in rec["traj"] if m["role"] == "tool"]
        results = [e for e in trace.events if e.kind is EventKind.TOOL_RESULT]
        assert len(results) == len(tools)
        assert [e.failed for e in results] == [m["content"].startswith("Error") for m in tools]
        users = [m["content"] for m in rec["traj"] if m["role"] == "user"]
        assert [e.text for e in trace.events if e.kind is EventKind.USER] == users
    assert len(ids) == 200


def test_tau_bench_bad_record_names_index_and_field(tmp_path: Path) -> None:
    records = _tau_records()[:3]
    del records[1]["trial"]
    path = _write(tmp_path / "t.json", records)
    with pytest.raises(InputError, match=r"t\.json: \[1\]: field 'trial': expected an integer"):
        list(iter_tau_bench(path))
    records = _tau_records()[:3]
    i = next(i for i, m in enumerate(records[2]["traj"]) if m.get("tool_calls"))
    records[2]["traj"][i]["tool_calls"] = "nope"
    path = _write(tmp_path / "t.json", records)
    with pytest.raises(InputError, match=rf"t\.json: \[2\]\.traj\[{i}\]\.tool_calls: expected"):
        list(iter_tau_bench(path))
    _write(path, {"not": "a list"})
    with pytest.raises(InputError, match="expected a JSON list"):
        list(iter_tau_bench(path))


def test_cli_bad_input_is_one_line_exit_2_and_no_partial_output(tmp_path: Path) -> None:
    records = _tau_records()[:5]
    records[4]["reward"] = "high"
    src = _write(tmp_path / "t.json", records)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["import", "tau-bench", str(src), "-o", str(out)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "[4]: field 'reward'" in lines[0]
    assert "Traceback" not in result.output
    assert not out.exists() and list(tmp_path.iterdir()) == [src]

    result = CliRunner().invoke(app, ["import", "openai-chat", str(tmp_path / "missing.json"),
                                      "-o", str(out)])
    assert result.exit_code == 2 and "missing.json: no such file" in result.stderr


def test_openai_chat_cli_writes_loadable_traces(tmp_path: Path) -> None:
    src = _write(tmp_path / "conv.json", CHAT)
    out = tmp_path / "conv-traces.jsonl"
    result = CliRunner().invoke(app, ["import", "openai-chat", str(src), "-o", str(out),
                                      "--scenario", "refund-once"])
    assert result.exit_code == 0, result.output
    (trace,) = iter_traces(out)
    assert trace.scenario == "refund-once" and len(trace.events) == 10


def test_write_traces_wants_jsonl(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"a \.jsonl trace file"):
        write_traces(iter([]), tmp_path / "out.json")
