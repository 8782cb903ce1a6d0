"""Import LangSmith run trees (exported runs) as traces.

A run has `id`, `trace_id`, `parent_run_id`, `name`, `run_type` (llm / tool / chain /
retriever / prompt / parser ...), `inputs`, `outputs`, `error`, `start_time`, `end_time` and,
in a tree, `child_runs`. Accepted files: one run tree, a list of runs (trees, or flat with
parent ids), an object with `runs`, or JSONL with one run (tree) a line.

- `llm` runs are model calls: inputs `messages` (OpenAI dicts or LangChain messages, as one
  list or a list of lists) or `prompts`; outputs `generations` (LangChain, each with a
  `message`), `choices` (OpenAI) or `output`/`message`.
- `tool` runs are tool executions: the run name is the tool, `inputs` its arguments (a
  JSON `input` string is decoded), `outputs.output` its result (a serialized ToolMessage's
  content), `error` its error; the call id comes from the ToolMessage.
- other runs give the root's input (the task) and nothing else.

A trace is one `trace_id` (or the root run's id); events keep the run id as
`metadata.source_span_id` (see `judge.importers.spans`).

The SDK's ingest payloads (`{"post": [runs], "patch": [runs]}`, what `langsmith` sends to
`/runs/batch`, and what its tests record) are merged first: each patch (end time, outputs,
error) onto the posted run with its id — a patch that names no id is matched by its
`dotted_order`, whose last part is the run's id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError, decode_json, parse_messages
from judge.importers.otel import Problems, _time, _unwrap_args, norm_id, records
from judge.importers.report import ImportLog
from judge.importers.spanfile import RawSpan, ids_of, iter_raw
from judge.importers.spans import Kind, SpanRecord, ToolUse, spans_to_traces

_KINDS: dict[str, Kind] = {"llm": "llm", "chat_model": "llm", "tool": "tool",
                           "chain": "chain", "agent": "agent"}


def _messages(value: Any, fld: str, default_role: str) -> list[Msg]:
    if value is None:
        return []
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        value = value[0]  # LangChain batches: one list per prompt; a trace has one
    if isinstance(value, str | dict):
        value = [value]
    if not isinstance(value, list):
        raise ShapeError("expected a list of messages", fld)
    out: list[Msg] = []
    for i, m in enumerate(value):
        if isinstance(m, str):
            out.append(Msg(default_role, m))
        else:
            out.extend(parse_messages(m, f"{fld}[{i}]"))
    return out


def _inputs(inputs: Any) -> list[Msg] | None:
    if not isinstance(inputs, dict):
        return None
    if "messages" in inputs:
        return _messages(inputs["messages"], "inputs.messages", "user")
    if isinstance(inputs.get("prompts"), list):
        return [Msg("user", str(p)) for p in inputs["prompts"][:1]]
    if isinstance(inputs.get("input"), list):
        return _messages(inputs["input"], "inputs.input", "user")
    return None


def _outputs(outputs: Any) -> list[Msg] | None:
    if not isinstance(outputs, dict):
        return None
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens:
        first = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
        if isinstance(first, dict):
            if isinstance(first.get("message"), dict):
                return _messages([first["message"]], "outputs.generations[0][0].message",
                                 "assistant")
            if isinstance(first.get("text"), str):
                return [Msg("assistant", first["text"])]
        return []
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return _messages([msg], "outputs.choices[0].message", "assistant") if msg else []
    for key in ("output", "message"):
        if isinstance(outputs.get(key), dict | str):
            value = outputs[key]
            if isinstance(value, dict) and "role" not in value and "lc" not in value \
                    and "type" not in value:
                return None
            return _messages([value], f"outputs.{key}", "assistant")
    return None


def _tool(run: dict[str, Any], name: str) -> ToolUse:
    inputs = run.get("inputs")
    args: Any = inputs
    if isinstance(inputs, dict) and set(inputs) == {"input"}:
        args = inputs["input"]
    outputs = run.get("outputs")
    result: Any = outputs
    call_id: str | None = None
    has = outputs is not None
    if isinstance(outputs, dict) and "output" in outputs:
        result = outputs["output"]
    if isinstance(result, dict) and (result.get("lc") is not None or
                                     result.get("type") == "tool"):
        kwargs = result.get("kwargs") if isinstance(result.get("kwargs"), dict) else result
        assert isinstance(kwargs, dict)
        call_id = kwargs.get("tool_call_id") if isinstance(kwargs.get("tool_call_id"),
                                                           str) else None
        result = kwargs.get("content")
    error = run.get("error")
    return ToolUse(name=name or "(unnamed tool)", call_id=call_id, args=_unwrap_args(args),
                   result=decode_json(result), has_result=has,
                   error=str(error) if error else None)


def _model(run: dict[str, Any]) -> str | None:
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    assert isinstance(extra, dict)
    params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"),
                                                          dict) else {}
    meta = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
    assert isinstance(params, dict) and isinstance(meta, dict)
    for value in (params.get("model"), params.get("model_name"), meta.get("ls_model_name"),
                  (run.get("inputs") or {}).get("model") if isinstance(run.get("inputs"),
                                                                       dict) else None):
        if isinstance(value, str) and value:
            return value
    return None


def to_record(raw: RawSpan, problems: Problems | None = None) -> SpanRecord:
    problems = problems if problems is not None else []
    run = raw.obj
    run_id, trace_raw = ids_of(run)
    if raw.wrapper:
        return SpanRecord(trace_id=norm_id(trace_raw, "trace_id"), span_id="",
                          parent_id=None, name="", start=None, end=None,
                          ordinal=raw.ordinal, parent_ordinal=raw.parent, wrapper=True)
    span_id = norm_id(run_id, "id")
    if span_id is None:
        raise ShapeError("the run has no id", "id")
    trace_id = norm_id(trace_raw, "trace_id")
    if trace_id is None and raw.parent is None and run.get("parent_run_id") is None:
        trace_id = span_id  # a root run is its own trace
    parent_id = norm_id(run.get("parent_run_id"), "parent_run_id")
    name = run.get("name")
    if name is not None and not isinstance(name, str):
        raise ShapeError("expected a string", "name")
    rt = run.get("run_type")
    if rt is not None and not isinstance(rt, str):
        raise ShapeError("expected a string", "run_type")
    kind = _KINDS.get(rt or "", "other")
    start = _time(run, (), ("start_time", "startTime"), problems)
    end = _time(run, (), ("end_time", "endTime"), problems)
    rec = SpanRecord(trace_id=trace_id, span_id=span_id, parent_id=parent_id,
                     name=name or "", start=start, end=end,
                     ordinal=raw.ordinal, parent_ordinal=raw.parent, kind=kind,
                     error=str(run["error"]) if run.get("error") else None)
    if kind == "llm":
        rec.inputs = _inputs(run.get("inputs"))
        rec.outputs = _outputs(run.get("outputs"))
        rec.model = _model(run)
    elif kind == "tool":
        rec.tool = _tool(run, name or "")
    example = run.get("reference_example_id")
    rec.task_id = str(example) if isinstance(example, str) and example else None
    rec.in_value = decode_json(run.get("inputs"))
    rec.out_value = decode_json(run.get("outputs"))
    return rec


def merge_payload(doc: Any) -> Any:
    """An ingest payload's runs, each patch merged onto its post (see the module doc);
    anything else as it is."""
    if not (isinstance(doc, dict) and isinstance(doc.get("post", doc.get("patch")), list)
            and set(doc) <= {"post", "patch", "runs"}):
        return doc
    runs: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for run in doc.get("post") or []:
        if isinstance(run, dict):
            run = dict(run)
            runs.append(run)
            if isinstance(run.get("id"), str):
                by_id[run["id"]] = run
    for patch in doc.get("patch") or []:
        if not isinstance(patch, dict):
            continue
        rid = patch.get("id")
        order = patch.get("dotted_order")
        if not isinstance(rid, str) and isinstance(order, str) and "Z" in order:
            rid = order.rsplit(".", 1)[-1].split("Z", 1)[-1]
        target = by_id.get(rid) if isinstance(rid, str) else None
        if target is None:
            runs.append(dict(patch))
            continue
        for key, value in patch.items():
            if value is not None and (key not in target or key in (
                    "outputs", "end_time", "error", "events", "extra", "tags")):
                target[key] = value
    return runs


def _is_payload(path: str | Path) -> bool:
    """Whether a `.json` file starts as an ingest payload (`{"post": ...` or `"patch"`)."""
    from judge.importers import jsonio
    try:
        evs = jsonio.events(lambda: jsonio.open_input(path), str(path))
        try:
            first = [next(evs, ("", None)) for _ in range(2)]
        finally:
            evs.close()
    except InputError:
        return False
    return first[0][0] == "start_map" and first[1] in (("map_key", "post"),
                                                       ("map_key", "patch"))


def _document(doc: Any, count: Any, line: int | None) -> Iterator[RawSpan]:
    from judge.importers.spanfile import _document as spans_document
    return spans_document(merge_payload(doc), count, line)


def iter_records(path: str | Path, *, stream: bool | None = None,
                 log: ImportLog | None = None) -> Iterator[SpanRecord]:
    log = log if log is not None else ImportLog(str(path))
    return records(iter_raw(path, stream=stream, document=_document), to_record, log,
                   noun="run")


def iter_langsmith(path: str | Path, *, scenario: str | None = None,
                   stream: bool | None = None, log: ImportLog | None = None,
                   ) -> Iterator[ImportedTrace]:
    """One trace per LangSmith trace id of the file."""
    log = log if log is not None else ImportLog(str(path))
    if stream is None and _is_payload(path):
        stream = False  # its patches are merged onto its posts: read whole
    return spans_to_traces(iter_records(path, stream=stream, log=log), file=str(path),
                           source="langsmith", scenario=scenario, log=log)
