"""Importers: turn other trajectory shapes into judge traces (formats §1)."""

from judge.importers.openai_chat import iter_openai_chat as iter_openai_chat
from judge.importers.tau_bench import iter_tau_bench as iter_tau_bench
from judge.importers.writer import write_traces as write_traces

__all__ = ["iter_openai_chat", "iter_tau_bench", "write_traces"]
