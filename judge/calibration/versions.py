"""Two prompt versions of a rubric compared on the database (`judge calibrate compare OLD NEW
--rubric R`): their stored verdicts against the items' human labels, side by side, and the
items whose verdict flipped (judge.calibration.compare)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from judge.calibration.compare import compare_verdicts
from judge.errors import InputError
from judge.formats import Verdict

if TYPE_CHECKING:
    from judge.store import Store


def compare_versions(store: Store, rubric: str, old: str, new: str, *,
                     model: str | None = None, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, Any]:
    """The newest stored verdict per item of each prompt version (optionally of one model)
    and the labels of every item either side judged; InputError when a side has none."""
    sides: list[list[Verdict]] = []
    for version in (old, new):
        verdicts = store.verdicts_for(rubric, prompt_version=version, model=model)
        if not verdicts:
            raise InputError(
                f"no stored verdicts for rubric {rubric!r}, prompt version {version!r}"
                + (f", model {model!r}" if model else "")
                + " (grade them with judge run, or judge calibrate fit with that prompt "
                  "version)",
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
