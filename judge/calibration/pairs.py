"""Pair human labels with verdicts, per (rubric, prompt version, prompt hash, model).

Reference labels come from judge.labels (formats §4: majority of each annotator's newest
label; ties and `unsure` references are left out). Verdicts without a confidence or
`unscored` cannot be calibrated and are counted, not used.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from judge.calibration.metrics import FloatArray
from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.labels.reference import reference_labels
from judge.labels.report import rubric_of


def label_set_hash(items: Iterable[tuple[str, str]]) -> str:
    """sha256 over the sorted (item_id, reference label) pairs."""
    h = hashlib.sha256()
    for item, label in sorted(items):
        h.update(f"{item}\t{label}\n".encode())
    return "sha256:" + h.hexdigest()


@dataclass
class CalibrationGroup:
    rubric: str
    prompt_version: str
    prompt_hash: str | None
    model: str
    item_ids: list[str] = field(default_factory=list)
    confidence: list[float] = field(default_factory=list)
    judge_fail: list[bool] = field(default_factory=list)
    human_fail: list[bool] = field(default_factory=list)
    n_unscored: int = 0
    n_no_confidence: int = 0
    n_labelled: int = 0
    label_set_hash: str = ""

    @property
    def conf(self) -> FloatArray:
        return np.asarray(self.confidence, dtype=np.float64)

    @property
    def agreed(self) -> FloatArray:
        same = np.asarray(self.judge_fail, dtype=bool) == np.asarray(self.human_fail, dtype=bool)
        return np.asarray(same, dtype=np.float64)

    @property
    def human_fail_array(self) -> np.ndarray:
        return np.asarray(self.human_fail, dtype=bool)


def calibration_groups(
    labels: Iterable[HumanLabel],
    verdicts: Iterable[Verdict],
    *,
    rubric: str | None = None,
    verdicts_file: str = "<verdicts>",
    line_numbers: Sequence[int] | None = None,
) -> list[CalibrationGroup]:
    """One group per (rubric, prompt_version, prompt_hash, model) with its labelled items.

    Two verdicts for one item within a group are an InputError naming `verdicts_file` and
    the line (`line_numbers[i]` for the i-th verdict, else its 1-based position).
    """
    refs = {i: r for i, r in reference_labels(labels).labels.items() if r.label != "unsure"}
    ref_by_rubric: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for item, ref in refs.items():
        ref_by_rubric[rubric_of(item)].append((item, ref.label))
    groups: dict[tuple[str, str, str | None, str], CalibrationGroup] = {}
    seen: set[tuple[str, str, str | None, str, str]] = set()
    for pos, v in enumerate(verdicts):
        n = line_numbers[pos] if line_numbers is not None else pos + 1
        r = rubric_of(v.item_id, v)
        if rubric is not None and r != rubric:
            continue
        key = (r, v.prompt_version or "unversioned", v.prompt_hash, v.model or "unknown")
        dup = (*key, v.item_id)
        if dup in seen:
            raise InputError(f"duplicate verdict for item {v.item_id} (same prompt and model)",
                             file=verdicts_file, line=n, field="item_id")
        seen.add(dup)
        g = groups.get(key)
        if g is None:
            g = groups[key] = CalibrationGroup(*key)
        if v.item_id not in refs:
            continue
        ref = refs[v.item_id]
        if v.label == "unscored":
            g.n_unscored += 1
            continue
        if v.confidence is None:
            g.n_no_confidence += 1
            continue
        g.item_ids.append(v.item_id)
        g.confidence.append(v.confidence)
        g.judge_fail.append(v.label == "fail")
        g.human_fail.append(ref.label == "fail")
    for g in groups.values():
        pairs = ref_by_rubric.get(g.rubric, [])
        g.n_labelled = len(pairs)
        g.label_set_hash = label_set_hash(pairs)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[0], k[1], k[2] or "", k[3]))]
