"""Where an agreement's labels and verdicts come from: two files, or the database.

`judge agreement` and `judge report agreement` both start here, so both read, filter and
refuse the same way. From the database: the newest stored verdict per item of a rubric
(optionally one prompt version / model) and the whole label history of those items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.labels.files import read_labels, read_verdicts
from judge.labels.report import rubric_of

if TYPE_CHECKING:
    from judge.store import Store


@dataclass
class LabelledVerdicts:
    """Labels (history), verdicts (one per item) and where they came from, for a report."""

    labels: list[HumanLabel]
    verdicts: list[Verdict]
    sources: dict[str, str] = field(default_factory=dict)


def from_files(labels_path: str | Path, verdicts_path: str | Path, *,
               rubric: str | None = None) -> LabelledVerdicts:
    """Both files, optionally only `rubric`'s items; InputError naming the labels file when
    the two share no item."""
    labels = read_labels(labels_path)
    verdicts = read_verdicts(verdicts_path)
    if rubric is not None:
        verdicts = [v for v in verdicts if rubric_of(v.item_id, v) == rubric]
        labels = [lab for lab in labels if rubric_of(lab.item_id) == rubric]
    labelled = {lab.item_id for lab in labels}
    if not any(v.item_id in labelled for v in verdicts):
        of = f" of rubric {rubric!r}" if rubric is not None else ""
        raise InputError(
            f"shares no item{of} with {verdicts_path} ({len(labelled)} labelled items, "
            f"{len(verdicts)} verdicts; compare their item_id values)",
            file=str(labels_path), field="item_id")
    return LabelledVerdicts(labels, verdicts,
                            {"labels": str(labels_path), "verdicts": str(verdicts_path)})


def from_store(store: Store, rubric: str, *, prompt_version: str | None = None,
               model: str | None = None) -> LabelledVerdicts:
    """The newest stored verdict per item of `rubric` (filters optional) and the labels of
    those items; InputError naming the database when either is missing."""
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
    sources = {"database": store.where, "rubric": rubric}
    if prompt_version:
        sources["prompt_version"] = prompt_version
    if model:
        sources["model"] = model
    return LabelledVerdicts(labels, verdicts, sources)
