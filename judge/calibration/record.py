"""The calibration record: what `judge calibrate` writes and routing reads.

Stored as `calibration/<rubric>/<prompt_version>__<model>.json` under a root folder; characters
outside [A-Za-z0-9._-] in path parts (':' and '/' in model names) become '-'.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import overload

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.calibration.fit import Calibrator, Method
from judge.errors import InputError
from judge.outputs import write_output

RECORD_VERSION = 1


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ReliabilityPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lo: float
    hi: float
    count: int
    mean_prob: float
    frac_agreed: float


class CalibrationMetrics(BaseModel):
    """Raw-confidence metrics beside held-out calibrated ones (never in-sample)."""

    model_config = ConfigDict(extra="forbid")

    agreement: float  # share of items where the judge agreed with the human reference
    n_agreed: int
    n_disagreed: int
    ece_raw: float
    brier_raw: float
    log_loss_raw: float
    ece: float  # held-out calibrated
    brier: float
    log_loss: float
    cv_log_loss: dict[str, float | None]  # per method tried; None if it diverged
    n_bins: int
    reliability_raw: list[ReliabilityPoint]
    reliability: list[ReliabilityPoint]


class CalibrationRecord(BaseModel):
    """One calibration of one (rubric, prompt version and hash, model)."""

    model_config = ConfigDict(extra="forbid")

    version: int = RECORD_VERSION
    rubric: str
    prompt_version: str
    prompt_hash: str | None
    model: str
    label_set_hash: str
    n: int  # items calibrated on: a human reference label and a scored verdict with confidence
    n_per_class: dict[str, int]  # by human reference label: {"pass": …, "fail": …}
    n_labelled: int  # items of the rubric with a reference label at calibration time
    metrics: CalibrationMetrics
    method: Method
    calibrator: Calibrator
    n_folds: int
    seed: int
    target: float
    alpha: float
    threshold: float | None  # None: no threshold reaches the target; every verdict to review
    expected_review_share: float
    held_out_accepted_agreement: float | None
    held_out_lower_bound: float | None
    created_at: datetime = Field(default_factory=_utcnow)

    @overload
    def calibrate(self, raw_conf: float, judge_fail: bool | None = None) -> float: ...

    @overload
    def calibrate(self, raw_conf: NDArray[np.float64],
                  judge_fail: NDArray[np.bool_] | None = None) -> NDArray[np.float64]: ...

    def calibrate(self, raw_conf: float | NDArray[np.float64],
                  judge_fail: bool | NDArray[np.bool_] | None = None
                  ) -> float | NDArray[np.float64]:
        """P(judge agrees with a human) for a raw confidence (scalar or array).

        `judge_fail`: whether the judge said fail; required by per-label calibrators."""
        out = self.calibrator.predict(raw_conf, judge_fail)
        if np.ndim(raw_conf) == 0:
            return float(out)
        return out

    @property
    def needs_label(self) -> bool:
        return self.method.endswith("_by_label")

    def auto_accepts(self, raw_conf: float, judge_fail: bool | None = None) -> bool:
        """Whether routing may auto-accept a verdict with this raw confidence (and label)."""
        return self.threshold is not None and \
            self.calibrate(raw_conf, judge_fail) >= self.threshold

    def path(self, root: str | Path) -> Path:
        return record_path(root, self.rubric, self.prompt_version, self.model)

    def save(self, root: str | Path) -> Path:
        """Write the record as JSON under root; returns the file written."""
        target = self.path(root)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the records folder ({exc.strerror or exc})",
                             file=str(target.parent)) from None
        write_output(target, self.model_dump_json(indent=2) + "\n")  # atomic, no .tmp left
        return target


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_part(value: str) -> str:
    """A path component: ':' '/' and other unsafe characters become '-'."""
    cleaned = _UNSAFE.sub("-", value).strip(".")
    return cleaned or "-"


def record_path(root: str | Path, rubric: str, prompt_version: str, model: str) -> Path:
    """Where a record is written (records are found by content, not by this name). A
    jury's name loses its `* + [ ] :` to `safe_part`, so two juries (`a*3+b` and `a-3+b`)
    could share a file: a jury's file name ends with a digest of its real name."""
    name = safe_part(model)
    if model.startswith("jury["):
        name = f"{name[:120]}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:10]}"
    return Path(root) / safe_part(rubric) / f"{safe_part(prompt_version)}__{name}.json"


def load_record(path: str | Path) -> CalibrationRecord:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(p)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", file=str(p), line=exc.lineno) from exc
    try:
        return CalibrationRecord.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InputError(err["msg"], file=str(p), field=where or None) from exc


def load_records(root: str | Path) -> list[CalibrationRecord]:
    """Every record under root (`<rubric>/*.json`); an absent root holds none."""
    base = Path(root)
    if not base.is_dir():
        return []
    return [load_record(p) for p in sorted(base.glob("*/*.json"))]


def find_record(
    root: str | Path | list[CalibrationRecord], rubric: str, prompt_hash: str | None, model: str
) -> CalibrationRecord | None:
    """The newest record for (rubric, prompt hash, model), or None: routing says uncalibrated."""
    records = root if isinstance(root, list) else load_records(root)
    found = [
        r
        for r in records
        if r.rubric == rubric and r.prompt_hash == prompt_hash and r.model == model
    ]
    return max(found, key=lambda r: r.created_at) if found else None
