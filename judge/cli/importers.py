"""`judge import openai-chat|tau-bench FILE -o OUT.jsonl`: convert trajectories to traces."""

from __future__ import annotations

from pathlib import Path

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.importers import iter_openai_chat, iter_tau_bench, write_traces
from judge.importers.tau_bench import DEFAULT_AGENT

app = typer.Typer(help="Import trajectories from other formats as judge traces (.jsonl).",
                  no_args_is_help=True)

OUT_HELP = ("Output trace file (.jsonl, one trace per line; - for standard output); written "
            "only if all records import.")


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
