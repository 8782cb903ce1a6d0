"""Which rubrics need recalibrating (`judge calibrate check`).

A rubric is stale when its current (prompt hash, model) has no calibration record, or when
its labelled items have grown by more than `grow_share` since the newest matching record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judge.calibration.record import CalibrationRecord

Current = tuple[str, str, str | None, str]  # (rubric, prompt_version, prompt_hash, model)


def stale_rubrics(
    records: Sequence[CalibrationRecord],
    current: Sequence[Current],
    label_counts: Mapping[str, int] | None = None,
    grow_share: float = 0.2,
) -> list[str]:
    """One reason per stale (rubric, prompt, model); empty when every one is calibrated.

    `label_counts[rubric]` is how many items of the rubric carry a reference label now; a
    rubric missing from it (or label_counts None) is not checked for growth.
    """
    if grow_share < 0:
        raise ValueError("grow_share must be >= 0")
    reasons: list[str] = []
    for rubric, version, phash, model in current:
        matching = [
            r for r in records if r.rubric == rubric and r.prompt_hash == phash and r.model == model
        ]
        if not matching:
            other = sorted({r.prompt_version for r in records if r.rubric == rubric})
            have = f" (records exist for prompt {', '.join(other)})" if other else ""
            reasons.append(
                f"{rubric}: no calibration for prompt {version} ({phash}) with model {model}{have}"
            )
            continue
        newest = max(matching, key=lambda r: r.created_at)
        if label_counts is None or rubric not in label_counts:
            continue
        now = label_counts[rubric]
        base = newest.n_labelled
        if now > base * (1.0 + grow_share):
            grown = (now - base) / base if base else float("inf")
            reasons.append(
                f"{rubric}: labels grew from {base} to {now} (+{grown:.0%}) since the "
                f"calibration of {newest.created_at:%Y-%m-%d} (limit +{grow_share:.0%})"
            )
    return reasons
