"""A judge item: one tool call, summary, assistant reply or memory write of one trace,
under one rubric (formats §3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ItemKind = Literal["tool_call", "summary", "assistant", "state_write"]


@dataclass(frozen=True)
class Item:
    """Everything a judge may see about one item, plus what it must never see (`candidate`).

    `ledger` is `LedgerSnapshot.to_dict()` as the ledger stood just before the item's event
    (`before_seq`, the item's seq, and `through_seq`, the last event it reflects: the effect
    of the judged event is never in it); `events` is the minimal slice of the trace (event
    dicts, in seq order, the target included, long results truncated); `ledger_keys` are the
    keys a fail verdict may name; `slice_seqs` the seqs it may cite.

    Reply items (kind `assistant`) also carry `unsupported` (the reply's ids, amounts, dates
    and numbers that no earlier tool result or user message holds: `{"kind", "text"}` each),
    `end_state` (`{"seq", "state"}` of the trace's last state snapshot, or None) and
    `actions` (every tool call of the run: `{"seq", "tool", "outcome"}`, outcome `ok`,
    `error` or `no result`).

    `foreign` (scenarios with a `leakage:` block) holds the facts that belong to someone
    else, by owner, as the item's session sees them (judge.items.foreign), and the ledger
    key a leak violates: data for a judge, never an instruction.
    """

    item_id: str
    trace_id: str
    seq: int
    turn: int
    rubric: str
    kind: ItemKind
    goal: str
    ledger: dict[str, Any]
    events: tuple[dict[str, Any], ...]
    target: dict[str, Any]
    ledger_keys: frozenset[str]
    slice_seqs: frozenset[int]
    safety_critical: bool = False
    candidate: dict[str, Any] | None = None  # stored, NEVER rendered
    mutating: bool = False  # the target is a tool the scenario lists as mutating
    #: the scenario's additions to redaction (`identity`, `identity_patterns`,
    #: `secret_patterns`, `allow`), carried with the item so a worker renders it the same
    redaction: dict[str, tuple[str, ...]] | None = None
    unsupported: tuple[dict[str, str], ...] = ()
    end_state: dict[str, Any] | None = None
    actions: tuple[dict[str, Any], ...] = ()
    foreign: dict[str, Any] | None = None

    def __hash__(self) -> int:
        return hash(self.item_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id, "trace_id": self.trace_id, "seq": self.seq,
            "turn": self.turn, "rubric": self.rubric, "kind": self.kind, "goal": self.goal,
            "ledger": self.ledger, "events": list(self.events), "target": self.target,
            "ledger_keys": sorted(self.ledger_keys), "slice_seqs": sorted(self.slice_seqs),
            "safety_critical": self.safety_critical, "candidate": self.candidate or {},
            "mutating": self.mutating,
            **({"redaction": {k: list(v) for k, v in self.redaction.items()}}
               if self.redaction else {}),
            **({"unsupported": list(self.unsupported)} if self.unsupported else {}),
            **({"end_state": self.end_state} if self.end_state is not None else {}),
            **({"actions": list(self.actions)} if self.actions else {}),
            **({"foreign": self.foreign} if self.foreign is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Item:
        return cls(
            item_id=str(d["item_id"]), trace_id=str(d["trace_id"]), seq=int(d["seq"]),
            turn=int(d["turn"]), rubric=str(d["rubric"]), kind=d["kind"], goal=str(d["goal"]),
            ledger=dict(d["ledger"]), events=tuple(d["events"]), target=dict(d["target"]),
            ledger_keys=frozenset(d["ledger_keys"]), slice_seqs=frozenset(d["slice_seqs"]),
            safety_critical=bool(d.get("safety_critical", False)),
            candidate=dict(d.get("candidate") or {}), mutating=bool(d.get("mutating", False)),
            redaction={str(k): tuple(str(x) for x in v)
                       for k, v in (d.get("redaction") or {}).items()} or None,
            unsupported=tuple(dict(x) for x in d.get("unsupported") or ()),
            end_state=dict(d["end_state"]) if d.get("end_state") is not None else None,
            actions=tuple(dict(x) for x in d.get("actions") or ()),
            foreign=dict(d["foreign"]) if isinstance(d.get("foreign"), dict) else None,
        )

    # Convenience views over the ledger snapshot, for rules and providers.
    def entries(self, *statuses: str) -> list[dict[str, Any]]:
        """Ledger entries with the given statuses (default: active and completed)."""
        wanted = statuses or ("active", "completed")
        return [e for s in wanted for e in self.ledger.get(s, [])]

    def superseded(self) -> list[dict[str, Any]]:
        return list(self.ledger.get("superseded", []))
