"""TEMPORARY: the store API of issue 10 (branch i10-core), bridged until that branch merges.

This package is written against the redesigned store:

- `Store.save_verdicts(verdicts, run_id)` stores verdicts as given (no routing, no `policy`);
- `judge.calibration.lookup.find_calibration(store, rubric, prompt_hash, model)` finds a
  record (database first, then the committed files);
- `store.queue.stats(rubric=...)` counts one rubric's review queue.

Each function below uses the new API when it is there and the old one otherwise, so either
merge order runs. Once i10-core is in, replace the three calls with the direct ones and
delete this module.
"""

from __future__ import annotations

import importlib
import inspect
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from judge.calibration.record import CalibrationRecord
from judge.formats import Verdict

if TYPE_CHECKING:
    from judge.store import Store


def save_as_given(store: Store, verdicts: Sequence[Verdict], run_id: str) -> None:
    """`store.save_verdicts(verdicts, run_id)`: stored with the route they carry (none)."""
    old_api = "policy" in inspect.signature(store.save_verdicts).parameters
    kw: dict[str, Any] = {"policy": None} if old_api else {}
    store.save_verdicts(verdicts, run_id, **kw)


def find_calibration(store: Store, rubric: str, prompt_hash: str,
                     model: str) -> CalibrationRecord | None:
    """`judge.calibration.lookup.find_calibration`: the database's newest record, else the
    committed files'."""
    try:
        lookup = importlib.import_module("judge.calibration.lookup")
    except ModuleNotFoundError:
        found = cast(Any, store).find_calibration(rubric, prompt_hash, model)
        return found if isinstance(found, CalibrationRecord) else None
    return cast(CalibrationRecord | None,
                lookup.find_calibration(store, rubric, prompt_hash, model))


def queue_stats(store: Store, rubric: str) -> dict[str, Any]:
    """`store.queue.stats(rubric=rubric)`: entries by state and reason, pending, doubles."""
    stats = store.queue.stats
    if "rubric" in inspect.signature(stats).parameters:
        return cast(dict[str, Any], cast(Any, stats)(rubric=rubric))
    entries = store.queue.entries(state=None, rubric=rubric)
    by_state = Counter(e.state for e in entries)
    pending = [e for e in entries if e.state != "done"]
    return {
        "total": len(entries),
        "by_state": {s: by_state.get(s, 0) for s in ("open", "claimed", "done")},
        "by_reason": dict(sorted(Counter(e.reason for e in entries).items())),
        "pending_by_reason": dict(sorted(Counter(e.reason for e in pending).items())),
        "safety_critical_pending": sum(1 for e in pending if e.safety_critical),
        "double_labelled": {"items": sum(1 for e in entries if e.required > 1),
                            "done": sum(1 for e in entries
                                        if e.required > 1 and e.state == "done")},
    }
