"""The scenario and its reviewed ledger (formats §2)."""

from judge.ledger.loader import LoadedScenario as LoadedScenario
from judge.ledger.loader import load_scenario as load_scenario
from judge.ledger.reducer import Entry as Entry
from judge.ledger.reducer import Ledger as Ledger
from judge.ledger.reducer import LedgerSnapshot as LedgerSnapshot
from judge.ledger.reducer import Superseded as Superseded
from judge.ledger.scenario import Delta as Delta
from judge.ledger.scenario import Scenario as Scenario

__all__ = ["Delta", "Entry", "Ledger", "LedgerSnapshot", "LoadedScenario", "Scenario",
           "Superseded", "load_scenario"]
