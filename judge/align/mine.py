"""Where the current prompt disagrees with people on the train split, and how those cases
group.

A **false pass**: people said fail, the judge pass. A **false fail**: people said pass, the
judge fail. An unscored verdict is neither (counted, left out). Disagreements cluster by:

- `violated_key`: the key people named (false pass) or the judge named (false fail);
- `check_kind`: which of the rubric's questions that key stands for, read from the item's
  ledger — the key's class (`goal`, `constraint`, `permission`, `mutable_fact`,
  `completion`, `uncertainty`), or `superseded_value` when the item's ledger holds an old
  value of the key (the "current values" question), `unknown` when the key is not in the
  item's ledger, `none` when no key was named;
- `item_kind`: `tool_call`, `summary`, `assistant`, `state_write`.

Clusters come largest first (ties by their fields), so what is proposed from them does not
depend on the order labels were stored in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.formats import Verdict
from judge.items import Item
from judge.labels.reference import ReferenceLabel

FALSE_PASS = "false_pass"
FALSE_FAIL = "false_fail"
#: the label a corrected example of each direction carries
CORRECTED = {FALSE_PASS: "fail", FALSE_FAIL: "pass"}


@dataclass(frozen=True)
class Disagreement:
    """One train item the current prompt got wrong."""

    item_id: str
    direction: str  # false_pass | false_fail
    human: ReferenceLabel
    judge: Verdict
    violated_key: str | None
    check_kind: str
    item_kind: str
    notes: tuple[str, ...] = ()  # the reviewers' notes on the item (their newest labels)


@dataclass
class Cluster:
    """Disagreements of one direction, key, check kind and item kind."""

    id: str  # c1, c2, … in cluster order
    direction: str
    violated_key: str | None
    check_kind: str
    item_kind: str
    members: list[Disagreement] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "direction": self.direction, "violated_key": self.violated_key,
                "check_kind": self.check_kind, "item_kind": self.item_kind,
                "n": len(self.members), "items": [d.item_id for d in self.members]}


@dataclass
class Mining:
    """The current prompt on the train split: agreement and its disagreements."""

    n_items: int
    n_scored: int
    n_agreed: int
    n_unscored: int
    clusters: list[Cluster]

    @property
    def disagreements(self) -> list[Disagreement]:
        return [d for c in self.clusters for d in c.members]

    def count(self, direction: str) -> int:
        return sum(len(c.members) for c in self.clusters if c.direction == direction)

    def to_dict(self) -> dict[str, Any]:
        return {"n_items": self.n_items, "n_scored": self.n_scored, "n_agreed": self.n_agreed,
                "n_unscored": self.n_unscored,
                "agreement": round(self.n_agreed / self.n_scored, 6) if self.n_scored else None,
                "false_pass": self.count(FALSE_PASS), "false_fail": self.count(FALSE_FAIL),
                "clusters": [c.to_dict() for c in self.clusters]}


def check_kind(item: Item, key: str | None) -> str:
    """Which of the rubric's questions `key` stands for in `item` (see the module doc)."""
    if not key:
        return "none"
    if any(o.get("key") == key for o in item.superseded()):
        return "superseded_value"
    for entry in item.entries("active", "completed", "revoked", "failed", "expired"):
        if entry.get("key") == key:
            return str(entry.get("class") or "unknown")
    return "unknown"


def mine(items: Sequence[Item], refs: Mapping[str, ReferenceLabel],
         verdicts: Sequence[Verdict],
         notes: Mapping[str, Sequence[str]] | None = None) -> Mining:
    """The disagreements of `verdicts` (one per item) with the reference labels, clustered;
    `notes`: the reviewers' notes per item."""
    by_id = {v.item_id: v for v in verdicts}
    scored = agreed = unscored = 0
    groups: dict[tuple[str, str, str, str], list[Disagreement]] = {}
    for item in items:
        v = by_id.get(item.item_id)
        ref = refs[item.item_id]
        if v is None or v.label == "unscored":
            unscored += 1
            continue
        scored += 1
        if v.label == ref.label:
            agreed += 1
            continue
        direction = FALSE_PASS if ref.label == "fail" else FALSE_FAIL
        key = ref.violated_key if direction == FALSE_PASS else v.violated_key
        kind = check_kind(item, key)
        d = Disagreement(item.item_id, direction, ref, v, key, kind, item.kind,
                         tuple((notes or {}).get(item.item_id, ())))
        groups.setdefault((direction, key or "", kind, item.kind), []).append(d)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    clusters = [Cluster(f"c{i}", direction, key or None, kind, item_kind,
                        sorted(members, key=lambda d: d.item_id))
                for i, ((direction, key, kind, item_kind), members) in enumerate(ordered, 1)]
    return Mining(n_items=len(items), n_scored=scored, n_agreed=agreed, n_unscored=unscored,
                  clusters=clusters)
