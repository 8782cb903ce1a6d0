"""The reference label of each item (formats §4): the majority of each annotator's newest label.

Labels are history: an annotator's newer label on an item supersedes their older one (equal
`created_at`: the later one in the input wins). Of the newest labels, `pass` and `fail` are
votes; `unsure` abstains. More fail votes than pass votes: fail; more pass: pass; equal and
non-zero: a tie, left out (counted in `n_tied`); no votes at all (everyone unsure): the
reference is `unsure`, kept and reported, left out of agreement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from judge.formats import HumanLabel

RefLabel = Literal["pass", "fail", "unsure"]


@dataclass(frozen=True)
class ReferenceLabel:
    """The reference for one item, with the votes it came from."""

    item_id: str
    label: RefLabel
    violated_key: str | None
    evidence_event: int | None
    annotators: tuple[str, ...]
    n_pass: int
    n_fail: int
    n_unsure: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReferenceSet:
    """Reference labels by item id, the tied items, and each annotator's newest label."""

    labels: dict[str, ReferenceLabel]
    tied: list[str]
    newest: dict[str, dict[str, HumanLabel]]

    @property
    def n_tied(self) -> int:
        return len(self.tied)

    @property
    def n_unsure(self) -> int:
        return sum(1 for r in self.labels.values() if r.label == "unsure")

    @property
    def annotators(self) -> list[str]:
        return sorted({a for by in self.newest.values() for a in by})


def newest_labels(labels: Iterable[HumanLabel]) -> dict[str, dict[str, HumanLabel]]:
    """item id -> annotator -> that annotator's newest label on the item."""
    out: dict[str, dict[str, HumanLabel]] = {}
    for label in labels:
        by = out.setdefault(label.item_id, {})
        old = by.get(label.annotator)
        if old is None or label.created_at >= old.created_at:
            by[label.annotator] = label
    return out


def _most_common(values: list[Any]) -> Any:
    """The most common non-None value; ties go to the one that appears last (the newest)."""
    named = [v for v in values if v is not None]
    if len(named) <= 1:
        return named[0] if named else None
    counts = Counter(named)
    best = max(counts.values())
    return next(v for v in reversed(named) if counts[v] == best)


def reference_labels(labels: Iterable[HumanLabel]) -> ReferenceSet:
    """Reduce label history to one reference label per item (ties set aside)."""
    newest = newest_labels(labels)
    refs: dict[str, ReferenceLabel] = {}
    tied: list[str] = []
    for item, by in newest.items():
        if len(by) == 1:  # the common case: one annotator, the reference is their label
            (only,) = by.values()
            refs[item] = ReferenceLabel(
                item_id=item, label=only.label,
                violated_key=only.violated_key if only.label == "fail" else None,
                evidence_event=only.evidence_event,
                annotators=(only.annotator,), n_pass=int(only.label == "pass"),
                n_fail=int(only.label == "fail"), n_unsure=int(only.label == "unsure"),
                metadata=dict(only.metadata))
            continue
        votes = sorted(by.values(), key=lambda lab: lab.created_at)
        n_pass = sum(1 for lab in votes if lab.label == "pass")
        n_fail = sum(1 for lab in votes if lab.label == "fail")
        n_unsure = len(votes) - n_pass - n_fail
        if n_pass == n_fail and n_pass > 0:
            tied.append(item)
            continue
        label: RefLabel = "fail" if n_fail > n_pass else "pass" if n_pass > n_fail else "unsure"
        side = [lab for lab in votes if lab.label == label]
        metadata: dict[str, Any] = {}
        for lab in votes:
            metadata.update(lab.metadata)
        refs[item] = ReferenceLabel(
            item_id=item,
            label=label,
            violated_key=_most_common([lab.violated_key for lab in side]) if label == "fail"
            else None,
            evidence_event=_most_common([lab.evidence_event for lab in side]),
            annotators=tuple(sorted(by)),
            n_pass=n_pass,
            n_fail=n_fail,
            n_unsure=n_unsure,
            metadata=metadata,
        )
    return ReferenceSet(labels=refs, tied=sorted(tied), newest=newest)
