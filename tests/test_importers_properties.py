"""Properties of the telemetry importers: no input makes one raise anything but InputError,
and reading a file streaming (ijson) or whole (json.loads) gives the same traces."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.errors import InputError
from judge.importers import detect, iter_format
from judge.importers.registry import run_import
from judge.importers.report import ImportLog

KEYS = ["resourceSpans", "scopeSpans", "spans", "children", "child_spans", "child_runs",
        "traceId", "spanId", "parentSpanId", "span_id", "trace_id", "parent_id", "id", "name",
        "attributes", "span_attributes", "startTimeUnixNano", "start_time", "end_time",
        "duration", "status", "status_code", "key", "value", "stringValue", "intValue",
        "arrayValue", "values", "kvlistValue", "openinference.span.kind",
        "gen_ai.operation.name", "gen_ai.input.messages", "gen_ai.output.messages",
        "llm.input_messages.0.message.role", "llm.output_messages.0.message.content",
        "gen_ai.tool.name", "tool.name", "input.value", "output.value", "role", "content",
        "parts", "type", "tool_calls", "function", "arguments", "messages", "request",
        "response", "samples", "eval", "run_type", "inputs", "outputs", "context",
        "tool_use_id", "is_error", "text", "input", "events", "error", "system", "epoch",
        # the newer shapes: Langfuse, LangSmith payloads, SWE-agent, the JS SDK, Responses,
        # Gemini, session logs, attachments
        "observations", "trace", "parentObservationId", "type", "post", "patch",
        "dotted_order", "history", "trajectory", "action", "observation", "thought",
        "spanContext", "startTime", "tool_call_ids", "choices", "message", "object",
        "output", "call_id", "contents", "function_call", "function_response",
        "attachments", "trajectory_format", "ai.operationId", "ai.prompt.messages",
        "ai.response.text", "gen_ai.output", "gen_ai.tool.args", "previous_response_id"]
WORDS = ["LLM", "TOOL", "AGENT", "chat", "execute_tool", "user", "assistant", "tool", "system",
         "tool_use", "tool_result", "tool_call", "text", "llm", "4bf92f3577b34da6a3ce929d0e0e4736",
         "00f067aa0ba902b7", "AAECAwQFBgc=", "2026-01-01T00:00:00Z", "PT1S", "{\"a\": 1}",
         "[1, 2]", "Error", "CodeAgent.run", "```py\nx = 1\n```", "", "0x1", "GENERATION",
         "TOOL", "function_call", "function_call_output", "server_tool_use",
         "web_search_tool_result", "chat.completion", "response", "session",
         "user.message", "agent.tool_use", "attachment://a", "```bash\nls\n```",
         "\ud800", "NaN"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(WORDS),
                    st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)),
    max_leaves=40)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _run(fmt: str, path: Path, **options: Any) -> list[Any]:
    return [t.materialize().model_dump() for t in iter_format(fmt, path, **options)]


def _lenient(fmt: str, path: Path) -> None:
    """The default (lenient) import: notes instead of errors, InputError only for what
    leaves nothing to import."""
    with contextlib.suppress(InputError), tempfile.TemporaryDirectory() as d:
        run_import(fmt, path, Path(d) / "o.jsonl", ImportLog(str(path), strict=False))


def _outcome(fmt: str, path: Path, **options: Any) -> Any:
    try:
        return ("ok", _run(fmt, path, **options))
    except InputError as exc:
        return ("error", type(exc).__name__)


@SETTINGS
@given(doc=json_values, suffix=st.sampled_from([".json", ".jsonl"]))
def test_no_input_raises_anything_but_input_error(doc: Any, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"t{suffix}"
        path.write_text(json.dumps(doc))
        for fmt in ("otel", "langsmith", "anthropic", "inspect", "langfuse", "openai-chat",
                    "swe-agent"):
            _outcome(fmt, path)
            _lenient(fmt, path)
        with contextlib.suppress(InputError):
            detect(path)


@SETTINGS
@given(doc=json_values)
def test_streaming_and_whole_agree_on_any_document(doc: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json"
        path.write_text(json.dumps(doc))
        for fmt in ("otel", "langsmith"):
            assert _outcome(fmt, path, stream=True) == _outcome(fmt, path, stream=False)


# -- span trees: realistic shapes, nested in any key order --------------------------------------
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@st.composite
def span_trees(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    n = draw(st.integers(0, 2**48))
    sid = f"{n:016x}"
    kind = draw(st.sampled_from(["LLM", "TOOL", "CHAIN", "AGENT"]))
    attrs: dict[str, Any] = {"openinference.span.kind": kind}
    if kind == "LLM":
        msgs = draw(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]),
                                       st.sampled_from(["yes", "no", "ok", "x1"])), max_size=4))
        for i, (role, text) in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = role
            attrs[f"llm.input_messages.{i}.message.content"] = text
        attrs["llm.output_messages.0.message.role"] = "assistant"
        attrs["llm.output_messages.0.message.content"] = draw(
            st.sampled_from(["done", "Code:\n```py\nx = 1\n```", "yes"]))
    elif kind == "TOOL":
        attrs["tool.name"] = draw(st.sampled_from(["search", "refund", "final_answer"]))
        attrs["input.value"] = json.dumps({"q": draw(st.integers(0, 3))})
        attrs["output.value"] = draw(st.sampled_from(["r1", "{\"ok\": true}"]))
    span: dict[str, Any] = {"span_id": sid, "span_name": draw(st.sampled_from(
        ["CodeAgent.run", "Step 1", "LiteLLMModel.__call__", "tool"])),
        "start_time": draw(st.integers(0, 50)) * 1_000_000_000 + 1_700_000_000_000_000_000,
        "span_attributes": attrs}
    if draw(st.booleans()):
        span["trace_id"] = TRACE
    if depth < 3:
        kids = draw(st.lists(span_trees(depth + 1), max_size=3))
        if kids:
            span["child_spans"] = kids
    keys = draw(st.permutations(list(span)))  # ids before or after the children
    return {k: span[k] for k in keys}


@SETTINGS
@given(trees=st.lists(span_trees(), min_size=1, max_size=3), wrap=st.booleans())
def test_streaming_and_whole_agree_on_span_trees(trees: list[dict[str, Any]],
                                                 wrap: bool) -> None:
    doc: Any = {"spans": trees, "trace_id": TRACE} if wrap else trees
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json"
        path.write_text(json.dumps(doc))
        whole = _outcome("otel", path, stream=False)
        assert whole == _outcome("otel", path, stream=True)
        if whole[0] == "ok":
            for trace in whole[1]:
                seqs = [e["seq"] for e in trace["events"]]
                assert seqs == list(range(1, len(seqs) + 1))
                assert all(e["metadata"]["source_trace_id"] == trace["trace_id"]
                           for e in trace["events"])


@pytest.mark.parametrize("doc", [{"resourceSpans": None, "observations": True},
                                 {"observations": 7}, {"trace": {"observations": "x"}},
                                 {"trace": True, "observations": None}])
def test_langfuse_observations_that_are_not_a_list_are_bad_input(doc: Any, tmp_path: Path
                                                                ) -> None:
    """Found by the derandomized Hypothesis run of the property above: `"observations":
    true` was iterated ('bool' object is not iterable, an internal error)."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    assert _outcome("langfuse", path)[0] in ("ok", "error")
    _lenient("langfuse", path)
