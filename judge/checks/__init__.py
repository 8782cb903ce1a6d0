"""Deterministic checks: the authoritative layer that decides what rules can decide.

A judge only grades what these cannot; when a rule and a judge disagree, the rule wins.
`run_checks(loaded, trace)` streams one trace past every applicable check and returns a
`CheckReport` (findings, first divergence, release veto, quality score, completion).
"""

from judge.checks.report import CheckReport as CheckReport
from judge.checks.report import Finding as Finding
from judge.checks.runner import check_paths as check_paths
from judge.checks.runner import run_checks as run_checks
from judge.checks.validate import validate_scenario as validate_scenario

__all__ = ["CheckReport", "Finding", "check_paths", "run_checks", "validate_scenario"]
