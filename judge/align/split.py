"""The leak-free split of a rubric's labelled items into train and held-out.

- **Grouped**: every item of a group lands on one side. A group is the item's trace, or its
  task when the trace names one (`metadata.task_id`): the trials of one
  task are near copies (the same user, ids and calls), and a worked example taken from one
  trial would answer its sibling on the other side.
- **Stratified** by the human reference label: each side holds about the held-out share of
  the fails and of the passes.
- **Seeded** and recorded: scikit-learn's StratifiedGroupKFold (shuffled with the seed) cuts
  round(1 / share) folds and the first is held out. The train item ids go into the new
  version's front matter, so what it was built from stays known whatever a later
  scikit-learn does with the same seed.

When the parent is itself an aligned version, the groups of the items its text shows or
its rules came from (its examples and cited items, back through its own parents) are kept in
train: an item the parent prompt already holds is never held out.

Too few labels is a refusal before anything is graded: fewer than MIN_PER_CLASS items per
human class, or a side left without an item of a class.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.errors import ConfigError

#: the fewest labelled items per human class (as `judge calibrate fit` asks)
MIN_PER_CLASS = 30
DEFAULT_HELD_OUT = 0.5


class TooFewLabels(ConfigError):
    """Too few labelled items per human class to split: says how many more are needed."""

    def __init__(self, rubric: str, counts: Mapping[str, int], minimum: int,
                 why: str | None = None, plan: str | None = None) -> None:
        self.rubric = rubric
        self.why = why
        self.counts = dict(counts)
        self.minimum = minimum
        self.missing = {k: max(0, minimum - counts.get(k, 0)) for k in ("fail", "pass")}
        total = sum(counts.values())
        short = ", ".join(f"{counts.get(k, 0)} human-{k} (need {self.missing[k]} more)"
                          for k in ("fail", "pass") if self.missing[k] > 0)
        hints = []
        for k in ("fail", "pass"):
            share = counts.get(k, 0) / total if total else 0.0
            if self.missing[k] and share > 0:
                plural = "passes" if k == "pass" else "fails"
                hints.append(f"at this set's {k} share ({share:.0%}) about "
                             f"{math.ceil(self.missing[k] / share)} more items labelled at "
                             f"random hold {self.missing[k]} more {plural}")
        plan = plan or (f"judge labels plan --rubric {rubric} --target-width 0.1 --queue "
                        "puts the items that help most at the front of the review queue")
        head = why or (f"too few labels to split into train and held-out: {short}; at least "
                       f"{minimum} per class")
        super().__init__(f"rubric {rubric}: {head}; label more ({plan}"
                         + (f"; {'; '.join(hints)}" if hints else "") + ")")


@dataclass
class Split:
    """Which labelled items train a new prompt and which prove it."""

    train: list[str]
    held_out: list[str]
    seed: int
    held_out_share: float  # what was asked
    folds: int
    grouped_by: str  # "task" when any trace named one, else "trace"
    groups: dict[str, str] = field(default_factory=dict)  # item id -> group
    pinned: list[str] = field(default_factory=list)  # groups kept in train (see split_items)

    def record(self, labels: Mapping[str, str]) -> dict[str, Any]:
        """What the front matter and the report keep of the split."""
        def side(ids: Sequence[str]) -> dict[str, int]:
            c = Counter(labels[i] for i in ids)
            return {"n": len(ids), "fail": c.get("fail", 0), "pass": c.get("pass", 0),
                    "groups": len({self.groups[i] for i in ids})}

        out: dict[str, Any] = {
            "seed": self.seed, "held_out_share": self.held_out_share, "folds": self.folds,
            "grouped_by": self.grouped_by,
            "method": "sklearn StratifiedGroupKFold(shuffle=True), fold 0 held out",
            "train": side(self.train), "held_out": side(self.held_out)}
        if self.pinned:
            out["pinned_groups"] = len(self.pinned)
        return out


def group_of(trace_id: str, meta: Mapping[str, Any] | None) -> str:
    """An item's group: its trace's task (`metadata.task_id`), else the trace. Tasks of two
    scenarios that share an id fall in one group: coarser, never a leak."""
    task = (meta or {}).get("task_id")
    if isinstance(task, int) and not isinstance(task, bool):
        task = str(task)
    if isinstance(task, str) and task:
        return f"task:{task}"
    return f"trace:{trace_id}"


def split_items(labels: Mapping[str, str], groups: Mapping[str, str], *, rubric: str,
                seed: int = 0, held_out_share: float = DEFAULT_HELD_OUT,
                min_per_class: int = MIN_PER_CLASS,
                pinned: Collection[str] = ()) -> Split:
    """Split the items of `labels` (item id -> human reference "pass" or "fail") by
    `groups` (item id -> group). The `pinned` groups go to train whatever the draw: those of
    items the parent prompt already shows or was built from (an aligned parent), which must
    never be held out. TooFewLabels when a class is short or a side would hold no item of a
    class; ConfigError for a share outside (0, 0.5]."""
    from sklearn.model_selection import StratifiedGroupKFold

    if not 0.0 < held_out_share <= 0.5:
        raise ConfigError(f"--held-out must lie in (0, 0.5] (got {held_out_share}): the "
                          "held-out split is one fold of round(1 / share) folds")
    ids = sorted(labels)
    counts = Counter(labels[i] for i in ids)
    if min(counts.get("fail", 0), counts.get("pass", 0)) < min_per_class:
        raise TooFewLabels(rubric, counts, min_per_class)
    folds = max(2, round(1.0 / held_out_share))
    pin = set(pinned)
    free = [i for i in ids if groups[i] not in pin]
    names = [groups[i] for i in free]
    n_groups = len(set(names))
    if n_groups < folds:
        also = f" besides the {len(pin)} the parent prompt was built from" if pin else ""
        raise TooFewLabels(rubric, counts, min_per_class,
                           why=f"the labelled items come from {n_groups} trace(s) or "
                               f"task(s){also}, fewer than the {folds} folds the split "
                               "needs (no trace or task may be on both sides)")
    y = [1 if labels[i] == "fail" else 0 for i in free]
    cut = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # a class too small for every fold: checked below
        warnings.simplefilter("ignore", UserWarning)
        train_at, held_at = next(iter(cut.split(free, y, groups=names)))
    held = [free[j] for j in sorted(held_at)]
    train = sorted({free[j] for j in train_at} | {i for i in ids if groups[i] in pin})
    for side, members in (("train", train), ("held-out", held)):
        have = Counter(labels[i] for i in members)
        for k in ("fail", "pass"):
            if not have.get(k):
                raise TooFewLabels(rubric, counts, min_per_class,
                                   why=f"the {side} split holds no human-{k} item (the "
                                       f"{k}s come from too few traces or tasks)")
    grouped = "task" if any(groups[i].startswith("task:") for i in ids) else "trace"
    return Split(train=train, held_out=held, seed=seed, held_out_share=held_out_share,
                 folds=folds, grouped_by=grouped, groups={i: groups[i] for i in ids},
                 pinned=sorted(pin & {groups[i] for i in ids}))
