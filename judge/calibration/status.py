"""Whether every rubric's calibration is current (`judge calibrate check`).

Gathers what judge.calibration.staleness judges: each rubric's current prompt (the newest
version under the prompts folder) with the model, the records (committed files, and the
database's when there is one), and how many items carry a pass/fail reference label (from a
labels file, else the database). Checking never creates a database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from judge.calibration.record import CalibrationRecord, load_records
from judge.calibration.staleness import Current, stale_rubrics
from judge.errors import ConfigError, InputError
from judge.formats import HumanLabel
from judge.labels import read_labels, reference_labels
from judge.labels.report import rubric_of

if TYPE_CHECKING:
    from judge.store import Store


@dataclass
class CalibrationStatus:
    """The (rubric, prompt, model) triples checked and one reason per stale one."""

    model: str
    current: list[Current]
    stale: list[str]


def current_prompts(model: str, rubric: str | None = None) -> list[Current]:
    """(rubric, default prompt version, its hash, model) per rubric with prompt files: the
    newest version that is not a draft (judge.prompts.files; a draft `judge align` wrote is
    not graded, so it needs no record until it is accepted)."""
    from judge.prompts.files import list_prompts, version_key

    latest: dict[str, tuple[str, str]] = {}
    for p in list_prompts():
        if p.is_draft:
            continue
        old = latest.get(p.rubric)
        if old is None or version_key(p.version) > version_key(old[0]):
            latest[p.rubric] = (p.version, p.hash)
    if rubric is not None:
        if rubric not in latest:
            raise ConfigError(f"unknown rubric '{rubric}': no prompt files for it")
        latest = {rubric: latest[rubric]}
    return [(r, v, h, model) for r, (v, h) in sorted(latest.items())]


def label_counts(labels: Iterable[HumanLabel], rubric: str | None = None) -> dict[str, int]:
    """Items per rubric that carry a pass or fail reference label (only `rubric`: that one,
    zero when it has none)."""
    refs = reference_labels(labels).labels
    counts = Counter(rubric_of(i) for i, r in refs.items() if r.label != "unsure")
    if rubric is not None:
        return {rubric: counts.get(rubric, 0)}
    return dict(counts)


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


def database_exists(url: str | None) -> bool:
    """Whether there is a database to consult (a SQLite file must exist; a server URL is
    taken as existing). Checking never creates a database."""
    from judge.store.db import database_url

    resolved = database_url(url)
    if not resolved.startswith("sqlite"):
        return True
    path = resolved.split(":///", 1)[-1] if ":///" in resolved else ""
    return bool(path) and path != ":memory:" and Path(path).is_file()


def check_calibration(
    model: str,
    records_root: str | Path,
    *,
    labels: str | Path | None = None,
    database_url: str | None = None,
    rubric: str | None = None,
    grow_share: float = 0.2,
) -> CalibrationStatus:
    """Check every rubric (or `rubric`) with `model` against the records under
    `records_root` and, when the database exists, the stored ones. Label growth is counted
    from the `labels` file when given, else from the database."""
    current = current_prompts(model, rubric)
    counts = None if labels is None else label_counts(read_labels(labels))
    records = load_records(records_root)
    if database_exists(database_url):
        from judge.store import open_store

        with open_store(database_url) as store:
            records += stored_records(store)
            if counts is None:
                counts = label_counts(store.labels_for(rubric=rubric), rubric)
    stale: list[str] = []
    for cur in current:  # one at a time, to say which reason belongs to an aligned version
        stale += [aligned_hint(cur, reason)
                  for reason in stale_rubrics(records, [cur], counts, grow_share)]
    return CalibrationStatus(model=model, current=current, stale=stale)


def aligned_hint(current: Current, reason: str) -> str:
    """`reason` (why `current` is stale), saying so when the version is one `judge align`
    wrote: its parent's records do not carry over (another prompt hash), so until `judge
    calibrate fit` runs on it every verdict of it goes to review."""
    from judge.prompts.files import load_prompt

    rubric, version, phash, _model = current
    try:
        prompt = load_prompt(rubric, version)
    except ConfigError:
        return reason
    if prompt.aligned is None or prompt.hash != phash:
        return reason
    return (f"{reason}; {version} was aligned from {prompt.aligned.get('parent')} by judge "
            f"align and is uncalibrated until fitted (judge calibrate fit --rubric {rubric})")
