"""Calibrate a rubric from the database (`judge calibrate fit`): re-grade its labelled items
with the current prompt through the call cache, fit a record, write it and store it.

Records live in two places: the database (`Store.save_calibration`) and files committed to
git under `calibration/<rubric>/<prompt_version>__<model>.json` (JUDGE_CALIBRATION_DIR
overrides; judge.calibration.files). Routing reads the database first, then the files, so a
record committed with the code calibrates a fresh database.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judge.calibration.build import MIN_PER_CLASS, build_record, check_enough
from judge.calibration.files import records_dir
from judge.calibration.pairs import calibration_groups
from judge.calibration.record import CalibrationRecord
from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.labels import reference_labels
from judge.labels.report import rubric_of

if TYPE_CHECKING:
    from judge.grading.engine import GradingStats
    from judge.grading.jury import Jury
    from judge.items import Item
    from judge.prompts import Prompt
    from judge.providers.base import Provider
    from judge.settings import Settings
    from judge.store import Store


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
    jury: Jury | None = None,
) -> CalibrationRun:
    """Re-grade every labelled item of `rubric` with its current prompt (or `prompt`) and
    `provider` through the store's call cache, fit a record, write it under
    `records_dir(root)` and store it in the database. The provider is closed afterwards.

    Too few labels per human class is refused (TooFewLabelsError, saying how many more are
    needed) before any provider call; again after grading if unscored verdicts leave too few.
    `jury`: when it grades `rubric`, the record is the jury's (its confidence is the vote
    share or mean it was built with).
    The re-graded verdicts are stored (unrouted) under `calibration_run_id(...)`, so
    `judge calibrate compare` and reports can read them.
    """
    from judge.grading.engine import GradingStats, grade_items
    from judge.grading.jury import close_judges, judge_of
    from judge.prompts import load_prompt

    prompt = prompt or load_prompt(rubric)
    jury, model = judge_of(provider, jury, rubric)
    found = labelled_items(store, rubric)
    what = f"rubric {rubric} (prompt {prompt.version}, model {model})"
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
                on_result=on_result, stats=stats, jury=jury)
        finally:
            await close_judges(provider, jury)

    verdicts = asyncio.run(regrade())
    groups = calibration_groups(found.labels, verdicts, rubric=rubric,
                                verdicts_file=f"re-graded verdicts of {rubric}")
    group = next((g for g in groups if g.prompt_hash == prompt.hash
                  and g.model == model), groups[0])
    record = build_record(
        group.conf, group.agreed, group.human_fail_array, rubric=rubric,
        prompt_version=prompt.version, prompt_hash=prompt.hash, model=model,
        label_set_hash=group.label_set_hash, n_labelled=group.n_labelled, target=target,
        seed=seed, min_per_class=min_per_class)
    run = CalibrationRun(record=record, verdicts=verdicts, stats=stats,
                         n_missing_items=len(found.missing))
    if store_verdicts:
        run.run_id = calibration_run_id(rubric, prompt.version, model)
        store.save_verdicts(verdicts, run.run_id)  # as given: calibration runs route nothing
    if write_file:
        run.path = record.save(records_dir(root))
    store.save_calibration(record)
    return run
