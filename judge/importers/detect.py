"""`judge import auto`: recognise a trajectory file's format from its first records.

Only the start of the file is read (the first 20,000 JSON events, or the first line of a
`.jsonl` file), so recognising a large export costs nothing. The rules, first match wins:

- a zip (`.eval`), or an object with `samples` and `eval` → **inspect**;
- `resourceSpans` → **otel** (OTLP/JSON);
- a run (`run_type`, `child_runs` or `parent_run_id`) → **langsmith**;
- a span (`spanId`/`span_id`/`context.span_id`, `traceId`, `parentSpanId`, `span_name`,
  `openinference.span.kind`, `gen_ai.*` attributes), or `{"spans": [...]}` → **otel**;
- tau-bench records (`task_id`, `trial`, `traj`) → **tau-bench**;
- request/response records, a request with a top-level `system`, or messages with
  `tool_use`/`tool_result` blocks → **anthropic**;
- other chat message lists (OpenAI roles, `tool_calls`) → **openai-chat**.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import ijson

from judge.errors import InputError

FORMATS = {
    "otel": "OpenTelemetry OTLP/JSON or span lists (GenAI conventions, OpenInference)",
    "anthropic": "Anthropic Messages logs",
    "langsmith": "LangSmith run trees",
    "inspect": "inspect_ai eval logs (.json, .eval)",
    "openai-chat": "OpenAI chat message lists",
    "tau-bench": "tau-bench historical trajectories",
}
_SPAN_KEYS = frozenset({"spanId", "span_id", "traceId", "parentSpanId", "parent_span_id",
                        "span_name", "spanID", "traceID", "startTimeUnixNano"})
_RUN_KEYS = frozenset({"run_type", "child_runs", "parent_run_id"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "server_tool_use"})
_LIMIT = 20_000


def _peek_json(path: Path) -> Any:
    """The start of a JSON document, built from its first events (open containers closed)."""
    root: list[Any] = []
    stack: list[Any] = [root]
    keys: list[str | None] = [None]
    with path.open("rb") as fh:
        try:
            for n, (ev, value) in enumerate(ijson.basic_parse(fh, use_float=True)):
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
        except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError) as exc:
            if not root:
                raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:100]})",
                                 file=str(path)) from None
    return root[0] if root else None


def _peek_jsonl(path: Path) -> Any:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                try:
                    return json.loads(raw)
                except (ValueError, RecursionError):
                    raise InputError("malformed JSON", file=str(path), line=lineno) from None
    return None


def _is_span(d: dict[str, Any]) -> bool:
    if d.keys() & _SPAN_KEYS:
        return True
    ctx = d.get("context")
    if isinstance(ctx, dict) and ("span_id" in ctx or "spanId" in ctx):
        return True
    attrs = d.get("attributes", d.get("span_attributes"))
    if isinstance(attrs, dict):
        return any(str(k).startswith(("openinference.", "gen_ai.", "llm.")) or
                   k in ("openinference", "gen_ai", "llm") for k in attrs)
    return False


def _messages_format(msgs: list[Any], top: dict[str, Any] | None = None) -> str:
    if top is not None and ("system" in top and not isinstance(top.get("system"), bool)):
        return "anthropic"
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


def classify(doc: Any) -> str | None:
    """The format of a (start of a) document, or None."""
    if isinstance(doc, list):
        first = next((x for x in doc if x is not None), None)
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
    if keys & _RUN_KEYS:
        return "langsmith"
    if _is_span(doc):
        return "otel"
    for key in ("spans", "runs", "data"):
        if isinstance(doc.get(key), list) and doc[key]:
            inner = classify(doc[key])
            if inner in ("otel", "langsmith"):
                return inner
    if "request" in keys and ("response" in keys or "error" in keys):
        return "anthropic"
    if isinstance(doc.get("messages"), list):
        return _messages_format(doc["messages"], doc)
    return None


def detect(path: str | Path) -> str:
    """The format of a trajectory file; InputError (naming the known formats) if unknown."""
    p = Path(path)
    file = str(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    if p.suffix == ".eval" or zipfile.is_zipfile(p):
        return "inspect"
    doc = _peek_jsonl(p) if p.suffix == ".jsonl" else _peek_json(p)
    found = classify(doc)
    if found is None:
        known = "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
        raise InputError(f"cannot tell the trajectory format; known formats: {known}. "
                         "Name one: judge import FORMAT FILE", file=file)
    return found
