"""`judge import FORMAT FILE -o OUT.jsonl`: convert trajectories to traces (one sub-command
per format; `auto` recognises the format). A thin layer over
`judge.importers.registry.run_import`: every command prints what it wrote and what it left
out on stderr, and `--report FILE` writes the same as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.errors import InputError
from judge.importers.tau_bench import DEFAULT_AGENT

app = typer.Typer(help="Import trajectories from other formats as judge traces (.jsonl).",
                  no_args_is_help=True)

OUT_HELP = ("Output trace file (.jsonl, one trace per line), or - for standard output; "
            "written only if the import succeeds.")
SCENARIO_HELP = "Scenario id to record on each trace"
STREAM_HELP = ("Read the file with the incremental parser (flat memory); default: only "
               "files over 8 MB")
STRICT_HELP = ("Refuse the file on the first span, record or message that cannot be read "
               "(default: leave it out, keep the rest and say what was left out)")
REPORT_HELP = ("Write what the import did as JSON (traces, events by kind, everything left "
               "out and why) to this file")
MEMBER_HELP = ("The most bytes an archive member (or a gzip file) may decompress to: a "
               "number, or with K, M or G (default 128M)")
ACTIONS_HELP = ("text: a fenced block in an assistant message is a tool call (tool named "
                "by its language) and the next user message its result; none: never; "
                "default: per format (on for swe-agent)")
ACTION_TOOL_HELP = "Tool name for an action block without a language (default bash)"

_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.I)


def parse_size(text: str | None) -> int | None:
    """`256M` → bytes; InputError naming the option for anything else."""
    if text is None:
        return None
    m = _SIZE.match(text)
    if m is None:
        raise InputError(f"expected a size in bytes (e.g. 256M), not {text!r}",
                         field="--max-member-bytes")
    unit = (m.group(2) or "b")[0].lower()
    n = int(m.group(1)) << {"b": 0, "k": 10, "m": 20, "g": 30}[unit]
    if n <= 0:
        raise InputError("expected a size above 0", field="--max-member-bytes")
    return n


def _actions(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in ("text", "none"):
        raise InputError(f"expected text or none, not {value!r}", field="--actions")
    return v


def _write_report(report: Path | None, data: dict[str, Any]) -> None:
    if report is None:
        return
    from judge.outputs import write_output
    write_output(report, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _run(fmt: str | None, file: Path, out: Path, *, scenario: str | None, strict: bool,
         report: Path | None, **options: Any) -> None:
    from judge.importers.registry import run_import
    from judge.importers.report import ImportLog

    log = ImportLog(str(file), fmt, strict=strict)
    with cli_errors():
        if report is not None:
            from judge.outputs import check_output
            check_output(report)
        options["actions"] = _actions(options.get("actions"))
        options["max_member_bytes"] = parse_size(options.get("max_member_bytes"))
        try:
            found = run_import(fmt, file, out, log, scenario=scenario, **options)
        except InputError as exc:
            _write_report(report, {**log.to_json(), "error": exc.message})
            raise
        _write_report(report, log.to_json())
    read_as = f" (read as {found})" if fmt is None else ""
    echo(f"imported {log.traces} trace(s) from {field(file)}{read_as} to {field(out)}: "
         + field(log.summary()[0]), err=True)
    for line in log.summary()[1:]:
        echo(field(line), err=True)


@app.command("openai-chat")
def openai_chat(
    file: Path = typer.Argument(..., help="Message list(s) (.json: a list, an object with "
                                          "'messages', or a list of such; .jsonl), "
                                          "request/response records, chat.completion or "
                                          "response objects"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: file stem)"),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
    max_member_bytes: str | None = typer.Option(None, "--max-member-bytes", help=MEMBER_HELP),
) -> None:
    """Import OpenAI chat logs (system messages kept out of events)."""
    _run("openai-chat", file, out, scenario=scenario, strict=strict, report=report,
         prefix=prefix, actions=actions, action_tool=action_tool,
         max_member_bytes=max_member_bytes)


@app.command("swe-agent")
def swe_agent(
    file: Path = typer.Argument(..., help="SWE-agent .traj file or mini-swe-agent trajectory"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import SWE-agent and mini-swe-agent trajectories (commands as tool calls)."""
    _run("swe-agent", file, out, scenario=scenario, strict=strict, report=report,
         actions=actions, action_tool=action_tool)


@app.command("tau-bench")
def tau_bench(
    file: Path = typer.Argument(..., help="tau-bench historical trajectories (.json list)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    domain: str = typer.Option("airline", help="Domain: trace ids become tau-DOMAIN/..."),
    model: str = typer.Option("gpt-4o", help="Candidate model that produced the file"),
    agent: str = typer.Option(DEFAULT_AGENT, help="Candidate agent name"),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
) -> None:
    """Import tau-bench trajectories: one trace per record, policy kept out of events."""
    from judge.importers import iter_tau_bench, write_imported
    from judge.importers.registry import from_traces
    from judge.importers.report import ImportLog

    log = ImportLog(str(file), "tau-bench", output=str(out))
    with cli_errors():
        traces = iter_tau_bench(file, domain=domain, candidate={"model": model,
                                                                "agent": agent})
        try:
            write_imported(from_traces(traces, str(file)), out, log)
        except InputError as exc:
            _write_report(report, {**log.to_json(), "error": exc.message})
            raise
        _write_report(report, log.to_json())
    echo(f"imported {log.traces} trace(s) from {field(file)} to {field(out)}: "
         + field(log.summary()[0]), err=True)


@app.command("otel")
def otel(
    file: Path = typer.Argument(..., help="OTLP/JSON export or span-list JSON (.json/.jsonl)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    stream: bool | None = typer.Option(None, "--stream/--no-stream", help=STREAM_HELP),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import OpenTelemetry spans (GenAI, OpenInference, Vercel AI SDK): one trace per id."""
    _run("otel", file, out, scenario=scenario, strict=strict, report=report, stream=stream,
         actions=actions, action_tool=action_tool)


@app.command("anthropic")
def anthropic(
    file: Path = typer.Argument(..., help="Messages log: message list(s), request(s), "
                                          "request/response records, or a managed-agent "
                                          "session log (.json/.jsonl)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: file stem)"),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import Anthropic Messages and session logs: one trace per conversation or session."""
    _run("anthropic", file, out, scenario=scenario, strict=strict, report=report,
         prefix=prefix, actions=actions, action_tool=action_tool)


@app.command("langsmith")
def langsmith(
    file: Path = typer.Argument(..., help="Exported runs: a run tree, a list of runs, JSONL, "
                                          "or an SDK ingest payload ({post, patch})"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    stream: bool | None = typer.Option(None, "--stream/--no-stream", help=STREAM_HELP),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import LangSmith run trees and ingest payloads: one trace per trace id."""
    _run("langsmith", file, out, scenario=scenario, strict=strict, report=report,
         stream=stream, actions=actions, action_tool=action_tool)


@app.command("langfuse")
def langfuse(
    file: Path = typer.Argument(..., help="Langfuse trace export ({trace, observations}), "
                                          "API trace JSON, or a list/JSONL of them"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import Langfuse traces (GENERATION and TOOL observations): one trace per trace."""
    _run("langfuse", file, out, scenario=scenario, strict=strict, report=report,
         actions=actions, action_tool=action_tool)


@app.command("inspect")
def inspect_(
    file: Path = typer.Argument(..., help="inspect_ai eval log (.json or .eval)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: the log's task)"),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    max_member_bytes: str | None = typer.Option(None, "--max-member-bytes", help=MEMBER_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Import inspect_ai eval logs: one trace per sample and epoch."""
    _run("inspect", file, out, scenario=scenario, strict=strict, report=report,
         prefix=prefix, max_member_bytes=max_member_bytes, actions=actions,
         action_tool=action_tool)


@app.command("auto")
def auto(
    file: Path = typer.Argument(..., help="A trajectory file of any format judge imports"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    report: Path | None = typer.Option(None, "--report", help=REPORT_HELP),
    max_member_bytes: str | None = typer.Option(None, "--max-member-bytes", help=MEMBER_HELP),
    actions: str | None = typer.Option(None, "--actions", help=ACTIONS_HELP),
    action_tool: str | None = typer.Option(None, "--action-tool", help=ACTION_TOOL_HELP),
) -> None:
    """Recognise the file's format (says which formats it knows when it cannot), then import."""
    _run(None, file, out, scenario=scenario, strict=strict, report=report,
         max_member_bytes=max_member_bytes, actions=actions, action_tool=action_tool)
