"""Importers: turn other trace shapes into judge traces (formats §1), lossless or loud.

OpenAI chat logs (message lists, request/response logs, completion and Responses objects),
SWE-agent and mini-swe-agent trajectories, tau-bench records, OpenTelemetry (OTLP/JSON and
span lists: GenAI conventions, OpenInference, the Vercel AI SDK, any-agent), Langfuse
traces, LangSmith run trees and ingest payloads, Anthropic Messages and managed-agent
session logs, and inspect_ai eval logs — each a stream of `ImportedTrace`, written by
`write_imported`; `detect` recognises which one a file is; `run_import` is the whole
import `judge import` runs, reporting into an `ImportLog` (what was written, what was left
out and why). docs/formats.md, "Importers", has the contract.
"""

from judge.importers.detect import FORMATS as FORMATS
from judge.importers.detect import detect as detect
from judge.importers.imported import ImportedTrace as ImportedTrace
from judge.importers.imported import write_imported as write_imported
from judge.importers.openai_chat import iter_openai_chat as iter_openai_chat
from judge.importers.registry import iter_auto as iter_auto
from judge.importers.registry import iter_format as iter_format
from judge.importers.registry import run_import as run_import
from judge.importers.report import ImportLog as ImportLog
from judge.importers.tau_bench import iter_tau_bench as iter_tau_bench
from judge.importers.writer import write_traces as write_traces

__all__ = ["FORMATS", "ImportLog", "ImportedTrace", "detect", "iter_auto", "iter_format",
           "iter_openai_chat", "iter_tau_bench", "run_import", "write_imported",
           "write_traces"]
