"""Cluster failures by signature (first-divergence key, turn, consequence), never averaged."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from judge.suite.gate import TraceOutcome


@dataclass
class FailureCluster:
    signature: str
    check: str
    key: str | None
    turn: int | None
    consequence: str
    traces: list[str] = field(default_factory=list)
    example: dict[str, Any] | None = None  # first divergence of the first trace
    slice: list[dict[str, Any]] = field(default_factory=list)  # minimal trace slice

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "check": self.check, "key": self.key,
                "turn": self.turn, "consequence": self.consequence, "count": len(self.traces),
                "traces": self.traces, "example": self.example, "slice": self.slice}


def signature_of(div: dict[str, Any]) -> tuple[str, str, str | None, int | None, str]:
    check = str(div.get("check", "?"))
    key = div.get("key")
    turn = div.get("turn")
    consequence = str(div.get("severity", "?"))
    sig = f"{check}:{key or '-'}@turn{turn if turn is not None else '?'}:{consequence}"
    return sig, check, key, turn, consequence


def cluster_failures(outcomes: list[TraceOutcome],
                     slices: dict[str, list[dict[str, Any]]] | None = None
                     ) -> list[FailureCluster]:
    """Group failing traces by the signature of their first divergence, biggest first."""
    clusters: dict[str, FailureCluster] = {}
    order: dict[str, int] = defaultdict(int)
    for o in outcomes:
        if o.passed or o.first_divergence is None:
            if not o.passed and o.first_divergence is None:
                div = {"check": "judge", "key": None, "turn": None, "severity": "judge-fail"}
            else:
                continue
        else:
            div = o.first_divergence
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
