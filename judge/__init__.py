"""judge: grade AI-agent trajectories with calibrated, model-blind LLM judges.

The public API is re-exported here; everything else is internal. Names are imported on first
use (PEP 562), so `import judge.cli.main` (every `judge` command) does not pay for pydantic
models it may never need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.checks import CheckReport as CheckReport
    from judge.checks import Finding as Finding
    from judge.checks import run_checks as run_checks
    from judge.errors import InputError as InputError
    from judge.errors import JudgeError as JudgeError
    from judge.formats import HumanLabel as HumanLabel
    from judge.formats import Verdict as Verdict
    from judge.ledger import Ledger as Ledger
    from judge.ledger import LedgerSnapshot as LedgerSnapshot
    from judge.ledger import Scenario as Scenario
    from judge.ledger import load_scenario as load_scenario
    from judge.trace import Event as Event
    from judge.trace import Trace as Trace
    from judge.trace import iter_traces as iter_traces
    from judge.trace import load_traces as load_traces

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "CheckReport": "judge.checks", "Finding": "judge.checks", "run_checks": "judge.checks",
    "InputError": "judge.errors", "JudgeError": "judge.errors",
    "HumanLabel": "judge.formats", "Verdict": "judge.formats",
    "Ledger": "judge.ledger", "LedgerSnapshot": "judge.ledger", "Scenario": "judge.ledger",
    "load_scenario": "judge.ledger",
    "Event": "judge.trace", "Trace": "judge.trace", "iter_traces": "judge.trace",
    "load_traces": "judge.trace",
}

__all__ = [
    "CheckReport", "Event", "Finding", "HumanLabel", "InputError", "JudgeError", "Ledger",
    "LedgerSnapshot", "Scenario", "Trace", "Verdict", "__version__", "iter_traces",
    "load_scenario", "load_traces", "run_checks",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
