"""Traces: one run of an agent on one task (formats §1)."""

from judge.trace.loader import iter_traces as iter_traces
from judge.trace.loader import load_traces as load_traces
from judge.trace.model import Event as Event
from judge.trace.model import EventKind as EventKind
from judge.trace.model import Trace as Trace
from judge.trace.model import TraceHeader as TraceHeader

__all__ = ["Event", "EventKind", "Trace", "TraceHeader", "iter_traces", "load_traces"]
