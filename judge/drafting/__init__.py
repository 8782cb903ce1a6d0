"""Drafting scenarios from traces (`judge init`), and telling drafts from reviewed ones.

`draft_scenario(paths)` reads judge traces (streaming), observes what they did and returns
a commented scenario YAML marked `status: draft`, for a person to review: tools seen and
which write, lookups, entity ids, the goal, a draft ledger, suggestions commented out.
`unreviewed(loaded)` is the one-line warning for a scenario still marked draft.
"""

from judge.drafting.build import DraftResult as DraftResult
from judge.drafting.build import draft_scenario as draft_scenario
from judge.drafting.build import observe_paths as observe_paths
from judge.drafting.review import unreviewed as unreviewed

__all__ = ["DraftResult", "draft_scenario", "observe_paths", "unreviewed"]
