"""Two judge versions side by side (`judge calibrate compare OLD NEW`).

Each side's agreement with the human reference, computed by judge.labels on its own verdicts,
then every item both judged whose label flipped, with both verdicts' evidence, key,
confidence and rationale, and whether the flip fixed or broke agreement with the human.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judge.formats import HumanLabel, Verdict
from judge.labels import agreement_report, reference_labels
from judge.labels.report import index_verdicts

SIDE_KEYS = ("n_items", "n_unscored", "accuracy", "cohen_kappa", "tpr", "tnr", "precision",
             "f1", "key_agreement", "evidence_agreement", "ci", "confusion")


def _identity(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    def common(values: list[str | None]) -> str | None:
        named = Counter(v for v in values if v)
        return named.most_common(1)[0][0] if named else None

    return {
        "prompt_version": common([v.prompt_version for v in verdicts]),
        "prompt_hash": common([v.prompt_hash for v in verdicts]),
        "model": common([v.model for v in verdicts]),
        "n_verdicts": len(verdicts),
    }


def _view(v: Verdict) -> dict[str, Any]:
    return {"label": v.label, "violated_key": v.violated_key, "evidence_event": v.evidence_event,
            "confidence": v.confidence, "rationale": v.rationale, "reason": v.reason}


def compare_verdicts(
    labels: Sequence[HumanLabel],
    old: Sequence[Verdict],
    new: Sequence[Verdict],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement of `old` and `new` side by side, and the items whose verdict label flipped."""
    old_by, new_by = index_verdicts(old), index_verdicts(new)
    sides: dict[str, Any] = {}
    for name, verdicts in (("old", old), ("new", new)):
        agreement = agreement_report(labels, verdicts, n_boot=n_boot, seed=seed)
        sides[name] = {**_identity(verdicts), **{k: agreement.get(k) for k in SIDE_KEYS}}
    refs = reference_labels(labels).labels
    common = sorted(set(old_by) & set(new_by))
    flipped: list[dict[str, Any]] = []
    for item in common:
        a, b = old_by[item], new_by[item]
        if a.label == b.label:
            continue
        ref = refs.get(item)
        human = ref.label if ref is not None and ref.label != "unsure" else None
        effect = None
        if human is not None:
            if b.label == human and a.label != human:
                effect = "fixed"
            elif a.label == human and b.label != human:
                effect = "broke"
        flipped.append({"item_id": item, "human": human, "effect": effect,
                        "old": _view(a), "new": _view(b)})
    effects = Counter(f["effect"] for f in flipped)
    return {
        "old": sides["old"],
        "new": sides["new"],
        "n_common": len(common),
        "n_flipped": len(flipped),
        "n_fixed": effects.get("fixed", 0),
        "n_broke": effects.get("broke", 0),
        "flipped": flipped,
    }


#: what `judge calibrate compare` shows of each side's stored probe figures (judge probe)
PROBE_KEYS = ("run_id", "prompt_version", "prompt_hash", "model", "n_items", "n_variants",
              "invariant", "sensitive", "kinds")


def probe_sides(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
                ) -> dict[str, Any]:
    """Two prompt versions' stored probe figures (`judge probe` summaries, or None where a
    version was not probed) side by side: `{"old", "new"}`, each the figures' `PROBE_KEYS`
    or None."""
    def side(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if not summary:
            return None
        return {k: summary.get(k) for k in PROBE_KEYS}

    return {"old": side(old), "new": side(new)}
