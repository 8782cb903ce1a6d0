"""Importers: turn other trace shapes into judge traces (formats §1).

OpenAI chat lists and tau-bench records (whole `Trace`s); OpenTelemetry (OTLP/JSON and span
lists, GenAI conventions and OpenInference), LangSmith run trees, Anthropic Messages logs and
inspect_ai eval logs (streams of `ImportedTrace`, written by `write_imported`); `detect`
recognises which one a file is.
"""

from judge.importers.detect import FORMATS as FORMATS
from judge.importers.detect import detect as detect
from judge.importers.imported import ImportedTrace as ImportedTrace
from judge.importers.imported import write_imported as write_imported
from judge.importers.openai_chat import iter_openai_chat as iter_openai_chat
from judge.importers.registry import iter_auto as iter_auto
from judge.importers.registry import iter_format as iter_format
from judge.importers.tau_bench import iter_tau_bench as iter_tau_bench
from judge.importers.writer import write_traces as write_traces

__all__ = ["FORMATS", "ImportedTrace", "detect", "iter_auto", "iter_format",
           "iter_openai_chat", "iter_tau_bench", "write_imported", "write_traces"]
