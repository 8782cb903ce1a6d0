"""judge: grade AI-agent trajectories with calibrated, model-blind LLM judges.

The public API is re-exported here; everything else is internal.
"""

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

__all__ = [
    "CheckReport", "Event", "Finding", "HumanLabel", "InputError", "JudgeError", "Ledger",
    "LedgerSnapshot", "Scenario", "Trace", "Verdict", "__version__", "iter_traces",
    "load_scenario", "load_traces", "run_checks",
]
