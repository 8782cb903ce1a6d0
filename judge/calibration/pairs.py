"""Pair human labels with verdicts, per (rubric, prompt version, prompt hash, model).

Reference label of an item (formats §4): the majority of each annotator's newest label; a tie
leaves the item out, and a majority of `unsure` leaves it out too. Verdicts without a
confidence or `unscored` cannot be calibrated and are counted, not used.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from judge.calibration.metrics import FloatArray
from judge.errors import InputError
from judge.formats import HumanLabel, Verdict, parse_item_id

M = TypeVar("M", bound=BaseModel)


def read_jsonl(path: str | Path, model: type[M]) -> list[M]:
    """Every line of a JSONL file as `model`; errors name the file, line and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(p)) from exc
    out: list[M] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", file=str(p), line=n) from exc
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or None
            raise InputError(err["msg"], file=str(p), line=n, field=where) from exc
    return out


def reference_labels(labels: Iterable[HumanLabel]) -> tuple[dict[str, HumanLabel], int]:
    """item_id -> the label standing for the majority (pass/fail only); and how many tied."""
    newest: dict[tuple[str, str], HumanLabel] = {}
    for lab in labels:
        key = (lab.item_id, lab.annotator)
        old = newest.get(key)
        if old is None or lab.created_at >= old.created_at:
            newest[key] = lab
    by_item: dict[str, list[HumanLabel]] = defaultdict(list)
    for (item, _), lab in newest.items():
        by_item[item].append(lab)
    refs: dict[str, HumanLabel] = {}
    tied = 0
    for item, labs in by_item.items():
        counts = Counter(lab.label for lab in labs).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            tied += 1
            continue
        winner = counts[0][0]
        if winner in ("pass", "fail"):
            refs[item] = max((lab for lab in labs if lab.label == winner),
                             key=lambda lab: lab.created_at)
    return refs, tied


def label_set_hash(items: Iterable[tuple[str, str]]) -> str:
    """sha256 over the sorted (item_id, reference label) pairs."""
    h = hashlib.sha256()
    for item, label in sorted(items):
        h.update(f"{item}\t{label}\n".encode())
    return "sha256:" + h.hexdigest()


def rubric_of(v: Verdict) -> str:
    if v.rubric:
        return v.rubric
    try:
        return parse_item_id(v.item_id)[2]
    except ValueError:
        return "unknown"


def _label_rubric(item: str) -> str:
    try:
        return parse_item_id(item)[2]
    except ValueError:
        return "unknown"


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
) -> list[CalibrationGroup]:
    """One group per (rubric, prompt_version, prompt_hash, model) with its labelled items."""
    refs, _ = reference_labels(labels)
    ref_by_rubric: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for item, lab in refs.items():
        ref_by_rubric[_label_rubric(item)].append((item, lab.label))
    groups: dict[tuple[str, str, str | None, str], CalibrationGroup] = {}
    seen: set[tuple[str, str, str | None, str, str]] = set()
    for n, v in enumerate(verdicts, start=1):
        r = rubric_of(v)
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
        ref = refs.get(v.item_id)
        if ref is None:
            continue
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
