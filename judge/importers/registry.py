"""Every import format by name, as a stream of `ImportedTrace`s (what `judge import` and
`judge import auto` call), and the one pipeline the CLI runs: read, check, write, report.

Options every format takes: `scenario`; `log` (an `ImportLog`: lenient or strict, and what
the import did); `actions` ("text": fenced action blocks are tool calls; "none"; None: the
format's default) and `action_tool`; `prefix` (trace id prefix, where a format makes ids);
`stream` (span formats); `max_member_bytes` (archives and gzip files).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers import jsonio
from judge.importers.imported import ImportedTrace, write_imported
from judge.importers.report import ImportLog
from judge.importers.text_actions import DEFAULT_TOOL, with_text_actions
from judge.trace.model import Trace


def from_traces(traces: Iterable[Trace], file: str) -> Iterator[ImportedTrace]:
    """Whole traces as ImportedTraces (events as dicts, validated again when written)."""
    for t in traces:
        header = {"trace_id": t.trace_id, "scenario": t.scenario, "candidate": t.candidate,
                  "metadata": t.metadata}
        events = (ev.model_dump(mode="json", exclude_none=True) for ev in t.events)
        yield ImportedTrace(header, events, file)


def _read(fmt: str, path: str | Path, scenario: str | None, log: ImportLog,
          options: dict[str, Any]) -> Iterator[ImportedTrace]:
    file = str(path)
    if fmt == "otel":
        from judge.importers.otel import iter_otel
        return iter_otel(path, scenario=scenario, stream=options.get("stream"), log=log)
    if fmt == "langsmith":
        from judge.importers.langsmith import iter_langsmith
        return iter_langsmith(path, scenario=scenario, stream=options.get("stream"), log=log)
    if fmt == "langfuse":
        from judge.importers.langfuse import iter_langfuse
        return iter_langfuse(path, scenario=scenario, log=log)
    if fmt == "anthropic":
        from judge.importers.anthropic_messages import iter_anthropic
        return iter_anthropic(path, scenario=scenario, prefix=options.get("prefix"), log=log)
    if fmt == "inspect":
        from judge.importers.inspect_logs import iter_inspect
        return iter_inspect(path, scenario=scenario, prefix=options.get("prefix"), log=log,
                            max_member_bytes=options.get("max_member_bytes"))
    if fmt in ("openai-chat", "swe-agent"):
        from judge.importers.openai_logs import iter_openai
        return iter_openai(path, scenario=scenario, prefix=options.get("prefix"), log=log,
                           actions=options.get("actions"),
                           action_tool=options.get("action_tool") or DEFAULT_TOOL)
    if fmt == "tau-bench":
        from judge.importers.tau_bench import iter_tau_bench
        return from_traces(iter_tau_bench(path), file)
    raise InputError(f"unknown import format {fmt!r}", file=file)


def iter_format(fmt: str, path: str | Path, *, scenario: str | None = None,
                log: ImportLog | None = None, **options: Any) -> Iterator[ImportedTrace]:
    """The traces of `path` read as format `fmt` (see `judge.importers.detect.FORMATS`).
    Without a `log`, any problem is the file's InputError (strict)."""
    log = log if log is not None else ImportLog(str(path), fmt)
    log.format = log.format or fmt
    traces = _read(fmt, path, scenario, log, options)
    if options.get("actions") != "text" or fmt in ("openai-chat", "swe-agent"):
        return traces
    tool = options.get("action_tool") or DEFAULT_TOOL
    return (_with_actions(t, tool) for t in traces)


def _with_actions(t: ImportedTrace, tool: str) -> ImportedTrace:
    t.events = with_text_actions(t.events, tool)
    return t


def iter_auto(path: str | Path, *, scenario: str | None = None,
              **options: Any) -> tuple[str, Iterator[ImportedTrace]]:
    """(the recognised format, its traces)."""
    from judge.importers.detect import detect
    fmt = detect(path)
    return fmt, iter_format(fmt, path, scenario=scenario, **options)


def run_import(fmt: str | None, path: str | Path, out: str | Path, log: ImportLog,
               *, scenario: str | None = None, **options: Any) -> str:
    """Import `path` as `fmt` (None: recognise it) into `out`; return the format read.

    InputError says what went wrong in one line: for a recognised file, which format it
    was read as; for an explicit format that did not fit the file, what it looks like."""
    from judge.importers.detect import FORMATS, detect, mismatch
    file = str(path)
    auto = fmt is None
    fmt = detect(path) if fmt is None else fmt
    log.format = fmt
    log.output = str(out)
    try:
        with jsonio.capped(options.get("max_member_bytes")):
            write_imported(iter_format(fmt, path, scenario=scenario, log=log, **options),
                           out, log)
    except InputError as exc:
        if auto:
            raise _read_as(exc, file, fmt, FORMATS[fmt]) from None
        other = None if _unreadable(exc) else mismatch(fmt, path)
        if other is not None:
            raise InputError(f"not {_article(fmt)} {fmt} file: it looks like {other} "
                             f"({FORMATS[other]}); try: judge import {other} FILE "
                             f"({_reason(exc, file)})", file=file, line=exc.line) from None
        raise
    return fmt


_UNREADABLE = ("malformed JSON", "not UTF-8", "gzip", "cannot read", "no such file",
               "is a directory", "is a FIFO", "is a socket", "is a device",
               "symbolic link loop", "the file is empty", "decompresses to more")


def _unreadable(exc: InputError) -> bool:
    """Whether an import failed before any format could matter (the file is no readable
    JSON at all): then no other format is suggested."""
    return any(s in exc.message for s in _UNREADABLE)


def _article(fmt: str) -> str:
    return "an" if fmt[0] in "aeiou" else "a"


def _reason(exc: InputError, file: str) -> str:
    """An error's message without its file (and line) prefix."""
    text = exc.message
    shown = file.encode("utf-8", "backslashreplace").decode("utf-8")
    if exc.line is not None:
        shown += f":{exc.line}"
    return text[len(shown) + 2:] if text.startswith(shown + ": ") else text


def _read_as(exc: InputError, file: str, fmt: str, what: str) -> InputError:
    return InputError(f"read as {fmt} ({what}): {_reason(exc, file)}", file=file,
                      line=exc.line)
