"""Calibrate from a labels file and a verdicts file, no database (`judge calibrate files`).

One record per (rubric, prompt version, prompt hash, model) found in the verdicts, or only
those of `rubric`. Every refusal (too few labels in a human class) is raised together, so one
run says everything that is missing.
"""

from __future__ import annotations

from pathlib import Path

from judge.calibration.build import MIN_PER_CLASS, TooFewLabelsError, build_record
from judge.calibration.pairs import calibration_groups
from judge.calibration.record import CalibrationRecord
from judge.errors import ConfigError, InputError
from judge.labels import iter_verdicts, read_labels


def calibrate_files(
    labels: str | Path,
    verdicts: str | Path,
    *,
    target: float = 0.95,
    rubric: str | None = None,
    seed: int = 0,
    min_per_class: int = MIN_PER_CLASS,
) -> list[CalibrationRecord]:
    """One record per (rubric, prompt, model) in the verdicts; every refusal raised together
    (ConfigError, exit 2, naming how many more labels each class needs)."""
    labs = read_labels(labels)
    numbered = list(iter_verdicts(verdicts))
    groups = calibration_groups(
        labs, [v for _, v in numbered], rubric=rubric, verdicts_file=str(verdicts),
        line_numbers=[n for n, _ in numbered],
    )
    if not groups:
        what = f"no verdict of rubric '{rubric}'" if rubric else "no verdicts"
        raise InputError(what, file=str(verdicts))
    if not any(g.item_ids for g in groups):
        raise InputError(
            f"labels and verdicts share no item with a pass/fail label and a scored verdict "
            f"with a confidence ({labels})",
            file=str(verdicts),
        )
    records: list[CalibrationRecord] = []
    refusals: list[str] = []
    for g in groups:
        try:
            records.append(
                build_record(
                    g.conf, g.agreed, g.human_fail_array,
                    rubric=g.rubric, prompt_version=g.prompt_version, prompt_hash=g.prompt_hash,
                    model=g.model, label_set_hash=g.label_set_hash, n_labelled=g.n_labelled,
                    target=target, seed=seed, min_per_class=min_per_class,
                )
            )
        except TooFewLabelsError as exc:
            refusals.append(exc.message)
    if refusals:
        raise ConfigError("; ".join(refusals))
    return records
