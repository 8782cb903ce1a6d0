"""`judge import FORMAT FILE -o OUT.jsonl`: convert trajectories to traces (openai-chat,
tau-bench, otel, anthropic, langsmith, inspect; `auto` recognises the format)."""

from __future__ import annotations

from pathlib import Path

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.importers import iter_openai_chat, iter_tau_bench, write_traces
from judge.importers.tau_bench import DEFAULT_AGENT

app = typer.Typer(help="Import trajectories from other formats as judge traces (.jsonl).",
                  no_args_is_help=True)

OUT_HELP = ("Output trace file (.jsonl, one trace per line), or - for standard output; "
            "written only if all records import.")


@app.command("openai-chat")
def openai_chat(
    file: Path = typer.Argument(..., help="Message list(s): .json (list, object with "
                                          "'messages', or list of such) or .jsonl"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help="Scenario id to record on each trace"),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: file stem)"),
) -> None:
    """Import OpenAI chat-completion message lists (system messages kept out of events)."""
    with cli_errors():
        n = write_traces(iter_openai_chat(file, prefix=prefix, scenario=scenario), out)
    echo(f"imported {n} trace(s) from {field(file)} to {field(out)}", err=True)


@app.command("tau-bench")
def tau_bench(
    file: Path = typer.Argument(..., help="tau-bench historical trajectories (.json list)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    domain: str = typer.Option("airline", help="Domain: trace ids become tau-DOMAIN/..."),
    model: str = typer.Option("gpt-4o", help="Candidate model that produced the file"),
    agent: str = typer.Option(DEFAULT_AGENT, help="Candidate agent name"),
) -> None:
    """Import tau-bench trajectories: one trace per record, policy kept out of events."""
    with cli_errors():
        n = write_traces(iter_tau_bench(file, domain=domain,
                                        candidate={"model": model, "agent": agent}), out)
    echo(f"imported {n} trace(s) from {field(file)} to {field(out)}", err=True)


SCENARIO_HELP = "Scenario id to record on each trace"
STREAM_HELP = ("Read the file with the incremental parser (flat memory); default: only "
               "files over 8 MB")


def _import(fmt: str, file: Path, out: Path, scenario: str | None, **options: object) -> None:
    from judge.importers import iter_format, write_imported
    with cli_errors():
        n = write_imported(iter_format(fmt, file, scenario=scenario, **options), out)
    echo(f"imported {n} trace(s) from {field(file)} to {field(out)}", err=True)


@app.command("otel")
def otel(
    file: Path = typer.Argument(..., help="OTLP/JSON export or span-list JSON (.json/.jsonl)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    stream: bool | None = typer.Option(None, "--stream/--no-stream", help=STREAM_HELP),
) -> None:
    """Import OpenTelemetry spans (GenAI conventions or OpenInference): one trace per trace id."""
    _import("otel", file, out, scenario, stream=stream)


@app.command("anthropic")
def anthropic(
    file: Path = typer.Argument(..., help="Messages log: message list(s), request(s), or "
                                          "request/response records (.json/.jsonl)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: file stem)"),
) -> None:
    """Import Anthropic Messages logs (tool_use / tool_result blocks, system kept out)."""
    _import("anthropic", file, out, scenario, prefix=prefix)


@app.command("langsmith")
def langsmith(
    file: Path = typer.Argument(..., help="Exported runs: a run tree, a list of runs, or JSONL"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    stream: bool | None = typer.Option(None, "--stream/--no-stream", help=STREAM_HELP),
) -> None:
    """Import LangSmith run trees: one trace per trace id."""
    _import("langsmith", file, out, scenario, stream=stream)


@app.command("inspect")
def inspect_(
    file: Path = typer.Argument(..., help="inspect_ai eval log (.json or .eval)"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
    prefix: str | None = typer.Option(None, help="Trace id prefix (default: the log's task)"),
) -> None:
    """Import inspect_ai eval logs: one trace per sample and epoch."""
    _import("inspect", file, out, scenario, prefix=prefix)


@app.command("auto")
def auto(
    file: Path = typer.Argument(..., help="A trajectory file of any format judge imports"),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    scenario: str | None = typer.Option(None, help=SCENARIO_HELP),
) -> None:
    """Recognise the file's format (says which formats it knows when it cannot), then import."""
    from judge.importers import iter_auto, write_imported
    with cli_errors():
        fmt, traces = iter_auto(file, scenario=scenario)
        echo(f"{field(file)}: {fmt}", err=True)
        n = write_imported(traces, out)
    echo(f"imported {n} trace(s) from {field(file)} to {field(out)}", err=True)
