"""The baseline differ: a trace against a known-good trajectory of the same task, call by
call (presence, argument and terminal drift). `judge diff` is its command line."""

from judge.diff.calls import ReadOnlyPolicy as ReadOnlyPolicy
from judge.diff.differ import DiffOptions as DiffOptions
from judge.diff.differ import Drift as Drift
from judge.diff.differ import TraceDiff as TraceDiff
from judge.diff.differ import diff_traces as diff_traces
from judge.diff.normalise import normalise as normalise
from judge.diff.normalise import same as same

__all__ = ["DiffOptions", "Drift", "ReadOnlyPolicy", "TraceDiff", "diff_traces", "normalise",
           "same"]
