"""Cluster failures by signature (first-divergence key, turn, consequence), never averaged.

Leakage is clustered apart from drift: a trace with a `state_leakage` failure is clustered by
its first leak (what it leaked, where), whatever diverged first — a leak demands a
security-level response, not a place in a drift cluster. Every cluster names its family:
`leakage` (a fact of another user, tenant or session), `drift` (stale, expired, lost or
carried-over state: the ledger over time), `judge` (judge fails, no deterministic
divergence) or `other` (forbidden calls, scope, completion, outcome, ...).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from judge.suite.gate import TraceOutcome

LEAKAGE_CHECKS = frozenset({"state_leakage"})
DRIFT_CHECKS = frozenset({"stale_value", "memory", "summary_audit", "checkpoint",
                          "session_carryover"})
FAMILIES = ("leakage", "drift", "judge", "other")


def family_of(check: str) -> str:
    """The family a finding's check belongs to (see the module docstring)."""
    if check in LEAKAGE_CHECKS:
        return "leakage"
    if check in DRIFT_CHECKS:
        return "drift"
    return "judge" if check == "judge" else "other"


@dataclass
class FailureCluster:
    signature: str
    check: str
    key: str | None
    turn: int | None
    consequence: str
    traces: list[str] = field(default_factory=list)
    example: dict[str, Any] | None = None  # first divergence (first leak) of the first trace
    slice: list[dict[str, Any]] = field(default_factory=list)  # minimal trace slice

    @property
    def family(self) -> str:
        return family_of(self.check)

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "check": self.check, "key": self.key,
                "turn": self.turn, "consequence": self.consequence, "family": self.family,
                "count": len(self.traces), "traces": self.traces, "example": self.example,
                "slice": self.slice}


def signature_of(div: dict[str, Any]) -> tuple[str, str, str | None, int | None, str]:
    """(signature, check, key, turn, consequence) of a finding; a leak's signature names
    whose fact leaked and where (`state_leakage:globex@reply:turn3:unsafe`)."""
    check = str(div.get("check", "?"))
    key = div.get("key")
    turn = div.get("turn")
    consequence = str(div.get("severity", "?"))
    at = f"turn{turn if turn is not None else '?'}"
    detail = div.get("detail")
    if check in LEAKAGE_CHECKS and isinstance(detail, dict):
        return (f"{check}:{detail.get('owner', '?')}@{detail.get('surface', '?')}:{at}:"
                f"{consequence}", check, key, turn, consequence)
    sig = f"{check}:{key or '-'}@{at}:{consequence}"
    return sig, check, key, turn, consequence


def cluster_failures(outcomes: list[TraceOutcome],
                     slices: dict[str, list[dict[str, Any]]] | None = None
                     ) -> list[FailureCluster]:
    """Group failing traces by the signature of their first leak, else of their first
    divergence, biggest first."""
    clusters: dict[str, FailureCluster] = {}
    order: dict[str, int] = defaultdict(int)
    for o in outcomes:
        if o.passed:
            continue
        if o.first_leak is not None:
            div = o.first_leak
        elif o.first_divergence is not None:
            div = o.first_divergence
        else:
            div = {"check": "judge", "key": None, "turn": None, "severity": "judge-fail"}
        sig, check, key, turn, cons = signature_of(div)
        c = clusters.get(sig)
        if c is None:
            c = clusters[sig] = FailureCluster(sig, check, key, turn, cons, example=div,
                                               slice=(slices or {}).get(o.trace_id, []))
        c.traces.append(o.trace_id)
        order[sig] += 1
    return sorted(clusters.values(), key=lambda c: (-len(c.traces), c.signature))


def minimal_slice(events: list[dict[str, Any]], from_turn: int, to_seq: int,
                  limit: int = 12) -> list[dict[str, Any]]:
    """Events after the last passing checkpoint's turn up to the first divergence.

    Long stretches keep their ends: the first events after the checkpoint and the ones
    leading to the divergence, with a marker for what was left out.
    """
    picked = [e for e in events if e.get("turn", 0) > from_turn and e.get("seq", 0) <= to_seq]
    if len(picked) <= limit:
        return picked
    head, tail = picked[: limit // 3], picked[-(limit - limit // 3):]
    gap = len(picked) - len(head) - len(tail)
    return [*head, {"kind": "elided", "text": f"… {gap} events …"}, *tail]
