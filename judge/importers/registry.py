"""Every import format by name, as a stream of `ImportedTrace`s (what `judge import` and
`judge import auto` call). The OpenAI-chat and tau-bench importers yield whole `Trace`s; they
are adapted here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers.imported import ImportedTrace
from judge.trace.model import Trace


def from_traces(traces: Iterable[Trace], file: str) -> Iterator[ImportedTrace]:
    """Whole traces as ImportedTraces (events as dicts, validated again when written)."""
    for t in traces:
        header = {"trace_id": t.trace_id, "scenario": t.scenario, "candidate": t.candidate,
                  "metadata": t.metadata}
        events = (ev.model_dump(mode="json", exclude_none=True) for ev in t.events)
        yield ImportedTrace(header, events, file)


def iter_format(fmt: str, path: str | Path, *, scenario: str | None = None,
                **options: Any) -> Iterator[ImportedTrace]:
    """The traces of `path` read as format `fmt` (see `judge.importers.detect.FORMATS`)."""
    file = str(path)
    if fmt == "otel":
        from judge.importers.otel import iter_otel
        return iter_otel(path, scenario=scenario, stream=options.get("stream"))
    if fmt == "langsmith":
        from judge.importers.langsmith import iter_langsmith
        return iter_langsmith(path, scenario=scenario, stream=options.get("stream"))
    if fmt == "anthropic":
        from judge.importers.anthropic_messages import iter_anthropic
        return iter_anthropic(path, scenario=scenario, prefix=options.get("prefix"))
    if fmt == "inspect":
        from judge.importers.inspect_logs import iter_inspect
        return iter_inspect(path, scenario=scenario, prefix=options.get("prefix"))
    if fmt == "openai-chat":
        from judge.importers.openai_chat import iter_openai_chat
        return from_traces(iter_openai_chat(path, prefix=options.get("prefix"),
                                            scenario=scenario), file)
    if fmt == "tau-bench":
        from judge.importers.tau_bench import iter_tau_bench
        return from_traces(iter_tau_bench(path), file)
    raise InputError(f"unknown import format {fmt!r}", file=file)


def iter_auto(path: str | Path, *, scenario: str | None = None,
              **options: Any) -> tuple[str, Iterator[ImportedTrace]]:
    """(the recognised format, its traces)."""
    from judge.importers.detect import detect
    fmt = detect(path)
    return fmt, iter_format(fmt, path, scenario=scenario, **options)
