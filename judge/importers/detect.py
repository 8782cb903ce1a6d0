"""`judge import auto`: recognise a trajectory file's format from its first records.

Only the start of the file is read (the first 20,000 JSON events, or the first lines of a
`.jsonl` file; a gzip file through gzip), so recognising a large export costs nothing. The
rules, first match wins:

- a zip (`.eval`), or an object with `samples` and `eval` → **inspect**;
- `resourceSpans` → **otel** (OTLP/JSON);
- `{"post": [...], "patch": [...]}` (an SDK ingest payload), or a run (`run_type`,
  `child_runs`, `parent_run_id`) → **langsmith**;
- `{"trace", "observations"}`, or a trace with its `observations` → **langfuse**;
- a managed-agent session log (`[method, payload]` lines of `client.beta.sessions`, or
  `session` / `user.message` / `agent.*` events) → **anthropic**;
- `history` or `trajectory` (SWE-agent `.traj`), or a mini-swe-agent trajectory →
  **swe-agent**;
- a span (`spanId`/`span_id`/`context.span_id`/`spanContext`, `traceId`, `parentSpanId`,
  `span_name`, `openinference.span.kind`, `gen_ai.*` / `ai.*` attributes), `{"spans": [...]}`,
  or an object of span lists → **otel**;
- tau-bench records (`task_id`, `trial`, `traj`) → **tau-bench**;
- request/response records: a `chat.completion` / Responses API response or a request with
  `input` → **openai-chat**, else → **anthropic**; a `chat.completion` or `response` object
  alone → **openai-chat**;
- a request with a top-level `system`, or messages with `tool_use`/`tool_result` blocks →
  **anthropic**; other chat message lists (OpenAI roles, `tool_calls`) → **openai-chat**.

`mismatch(fmt, path)` says, for an explicit format that could not read a file, what the
file looks like instead.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers import jsonio

FORMATS = {
    "otel": "OpenTelemetry OTLP/JSON or span lists (GenAI conventions, OpenInference, "
            "Vercel AI SDK, any-agent)",
    "anthropic": "Anthropic Messages logs and managed-agent session logs",
    "langsmith": "LangSmith run trees and SDK ingest payloads",
    "langfuse": "Langfuse trace exports and API trace JSON",
    "inspect": "inspect_ai eval logs (.json, .eval)",
    "openai-chat": "OpenAI chat message lists, request/response logs, completion and "
                   "response objects",
    "swe-agent": "SWE-agent .traj files and mini-swe-agent trajectories",
    "tau-bench": "tau-bench historical trajectories",
}
_SPAN_KEYS = frozenset({"spanId", "span_id", "traceId", "parentSpanId", "parent_span_id",
                        "span_name", "spanID", "traceID", "startTimeUnixNano", "spanContext"})
_RUN_KEYS = frozenset({"run_type", "child_runs", "parent_run_id"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "server_tool_use",
                               "redacted_thinking", "mcp_tool_use"})
_LIMIT = 20_000


def _peek_json(path: Path) -> tuple[Any, InputError | None]:
    """The start of a JSON document, built from its first events (open containers closed),
    and the error that stopped the reading early, if one did."""
    root: list[Any] = []
    stack: list[Any] = [root]
    keys: list[str | None] = [None]
    file = str(path)
    try:
        for n, (ev, value) in enumerate(jsonio.events(lambda: jsonio.open_input(path), file)):
            if n >= _LIMIT:
                break
            if ev == "map_key":
                keys[-1] = value
                continue
            if ev in ("end_map", "end_array"):
                stack.pop()
                keys.pop()
                continue
            node: Any = {} if ev == "start_map" else [] if ev == "start_array" else value
            top = stack[-1]
            if isinstance(top, list):
                top.append(node)
            else:
                top[keys[-1]] = node
            if ev in ("start_map", "start_array"):
                stack.append(node)
                keys.append(None)
    except InputError as exc:
        if not root:
            raise
        return root[0], exc
    return (root[0] if root else None), None


def _peek_jsonl(path: Path) -> list[Any]:
    out: list[Any] = []
    for lineno, raw in jsonio.iter_lines(path):
        out.append(jsonio.loads(raw, str(path), lineno))
        if len(out) >= 3:
            break
    return out


def _is_span(d: dict[str, Any]) -> bool:
    if d.keys() & _SPAN_KEYS:
        return True
    ctx = d.get("context")
    if isinstance(ctx, dict) and ("span_id" in ctx or "spanId" in ctx):
        return True
    attrs = d.get("attributes", d.get("span_attributes"))
    if isinstance(attrs, dict):
        return any(str(k).startswith(("openinference.", "gen_ai.", "llm.", "ai.")) or
                   k in ("openinference", "gen_ai", "llm") for k in attrs)
    return False


def _messages_format(msgs: list[Any], top: dict[str, Any] | None = None) -> str:
    if top is not None and ("system" in top and not isinstance(top.get("system"), bool)):
        return "anthropic"
    from judge.importers.swe_agent import is_mini_swe_agent
    if is_mini_swe_agent(top if top is not None else msgs):
        return "swe-agent"
    for m in msgs:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("tool", "system", "developer", "function") or "tool_calls" in m:
            return "openai-chat"
        content = m.get("content")
        if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content):
            return "anthropic"
    return "openai-chat"


def exchange_format(rec: dict[str, Any]) -> str:
    from judge.importers.openai_logs import is_completion, is_response
    req, resp = rec.get("request"), rec.get("response")
    if is_completion(resp) or is_response(resp) or (isinstance(req, dict) and "input" in req
                                                    and "messages" not in req):
        return "openai-chat"
    return "anthropic"


def classify(doc: Any) -> str | None:
    """The format of a (start of a) document, or None."""
    from judge.importers.anthropic_sessions import is_session_log
    from judge.importers.langfuse import is_langfuse
    from judge.importers.openai_logs import is_completion, is_response
    from judge.importers.swe_agent import is_mini_swe_agent, is_swe_agent
    if is_session_log([doc]):
        return "anthropic"
    if isinstance(doc, list):
        first = next((x for x in doc if x is not None), None)
        if isinstance(first, dict):
            from judge.importers.spanfile import unflat_span
            first = unflat_span(first)
        if isinstance(first, dict) and "role" in first:
            return _messages_format(doc)
        if isinstance(first, dict) and {"task_id", "trial", "traj"} <= first.keys():
            return "tau-bench"
        return classify(first) if isinstance(first, dict) else None
    if not isinstance(doc, dict):
        return None
    keys = doc.keys()
    if ("samples" in keys and ("eval" in keys or "version" in keys)) or \
            {"eval", "status"} <= keys:
        return "inspect"
    if keys & {"resourceSpans", "resource_spans"}:
        return "otel"
    if keys and keys <= {"post", "patch"}:
        return "langsmith"
    if is_langfuse(doc):
        return "langfuse"
    if keys & _RUN_KEYS:
        return "langsmith"
    if is_swe_agent(doc) or is_mini_swe_agent(doc):
        return "swe-agent"
    if _is_span(doc):
        return "otel"
    for key in ("spans", "data", "runs"):
        if isinstance(doc.get(key), list) and doc[key]:
            inner = classify(doc[key])
            if inner in ("otel", "langsmith", "langfuse"):
                return inner
    if "request" in keys and ("response" in keys or "error" in keys):
        return exchange_format(doc)
    if is_completion(doc) or is_response(doc):
        return "openai-chat"
    if isinstance(doc.get("messages"), list):
        return _messages_format(doc["messages"], doc)
    from judge.importers.spanfile import columns_to_records, unflat_span
    records = columns_to_records(doc)
    if records is not doc:
        return classify(records)
    if _is_span(unflat_span(doc)):
        return "otel"
    lists = [v for v in doc.values() if isinstance(v, list) and v]
    if lists and all(isinstance(v[0], dict) and _is_span(v[0]) for v in lists):
        return "otel"  # spans grouped under keys of the exporter's choosing
    return None


def sniff(path: str | Path) -> str | None:
    """The format of a file, or None (InputError when it is no readable JSON at all)."""
    p = Path(path)
    jsonio.check_file(p)
    if p.suffix == ".eval" or zipfile.is_zipfile(p):
        return "inspect"
    if jsonio.is_jsonl(p):
        lines = _peek_jsonl(p)
        return next((f for f in (classify(d) for d in lines) if f is not None), None) \
            if lines else None
    doc, error = _peek_json(p)
    found = classify(doc)
    if found is None and error is not None:
        raise error  # what stopped the reading is what is wrong with the file
    return found


def detect(path: str | Path) -> str:
    """The format of a trajectory file; InputError (naming the known formats) if unknown."""
    file = str(path)
    found = sniff(path)
    if found is None:
        known = "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
        raise InputError(f"cannot tell the trajectory format; known formats: {known}. "
                         "Name one: judge import FORMAT FILE", file=file)
    return found


def mismatch(fmt: str, path: str | Path) -> str | None:
    """For an explicit format that could not read a file: what the file looks like, when
    that is another format (None: it looks like `fmt`, or like nothing judge knows)."""
    try:
        found = sniff(path)
    except (InputError, OSError, ValueError, RecursionError):
        return None
    same = {fmt, "openai-chat"} if fmt == "swe-agent" else {fmt}
    if found is None or found in same:
        return None
    return found
