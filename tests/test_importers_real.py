"""Real exports, written by the tools that made them (tests/data/importers/real; where each
comes from, and its license: tests/data/importers/SOURCES.md), through `judge import auto`
as a user runs it: every one imports, with every tool call and result the source holds, and
each in the shape its format gives it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.trace import Trace, iter_traces

REAL = Path(__file__).resolve().parent / "data" / "importers" / "real"

#: (file, format recognised, traces, events by kind). The tool calls and results are the
#: source's own count (SOURCES.md says how each was counted).
EXPORTS: list[tuple[str, str, int, dict[str, int]]] = [
    ("anthropic/anthropic_code_execution_tool.json", "anthropic", 2,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 2}),
    ("anthropic/anthropic_managed_custom_tools.jsonl", "anthropic", 1,
     {"assistant": 1, "tool_call": 1, "tool_result": 1, "user": 1}),
    ("anthropic/anthropic_managed_mcp_tools_reject.jsonl", "anthropic", 1,
     {"assistant": 3, "tool_call": 2, "tool_result": 2, "user": 1}),
    ("anthropic/anthropic_parallel_tool_calls.json", "anthropic", 1,
     {"assistant": 2, "tool_call": 4, "tool_result": 4, "user": 1}),
    ("anthropic/anthropic_web_search_tool.json", "anthropic", 1,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 2}),
    ("inspect/log_formats.eval", "inspect", 1, {"assistant": 1, "user": 1}),
    ("inspect/log_images.json", "inspect", 1, {"assistant": 1, "user": 1}),
    ("inspect/log_message_deduplication.eval", "inspect", 1,
     {"assistant": 6, "tool_call": 5, "tool_result": 5, "user": 1}),
    ("inspect/log_tool_call_error.json", "inspect", 1, {"tool_result": 11}),
    ("langfuse/claude-agent-2025-12-22.trace.json", "langfuse", 1,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 2}),
    ("langfuse/google-adk-2025-08-28.trace.json", "langfuse", 1,
     {"assistant": 1, "tool_call": 1, "tool_result": 1, "user": 1}),
    ("langfuse/koog-2025-08-26.trace.json", "langfuse", 1,
     {"assistant": 1, "tool_call": 2, "tool_result": 2, "user": 1}),
    ("langfuse/vercel-aisdk-2025-11-17.trace.json", "langfuse", 1,
     {"tool_call": 1, "tool_result": 1, "user": 1}),
    ("langsmith/langsmith_js_wrap_openai_default.json", "langsmith", 1,
     {"assistant": 1, "user": 1}),
    ("langsmith/langsmith_py_wrap_openai_.json", "langsmith", 1, {"assistant": 1, "user": 1}),
    ("openai/openai_image_url_tool_response.json", "openai-chat", 1,
     {"assistant": 1, "tool_call": 1, "tool_result": 1, "user": 2}),
    ("openai/openai_multiple_agent_tool_calls.json", "openai-chat", 1,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 2}),
    ("openai/responses_builtin_web_search.json", "openai-chat", 1,
     {"assistant": 1, "tool_call": 6, "tool_result": 6, "user": 1}),
    ("openai/responses_tool_call_continuation.json", "openai-chat", 1,
     {"assistant": 1, "tool_call": 1, "tool_result": 1, "user": 1}),
    ("otel/ai-generateText-doGenerate.json", "otel", 2, {"assistant": 3, "user": 3}),
    ("otel/ai-streamText.json", "otel", 1, {"assistant": 1, "user": 1}),
    ("otel/any-agent_LANGCHAIN_trace.json", "otel", 1,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 1}),
    ("otel/any-agent_OPENAI_trace.json", "otel", 1,
     {"assistant": 1, "tool_call": 2, "tool_result": 2, "user": 1}),
    ("otel/spans-by-operation.json", "otel", 8, {"assistant": 10, "user": 10}),
    ("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj", "swe-agent", 1,
     {"assistant": 4, "tool_call": 4, "tool_result": 4, "user": 1}),
    ("swe-agent/function_calling_simple.traj", "swe-agent", 1,
     {"assistant": 5, "tool_call": 5, "tool_result": 5, "user": 1}),
    ("swe-agent/github_issue.traj.json", "swe-agent", 1,
     {"assistant": 10, "tool_call": 10, "tool_result": 10, "user": 1}),
    ("swe-agent/local.traj.json", "swe-agent", 1,
     {"assistant": 2, "tool_call": 2, "tool_result": 2, "user": 1}),
]


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def imported(tmp_path: Path, name: str, *options: str) -> list[Trace]:
    out = tmp_path / "out.jsonl"
    code, _, err = run("import", "auto", REAL / name, "-o", out, *options)
    assert code == 0, err
    return list(iter_traces(out))


def kinds(traces: list[Trace]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in traces:
        for e in t.events:
            out[e.kind.value] = out.get(e.kind.value, 0) + 1
    return dict(sorted(out.items()))


def test_every_real_export_is_listed() -> None:
    files = {str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file()
             and p.suffix != ".py"}
    listed = {name for name, *_ in EXPORTS} | {
        "inspect/2025-05-12T20-28-13-04-00_no-samples.json"}
    assert files == listed


@pytest.mark.parametrize(("name", "fmt", "n", "expect"), EXPORTS,
                         ids=[name for name, *_ in EXPORTS])
def test_every_real_export_imports_with_all_it_holds(tmp_path: Path, name: str, fmt: str,
                                                     n: int, expect: dict[str, int]) -> None:
    out = tmp_path / "out.jsonl"
    report = tmp_path / "report.json"
    code, _, err = run("import", "auto", REAL / name, "-o", out, "--report", report)
    assert code == 0, err
    assert "Traceback" not in err and f"(read as {fmt})" in err
    traces = list(iter_traces(out))  # what `judge check` reads
    assert len(traces) == n and kinds(traces) == expect
    doc = json.loads(report.read_text())
    assert doc["format"] == fmt and doc["traces"] == n and doc["events"] == expect
    # the explicit format reads it the same
    code, _, err = run("import", fmt, REAL / name, "-o", tmp_path / "again.jsonl")
    assert code == 0, err
    assert kinds(list(iter_traces(tmp_path / "again.jsonl"))) == expect


def test_a_log_without_samples_is_nothing_to_import(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    code, _, err = run("import", "auto", REAL / "inspect" /
                       "2025-05-12T20-28-13-04-00_no-samples.json", "-o", out)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "nothing to import: the log has no samples" in err and not out.exists()


GUESS = """\
id: guess-number
goal: Guess the number.
ledger:
  - {turn: 1, op: set, key: guess, class: goal, persistence: task, sensitivity: normal,
     source: user, value: guess the number}
rules:
  budgets:
    max_identical_calls: 2
"""


def test_a_loop_keeps_every_call_and_the_budget_sees_it(tmp_path: Path) -> None:
    """Five identical `bash {"cmd": "ls"}` calls are five calls (and five results): the
    identical-call budget catches the loop in the imported trace."""
    (t,) = imported(tmp_path, "inspect/log_message_deduplication.eval")
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    results = [e for e in t.events if e.kind.value == "tool_result"]
    assert [c.args for c in calls] == [{"cmd": "ls"}] * 5
    assert len({c.call_id for c in calls}) == 5
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert t.metadata["task_id"] == "0" and t.metadata["trial"] == 1
    scenario = tmp_path / "guess"
    scenario.mkdir()
    (scenario / "scenario.yaml").write_text(GUESS)
    code, out, err = run("check", scenario, tmp_path / "out.jsonl", "--format", "json")
    assert "repeated" in out and code in (0, 1), err


def test_every_tool_error_is_its_own_result(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "inspect/log_tool_call_error.json")
    results = [e for e in t.events if e.kind.value == "tool_result"]
    assert len(results) == 11 and all(r.error for r in results)
    assert [r.call_id for r in results] == [f"bash_{i}" for i in range(1, 12)]


def test_server_side_tools_in_order_with_their_results(tmp_path: Path) -> None:
    """web_search: the call, its result, then the answer made from it — not the answer
    first; the search results' encrypted blobs are shown by size."""
    (t,) = imported(tmp_path, "anthropic/anthropic_web_search_tool.json")
    seq = [(e.kind.value, e.tool) for e in t.events]
    assert seq == [("user", None), ("tool_call", "web_search"), ("tool_result", "web_search"),
                   ("assistant", None)] * 2
    call, result = t.events[1], t.events[2]
    assert call.call_id == result.call_id and call.args == {
        "query": "San Francisco weather today"}
    assert isinstance(result.result, list) and result.result[0]["title"]
    assert result.result[0]["encrypted_content"].startswith("[encrypted_content: ")


def test_two_conversations_in_one_log_are_two_traces(tmp_path: Path) -> None:
    traces = imported(tmp_path, "anthropic/anthropic_code_execution_tool.json")
    assert [t.trace_id for t in traces] == [
        "anthropic_code_execution_tool/conversation-1",
        "anthropic_code_execution_tool/conversation-2"]
    assert [t.events[0].text for t in traces] == ["How much is 3 * 12390?",
                                                  "How about 4 * 12390?"]


def test_a_managed_agent_session_log(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "anthropic/anthropic_managed_mcp_tools_reject.jsonl")
    assert t.trace_id == "sesn_01KW5vhbxfVqMHgLH2dWKbJG"
    assert t.candidate == {"agent": "Exa assistant", "model": "claude-opus-4-8"}
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    results = [e for e in t.events if e.kind.value == "tool_result"]
    assert [c.tool for c in calls] == ["web_search_exa", "web_fetch"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert results[0].error and "rejected" in results[0].error  # the denied MCP call
    assert calls[0].metadata["mcp_server_name"] == "exa"  # type: ignore[index]
    assert len(t.metadata["system_prompts"]) == 1


def test_langsmith_ingest_payload_patches_merge_onto_posts(tmp_path: Path) -> None:
    """The JS SDK's patch names no run id: its dotted order does."""
    (t,) = imported(tmp_path, "langsmith/langsmith_js_wrap_openai_default.json")
    assert [(e.kind.value, e.text) for e in t.events] == [
        ("user", "howdy"), ("assistant", "Howdy! How can I assist you today?")]


def test_any_agent_integer_ids_and_gen_ai_tool_attributes(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "otel/any-agent_OPENAI_trace.json")
    assert len(t.trace_id) == 32 and int(t.trace_id, 16) > 2**64  # a 128-bit integer id
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    assert [(c.tool, c.args) for c in calls] == [
        ("get_current_time", {"timezone": "America/New_York"}),
        ("write_file", {"text": "2025"})]
    results = [e for e in t.events if e.kind.value == "tool_result"]
    assert results[0].result["timezone"] == "America/New_York"  # type: ignore[index]


def test_vercel_spans_by_span_context_and_grouped_by_operation(tmp_path: Path) -> None:
    traces = imported(tmp_path, "otel/spans-by-operation.json")
    assert all(e.metadata and e.metadata["source_span_id"] for t in traces for e in t.events)
    chat = next(t for t in traces if t.trace_id == "edff2fc5854be6170e8cccccec0c82cf")
    assert [(e.kind.value, e.text) for e in chat.events] == [
        ("user", "What is 2 + 2?"), ("assistant", "2 + 2 equals 4."),
        ("user", "And what is 3 + 3?"), ("assistant", "3 + 3 equals 6.")]


def test_a_tool_that_ran_before_the_model_span_ended_is_one_call(tmp_path: Path) -> None:
    """Langfuse (Claude agent SDK): a TOOL observation starts before the GENERATION that
    asked for it has ended: one call, not the execution's and the model's."""
    (t,) = imported(tmp_path, "langfuse/claude-agent-2025-12-22.trace.json")
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    assert sorted(c.args["city"] for c in calls) == ["Berlin", "New York"]


def test_swe_agent_results_answer_their_calls(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "swe-agent/function_calling_simple.traj")
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    results = [e for e in t.events if e.kind.value == "tool_result"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert calls[0].tool == "find_file" and calls[0].args == {"file_name": "missing_colon.py"}


def test_mini_swe_agent_actions_in_text_are_tool_calls(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "swe-agent/local.traj.json")
    calls = [e for e in t.events if e.kind.value == "tool_call"]
    assert [(c.tool, c.args) for c in calls] == [
        ("bash", {"command": "echo 'hello world'"}),
        ("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})]
    result = next(e for e in t.events if e.kind.value == "tool_result")
    assert "hello world" in str(result.result) and result.metadata["action_from_text"]  # type: ignore[index]
    # --actions none: the messages as they are
    none = imported(tmp_path, "swe-agent/local.traj.json", "--actions", "none")
    assert kinds(none) == {"assistant": 2, "user": 3}


def test_an_image_part_is_a_placeholder_not_a_refusal(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "openai/openai_image_url_tool_response.json")
    assert any("[image]" in (e.text or "") for e in t.events)


def test_a_responses_continuation_is_one_conversation(tmp_path: Path) -> None:
    (t,) = imported(tmp_path, "openai/responses_tool_call_continuation.json")
    result = next(e for e in t.events if e.kind.value == "tool_result")
    assert result.tool == "get_conversation_code" and result.result == "TOOL-PAI-5222"


@pytest.mark.parametrize(("fmt", "name", "looks"), [
    ("langsmith", "otel/any-agent_OPENAI_trace.json", "otel"),
    ("inspect", "langfuse/koog-2025-08-26.trace.json", "langfuse"),
    ("otel", "swe-agent/function_calling_simple.traj", "swe-agent"),
    ("anthropic", "inspect/log_images.json", "inspect"),
])
def test_naming_the_wrong_format_says_what_the_file_looks_like(tmp_path: Path, fmt: str,
                                                               name: str, looks: str) -> None:
    out = tmp_path / "out.jsonl"
    code, _, err = run("import", fmt, REAL / name, "-o", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"not {'an' if fmt[0] in 'aeiou' else 'a'} {fmt} file: it looks like {looks}" \
        in err and f"judge import {looks}" in err
    assert not out.exists()


def _source_tool_counts(doc: Any) -> tuple[int, int]:
    """(tool calls, tool results) an inspect log's samples hold, counted from the source."""
    calls = results = 0
    for sample in doc["samples"]:
        for m in sample["messages"]:
            calls += len(m.get("tool_calls") or [])
            results += m["role"] == "tool"
    return calls, results


def test_inspect_counts_match_the_source(tmp_path: Path) -> None:
    for name in ("inspect/log_tool_call_error.json", "inspect/log_images.json"):
        doc = json.loads((REAL / name).read_text())
        traces = imported(tmp_path, name)
        k = kinds(traces)
        assert (k.get("tool_call", 0), k.get("tool_result", 0)) == _source_tool_counts(doc)
