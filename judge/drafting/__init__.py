"""Drafting scenarios from traces (`judge init`), and telling drafts from reviewed ones.

`draft_scenario(paths)` reads judge traces (streaming), observes what they did and returns
a commented scenario YAML marked `status: draft`, for a person to review: tools seen and
which write, lookups, entity ids, the goal, a draft ledger, suggestions commented out.
`unreviewed(loaded)` is the one-line warning for a scenario still marked draft.

Names are imported on first use (PEP 562): `judge validate` needs `unreviewed` only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.drafting.build import DraftResult as DraftResult
    from judge.drafting.build import draft_scenario as draft_scenario
    from judge.drafting.build import observe_paths as observe_paths
    from judge.drafting.review import unreviewed as unreviewed

_EXPORTS = {"DraftResult": "judge.drafting.build", "draft_scenario": "judge.drafting.build",
            "observe_paths": "judge.drafting.build", "unreviewed": "judge.drafting.review"}

__all__ = ["DraftResult", "draft_scenario", "observe_paths", "unreviewed"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judge.drafting' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
