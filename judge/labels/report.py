"""`agreement_report`: human labels + verdicts -> the `judge agreement` JSON object.

Turns records into plain arrays and calls judge.stats; file mode and database mode both
end here. Breakdowns: by rubric (item id suffix), candidate (the system under test: the
verdict's `metadata.candidate`, else the label's — a trace's `candidate` record, shown as its
`agent` and `model`, or a string — else "(unknown)"), ledger key, state class and sensitivity
(metadata `key_class`, `key_sensitivity` of the verdict, else of the labels, else
"(unknown)"), annotator (each annotator's newest labels against the judge) and juror (each
juror of a jury verdict against the reference labels, from `metadata.jury`; the top-level
figures are the jury's own). `jury` sums up the jury verdicts (None when there are none).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict, parse_item_id
from judge.formats.jury import juror_verdicts, jury_record
from judge.labels.reference import ReferenceLabel, ReferenceSet, reference_labels
from judge.stats import (
    cohen_kappa,
    compute_agreement,
    grouped_agreement,
    krippendorff_alpha_nominal,
)

UNKNOWN = "(unknown)"
NO_KEY = "(none)"


def rubric_of(item: str, verdict: Verdict | None = None) -> str:
    """The rubric of an item: its id suffix, else the verdict's `rubric`, else "(unknown)"."""
    try:
        return parse_item_id(item)[2]
    except ValueError:
        return verdict.rubric if verdict is not None and verdict.rubric else UNKNOWN


def _meta(field: str, verdict: Verdict, ref: ReferenceLabel | None) -> str:
    value = verdict.metadata.get(field)
    if value is None and ref is not None:
        value = ref.metadata.get(field)
    return UNKNOWN if value is None else str(value)


def _candidate(verdict: Verdict, ref: ReferenceLabel | None) -> str:
    """The system under test of an item, for the `candidate` breakdown."""
    value = verdict.metadata.get("candidate")
    if value is None and ref is not None:
        value = ref.metadata.get("candidate")
    if isinstance(value, dict):
        value = " / ".join(str(value[k]) for k in ("agent", "model")
                           if isinstance(value.get(k), str | int) and value.get(k) != "")
    if not isinstance(value, str) or not value:
        return UNKNOWN
    return value[:200]  # a name from a file: bounded


def _key_group(ref: ReferenceLabel, verdict: Verdict) -> str:
    key = verdict.metadata.get("key") or ref.metadata.get("key")
    return str(key or ref.violated_key or verdict.violated_key or NO_KEY)


def index_verdicts(verdicts: Sequence[Verdict]) -> dict[str, Verdict]:
    """item id -> verdict; a second verdict for one item is an InputError."""
    out: dict[str, Verdict] = {}
    for v in verdicts:
        if v.item_id in out:
            raise InputError(f"duplicate verdicts for item {v.item_id!r}", field="item_id")
        out[v.item_id] = v
    return out


def human_human_agreement(refs: ReferenceSet) -> dict[str, Any] | None:
    """Agreement among annotators on items with two or more pass/fail newest labels.

    Cohen's kappa when exactly two annotators labelled those items, Krippendorff's alpha
    (nominal) always; percent_agreement is the share of items where every vote agrees.
    None when no item has two such labels.
    """
    items = sorted(i for i, by in refs.newest.items()
                   if sum(1 for lab in by.values() if lab.label != "unsure") >= 2)
    if not items:
        return None
    annotators = sorted({a for i in items for a, lab in refs.newest[i].items()
                         if lab.label != "unsure"})
    row = {a: k for k, a in enumerate(annotators)}
    data = np.full((len(annotators), len(items)), -1, dtype=np.int64)
    for col, item in enumerate(items):
        for a, lab in refs.newest[item].items():
            if lab.label != "unsure":
                data[row[a], col] = 1 if lab.label == "fail" else 0
    present = data >= 0
    fails = np.where(present, data, 0).sum(axis=0)
    votes = present.sum(axis=0)
    unanimous = (fails == 0) | (fails == votes)
    reasons: dict[str, str] = {}
    alpha = krippendorff_alpha_nominal(data)
    if not np.isfinite(alpha):
        reasons["krippendorff_alpha"] = "undefined: every vote used the same label"
    out: dict[str, Any] = {
        "n_items": len(items),
        "n_annotators": len(annotators),
        "annotators": annotators,
        "percent_agreement": float(unanimous.mean()),
        "krippendorff_alpha": float(alpha) if np.isfinite(alpha) else None,
        "cohen_kappa": None,
    }
    if len(annotators) == 2:
        kappa = cohen_kappa(data[0], data[1])
        out["cohen_kappa"] = kappa if np.isfinite(kappa) else None
        if out["cohen_kappa"] is None:
            reasons["cohen_kappa"] = "undefined: both annotators gave every item one label"
    else:
        reasons["cohen_kappa"] = "needs exactly two annotators; see krippendorff_alpha"
    out["reasons"] = reasons
    return out


def agreement_report(
    labels: Sequence[HumanLabel],
    verdicts: Sequence[Verdict],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    breakdown_n_boot: int = 200,
) -> dict[str, Any]:
    """Agreement of verdicts with the reference labels: every key of formats §5, plus
    `breakdowns`, `human_human` and counts of what matched.

    InputError when the two share no item or a verdict is duplicated.
    """
    by_item = index_verdicts(verdicts)
    refs = reference_labels(labels)
    items = sorted(i for i in refs.labels if i in by_item)
    tied = [i for i in refs.tied if i in by_item]
    if not items and not tied:
        raise InputError("labels and verdicts share no item (compare their item_id values)",
                         field="item_id")
    pairs = [(refs.labels[i], by_item[i]) for i in items]
    all_verdicts = [by_item[i] for i in sorted(by_item)]  # input order must not matter
    judge_all = [v.label for v in all_verdicts]

    arrays: dict[str, Any] = {
        "human": [r.label for r, _ in pairs],
        "judge": [v.label for _, v in pairs],
        "human_keys": [r.violated_key for r, _ in pairs],
        "judge_keys": [v.violated_key for _, v in pairs],
        "human_evidence": [r.evidence_event for r, _ in pairs],
        "judge_evidence": [v.evidence_event for _, v in pairs],
    }
    out = compute_agreement(**arrays, judge_all=judge_all, n_tied=len(tied),
                            n_boot=n_boot, seed=seed)
    out["n_labels"] = len(labels)
    out["n_verdicts"] = len(verdicts)
    out["n_labelled_items"] = len(refs.newest)
    out["n_matched_items"] = len(items) + len(tied)
    out["n_labelled_without_verdict"] = sum(1 for i in refs.newest if i not in by_item)

    position = {v.item_id: k for k, v in enumerate(all_verdicts)}
    labelled_at = [position[i] for i in items]

    def by(fn: Callable[[ReferenceLabel | None, Verdict], str] | None,
           labelled_fn: Callable[[ReferenceLabel, Verdict], str] | None = None,
           ) -> dict[str, dict[str, Any]]:
        """Group every verdict with `fn` (labelled ones see their reference), or only the
        labelled items with `labelled_fn` (then no corrected pass rate per group)."""
        everyone: list[str] | None = None
        if fn is not None:
            everyone = [fn(refs.labels.get(v.item_id), v) for v in all_verdicts]
            labelled = [everyone[k] for k in labelled_at]
        else:
            assert labelled_fn is not None
            labelled = [labelled_fn(r, v) for r, v in pairs]
        return grouped_agreement(labelled, **arrays, groups_all=everyone,
                                 judge_all=judge_all if everyone is not None else None,
                                 n_boot=breakdown_n_boot, seed=seed)

    breakdowns: dict[str, dict[str, dict[str, Any]]] = {
        "rubric": by(lambda r, v: rubric_of(v.item_id, v)),
        "candidate": by(lambda r, v: _candidate(v, r)),
        "key": by(None, _key_group),
        "key_class": by(lambda r, v: _meta("key_class", v, r)),
        "sensitivity": by(lambda r, v: _meta("key_sensitivity", v, r)),
        "annotator": _by_annotator(refs, by_item, judge_all, breakdown_n_boot, seed),
        "juror": _by_juror(refs, all_verdicts, items, breakdown_n_boot, seed),
    }
    out["jury"] = jury_summary(all_verdicts)
    out["breakdowns"] = breakdowns
    out["human_human"] = human_human_agreement(refs)
    if out["human_human"] is None:
        out["reasons"]["human_human"] = "no item has pass/fail labels from two annotators"
    return out


def _by_annotator(
    refs: ReferenceSet, by_item: dict[str, Verdict], judge_all: Sequence[str], n_boot: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for annotator in refs.annotators:
        mine = sorted(((i, by[annotator]) for i, by in refs.newest.items()
                       if annotator in by and i in by_item), key=lambda t: t[0])
        if not mine:
            continue
        out[annotator] = compute_agreement(
            [lab.label for _, lab in mine],
            [by_item[i].label for i, _ in mine],
            judge_all=judge_all,
            human_keys=[lab.violated_key for _, lab in mine],
            judge_keys=[by_item[i].violated_key for i, _ in mine],
            human_evidence=[lab.evidence_event for _, lab in mine],
            judge_evidence=[by_item[i].evidence_event for i, _ in mine],
            n_boot=n_boot, seed=seed,
        )
    return out


def _by_juror(refs: ReferenceSet, verdicts: Sequence[Verdict], labelled: Sequence[str],
              n_boot: int, seed: int) -> dict[str, dict[str, Any]]:
    """Each juror's verdicts (kept in the jury verdicts' records) against the reference
    labels; the corrected pass rate over every item that juror judged."""
    seats: dict[str, dict[str, Verdict]] = {}
    for v in verdicts:
        for juror, jv in juror_verdicts(v).items():
            seats.setdefault(juror, {})[v.item_id] = jv
    out: dict[str, dict[str, Any]] = {}
    for juror in sorted(seats):
        mine = seats[juror]
        pairs = [(refs.labels[i], mine[i]) for i in labelled if i in mine]
        if not pairs:
            continue
        out[juror] = compute_agreement(
            [r.label for r, _ in pairs], [jv.label for _, jv in pairs],
            judge_all=[mine[i].label for i in sorted(mine)],
            human_keys=[r.violated_key for r, _ in pairs],
            judge_keys=[jv.violated_key for _, jv in pairs],
            human_evidence=[r.evidence_event for r, _ in pairs],
            judge_evidence=[jv.evidence_event for _, jv in pairs],
            n_boot=n_boot, seed=seed)
    return out


def jury_summary(verdicts: Sequence[Verdict]) -> dict[str, Any] | None:
    """How the jury verdicts among `verdicts` came about: how many, by which juries, how
    many split, and their mean winning vote share (None when no verdict is a jury's)."""
    records = [r for v in verdicts if (r := jury_record(v)) is not None]
    if not records:
        return None
    shares = [s for r in records if (s := _share(r.get("vote_share"))) is not None]
    splits = sum(1 for r in records if r.get("split") is True)
    names = {r["name"][:300] for r in records if isinstance(r.get("name"), str)}
    return {
        "n_verdicts": len(records),
        "names": sorted(names)[:50],  # a verdicts file is hostile: a bounded list
        "n_split": splits,
        "split_rate": splits / len(records),
        "mean_vote_share": sum(shares) / len(shares) if shares else None,
    }


def _share(value: object) -> float | None:
    """A vote share from a verdicts file: a number in [0, 1], else None (a hostile or
    hand-edited record: NaN, 7, a 400-digit integer, a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        share = float(value)
    except OverflowError:
        return None
    return share if math.isfinite(share) and 0.0 <= share <= 1.0 else None
