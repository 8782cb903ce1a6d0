"""Probe figures from graded pairs (original verdict, variant verdict): flip rate on
invariant variants, catch rate on sensitive ones, by variant kind, with Wilson intervals.

A pair with an unscored verdict on either side is excluded (counted, never a flip or a
miss). A sensitive variant counts only when the judge got its original right (its label
equals the human's): a judge already wrong on the original shows nothing about whether the
change moved it (counted as `n_original_wrong`). Caught: the variant got the expected label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge.probes.variants import EXPECT, INVARIANT_KINDS, KINDS, SENSITIVE_KINDS

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Pair:
    """One variant graded beside its original."""

    variant_id: str
    original_id: str
    kind: str
    human: str
    original: str  # the original's verdict label (pass, fail or unscored)
    variant: str  # the variant's verdict label

    @property
    def invariant(self) -> bool:
        return self.kind in INVARIANT_KINDS

    @property
    def outcome(self) -> str:
        """flipped | kept (invariant); caught | missed | original_wrong (sensitive);
        excluded (an unscored side)."""
        if "unscored" in (self.original, self.variant):
            return "excluded"
        if self.invariant:
            return "flipped" if self.variant != self.original else "kept"
        if self.original != self.human:
            return "original_wrong"
        return "caught" if self.variant == EXPECT[self.kind][1] else "missed"  # type: ignore[index]

    def to_dict(self) -> dict[str, Any]:
        return {"variant_id": self.variant_id, "original_id": self.original_id,
                "kind": self.kind, "human": self.human, "original": self.original,
                "variant": self.variant, "outcome": self.outcome}


def wilson_interval(k: int, n: int, confidence: float = CONFIDENCE) -> list[float] | None:
    """The Wilson score interval of k successes in n trials (None when n is 0)."""
    if n == 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return [round(float(ci.low), 6), round(float(ci.high), 6)]


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"n": n, "rate": round(k / n, 6) if n else None, "ci": wilson_interval(k, n)}


def summarize(pairs: Sequence[Pair], skipped: Mapping[str, int]) -> dict[str, Any]:
    """Per kind and per family: counts, rate and interval. `skipped`: items of the kind's
    class (sensitive: the human class it changes) the kind could not apply to."""
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        mine = [p for p in pairs if p.kind == kind]
        outcomes = [p.outcome for p in mine]
        invariant = kind in INVARIANT_KINDS
        hit = "flipped" if invariant else "caught"
        n = sum(o in ("flipped", "kept", "caught", "missed") for o in outcomes)
        entry: dict[str, Any] = {
            "family": "invariant" if invariant else "sensitive",
            "n_variants": len(mine), "n_skipped": int(skipped.get(kind, 0)),
            "n_excluded": outcomes.count("excluded"),
        }
        if not invariant:
            entry["expect"] = EXPECT[kind][1]
            entry["n_original_wrong"] = outcomes.count("original_wrong")
        entry[hit] = outcomes.count(hit)
        entry.update(_rate(outcomes.count(hit), n))
        kinds[kind] = entry
    flips = sum(kinds[k]["flipped"] for k in INVARIANT_KINDS)
    n_inv = sum(kinds[k]["n"] for k in INVARIANT_KINDS)
    caught = sum(kinds[k]["caught"] for k in SENSITIVE_KINDS)
    n_sen = sum(kinds[k]["n"] for k in SENSITIVE_KINDS)
    return {
        "confidence": CONFIDENCE,
        "invariant": {"flipped": flips, **_rate(flips, n_inv)},
        "sensitive": {"caught": caught, **_rate(caught, n_sen)},
        "kinds": kinds,
    }
