"""Calibration on the database: re-grade a rubric's labelled items, check records are current,
compare two prompt versions, and build the agreement report from stored data.

Records live in two places: the database (Store.save_calibration) and files committed to git
under `calibration/<rubric>/<prompt_version>__<model>.json` in the working directory
(JUDGE_CALIBRATION_DIR overrides). Routing reads the database first, then the files
(`file_record`), so a record committed with the code calibrates a fresh database.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.calibration.build import MIN_PER_CLASS, build_record, check_enough
from judge.calibration.pairs import calibration_groups
from judge.calibration.record import (
    CalibrationRecord,
    find_record,
    load_records,
)
from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.labels import reference_labels
from judge.labels.report import rubric_of

if TYPE_CHECKING:
    from judge.grading.engine import GradingStats
    from judge.items import Item
    from judge.prompts import Prompt
    from judge.providers.base import Provider
    from judge.reports import AgreementReport
    from judge.settings import Settings
    from judge.store import Store

from judge.calibration.files import DEFAULT_DIR, ENV_DIR, file_record, records_dir

__all__ = ["DEFAULT_DIR", "ENV_DIR", "file_record", "records_dir"]


def stored_records(store: Store) -> list[CalibrationRecord]:
    """Every calibration record in the database (oldest first)."""
    out = []
    for i, data in enumerate(store.calibrations()):
        try:
            out.append(CalibrationRecord.model_validate(data))
        except ValueError as exc:
            raise InputError(f"stored calibration record {i + 1} is not valid: {exc}",
                             file=store.where, field="calibration") from None
    return out


# -- judge calibrate (database mode) --------------------------------------------------------
@dataclass
class LabelledItems:
    """A rubric's labelled items as stored: labels, the items to re-grade, what is missing."""

    labels: list[HumanLabel]
    items: list[Item]
    missing: list[str] = field(default_factory=list)  # labelled but not stored: cannot grade
    counts: dict[str, int] = field(default_factory=dict)  # human reference pass / fail


def labelled_items(store: Store, rubric: str) -> LabelledItems:
    """Items of `rubric` with a pass or fail reference label (judge.labels rules)."""
    from judge.items import Item

    labels = store.labels_for(rubric=rubric)
    labels = [lab for lab in labels if rubric_of(lab.item_id) == rubric]
    refs = {i: r for i, r in reference_labels(labels).labels.items() if r.label != "unsure"}
    items: list[Item] = []
    missing: list[str] = []
    stored_data = store.get_items(sorted(refs))
    for item_id in sorted(refs):
        data = stored_data.get(item_id)
        if data is None:
            missing.append(item_id)
        else:
            items.append(Item.from_dict(data))
    stored = {it.item_id for it in items}
    counts = Counter(r.label for i, r in refs.items() if i in stored)
    return LabelledItems(labels=labels, items=items, missing=missing,
                         counts={"pass": counts.get("pass", 0), "fail": counts.get("fail", 0)})


@dataclass
class CalibrationRun:
    """What `calibrate_rubric` did: the record, the verdicts it was fitted on, grading stats."""

    record: CalibrationRecord
    verdicts: list[Verdict]
    stats: GradingStats
    n_missing_items: int
    path: Path | None = None
    run_id: str | None = None


def calibration_run_id(rubric: str, prompt_version: str, model: str) -> str:
    """The run the re-graded verdicts are stored under: one per (rubric, version, model)."""
    return f"calibrate/{rubric}/{prompt_version}/{model}"


def calibrate_rubric(
    store: Store,
    rubric: str,
    provider: Provider,
    settings: Settings,
    *,
    prompt: Prompt | None = None,
    target: float = 0.95,
    seed: int = 0,
    min_per_class: int = MIN_PER_CLASS,
    root: str | Path | None = None,
    write_file: bool = True,
    store_verdicts: bool = True,
    on_result: Callable[[Verdict], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> CalibrationRun:
    """Re-grade every labelled item of `rubric` with its current prompt (or `prompt`) and
    `provider` through the store's call cache, fit a record, write it under
    `records_dir(root)` and store it in the database. The provider is closed afterwards.

    Too few labels per human class is refused (TooFewLabelsError, saying how many more are
    needed) before any provider call; again after grading if unscored verdicts leave too few.
    The re-graded verdicts are stored (unrouted) under `calibration_run_id(...)`, so
    `judge calibrate --compare` and reports can read them.
    """
    from judge.grading.engine import GradingStats, grade_items
    from judge.prompts import load_prompt

    prompt = prompt or load_prompt(rubric)
    found = labelled_items(store, rubric)
    what = f"rubric {rubric} (prompt {prompt.version}, model {provider.spec})"
    if not found.items:
        extra = f" ({len(found.missing)} labelled items are not stored)" if found.missing else ""
        raise InputError(f"no labelled items of rubric '{rubric}' in the database{extra}",
                         file=store.where, field="rubric")
    human_fail = [0] * found.counts["pass"] + [1] * found.counts["fail"]
    check_enough(what, human_fail, min_per_class)
    stats = GradingStats()
    if on_start is not None:
        on_start(len(found.items))

    async def regrade() -> list[Verdict]:
        try:
            return await grade_items(
                found.items, prompt, provider, store.calls, params=settings.model_params(),
                concurrency=settings.concurrency, rpm=settings.rpm, retries=settings.retries,
                on_result=on_result, stats=stats)
        finally:
            await provider.aclose()

    verdicts = asyncio.run(regrade())
    groups = calibration_groups(found.labels, verdicts, rubric=rubric,
                                verdicts_file=f"re-graded verdicts of {rubric}")
    group = next((g for g in groups if g.prompt_hash == prompt.hash
                  and g.model == provider.spec), groups[0])
    record = build_record(
        group.conf, group.agreed, group.human_fail_array, rubric=rubric,
        prompt_version=prompt.version, prompt_hash=prompt.hash, model=provider.spec,
        label_set_hash=group.label_set_hash, n_labelled=group.n_labelled, target=target,
        seed=seed, min_per_class=min_per_class)
    run = CalibrationRun(record=record, verdicts=verdicts, stats=stats,
                         n_missing_items=len(found.missing))
    if store_verdicts:
        run.run_id = calibration_run_id(rubric, prompt.version, provider.spec)
        store.save_verdicts(verdicts, run.run_id)
    if write_file:
        run.path = record.save(records_dir(root))
    store.save_calibration(record)
    return run


# -- judge calibrate --check -----------------------------------------------------------------
def label_counts(store: Store, rubric: str | None = None) -> dict[str, int]:
    """Items per rubric that carry a pass or fail reference label in the database."""
    refs = reference_labels(store.labels_for(rubric=rubric)).labels
    counts = Counter(rubric_of(i) for i, r in refs.items() if r.label != "unsure")
    if rubric is not None:
        return {rubric: counts.get(rubric, 0)}
    return dict(counts)


def database_exists(url: str | None) -> bool:
    """Whether there is a database to consult (a SQLite file must exist; a server URL is
    taken as existing). Checking never creates a database."""
    from judge.store.db import database_url

    resolved = database_url(url)
    if not resolved.startswith("sqlite"):
        return True
    path = resolved.split(":///", 1)[-1] if ":///" in resolved else ""
    return bool(path) and path != ":memory:" and Path(path).is_file()


# -- judge calibrate --compare OLD NEW (database) ------------------------------------------
def compare_versions(store: Store, rubric: str, old: str, new: str, *,
                     model: str | None = None, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, Any]:
    """Two prompt versions' stored verdicts on `rubric` against the human labels, side by
    side, and the items whose verdict flipped (judge.calibration.compare_verdicts)."""
    from judge.calibration.compare import compare_verdicts

    sides: list[list[Verdict]] = []
    for version in (old, new):
        verdicts = store.verdicts_for(rubric, prompt_version=version, model=model)
        if not verdicts:
            raise InputError(
                f"no stored verdicts for rubric {rubric!r}, prompt version {version!r}"
                + (f", model {model!r}" if model else "")
                + " (grade them with judge run, or judge calibrate with that prompt version)",
                file=store.where, field="prompt_version")
        sides.append(verdicts)
    ids = {v.item_id for side in sides for v in side}
    labels = store.labels_for(ids)
    if not labels:
        raise InputError(f"no stored labels for the {len(ids)} items of rubric {rubric!r}",
                         file=store.where, field="rubric")
    result = compare_verdicts(labels, sides[0], sides[1], n_boot=n_boot, seed=seed)
    result["rubric"] = rubric
    return result


# -- judge report agreement (database) ------------------------------------------------------
def queue_stats(store: Store, rubric: str) -> dict[str, Any]:
    """Live review-queue statistics of one rubric: entries by state and reason, pending."""
    entries = store.queue.entries(state=None, rubric=rubric)
    by_state = Counter(e.state for e in entries)
    pending = [e for e in entries if e.state != "done"]
    return {
        "total": len(entries),
        "by_state": {s: by_state.get(s, 0) for s in ("open", "claimed", "done")},
        "by_reason": dict(sorted(Counter(e.reason for e in entries).items())),
        "pending_by_reason": dict(sorted(Counter(e.reason for e in pending).items())),
        "safety_critical_pending": sum(1 for e in pending if e.safety_critical),
        "double_labelled": {"items": sum(1 for e in entries if e.required > 1),
                            "done": sum(1 for e in entries
                                        if e.required > 1 and e.state == "done")},
    }


def report_from_store(
    store: Store,
    rubric: str,
    *,
    prompt_version: str | None = None,
    model: str | None = None,
    calibration_root: str | Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """The agreement report of `rubric` from the database: the newest stored verdict per item
    (optionally one prompt version / model), the items' label history, the calibration record
    of the verdicts' (prompt hash, model) when they share one (database first, then files),
    and the routing and live review-queue statistics."""
    import numpy as np

    from judge.labels import agreement_report
    from judge.reports import build_report, review_stats

    verdicts = store.verdicts_for(rubric, prompt_version, model)
    if not verdicts:
        raise InputError(f"no stored verdicts for rubric {rubric!r}"
                         + (f", prompt version {prompt_version!r}" if prompt_version else "")
                         + (f", model {model!r}" if model else ""),
                         file=store.where, field="rubric")
    labels = store.labels_for([v.item_id for v in verdicts])
    if not labels:
        raise InputError(f"no stored labels for the {len(verdicts)} items of rubric {rubric!r}",
                         file=store.where, field="rubric")
    agreement = agreement_report(labels, verdicts, n_boot=n_boot, seed=seed)
    refs = reference_labels(labels).labels
    paired = [(refs[v.item_id].label, v) for v in verdicts
              if v.item_id in refs and refs[v.item_id].label != "unsure"
              and v.label != "unscored" and v.confidence is not None]
    record = _record_for(store, [v for _, v in paired], calibration_root)
    review = review_stats(verdicts, record) or {"n_routed": 0}
    review["queue"] = queue_stats(store, rubric)
    sources = {"database": store.where, "rubric": rubric}
    if prompt_version:
        sources["prompt_version"] = prompt_version
    if model:
        sources["model"] = model
    if record is not None:
        sources["calibration"] = f"{record.prompt_version}__{record.model} " \
                                 f"({record.created_at:%Y-%m-%d %H:%M})"
    return build_report(
        agreement,
        confidence=np.array([v.confidence for _, v in paired], dtype=np.float64)
        if paired else None,
        agreed=np.array([h == v.label for h, v in paired], dtype=np.float64) if paired else None,
        judge_fail=np.array([v.label == "fail" for _, v in paired]) if paired else None,
        record=record, review=review, sources=sources,
        title=f"Judge agreement report: {rubric}")


def _record_for(store: Store, paired: Sequence[Verdict],
                root: str | Path | None) -> CalibrationRecord | None:
    triples = {(v.rubric or rubric_of(v.item_id, v), v.prompt_hash, v.model or "unknown")
               for v in paired}
    if len(triples) != 1:
        return None
    (rubric, phash, model), = triples
    from judge.calibration.lookup import find_calibration

    found = find_calibration(store, rubric, phash, model) if phash else None
    if isinstance(found, CalibrationRecord):
        return found
    if root is not None:
        return find_record(load_records(root), rubric, phash, model)
    return None
