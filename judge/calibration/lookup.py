"""Which calibration applies to (rubric, prompt hash, model): the newest record stored in the
database, else the newest committed under ./calibration (JUDGE_CALIBRATION_DIR). Routing
(judge.pipeline.route) and the calibration commands ask here; the store only hands back the
raw record it holds.

Reading a record needs numpy; a run with no calibration anywhere (no stored record, no
records folder) does not import it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.calibration.record import CalibrationRecord
    from judge.store import Store


def find_calibration(store: Store | None, rubric: str, prompt_hash: str,
                     model: str) -> CalibrationRecord | None:
    """The calibration record for (rubric, prompt hash, model), or None (database first,
    then the committed files; without a store, the files only)."""
    data = store.stored_calibration(rubric, prompt_hash, model) if store is not None else None
    if data is not None:
        from judge.calibration.record import CalibrationRecord

        return CalibrationRecord.model_validate(data)
    if not records_folder_exists():
        return None
    from judge.calibration.files import file_record

    return file_record(rubric, prompt_hash, model)


def records_folder_exists() -> bool:
    """Whether the committed-records folder (judge.calibration.files.records_dir) exists,
    checked without importing the record model."""
    return Path(os.environ.get("JUDGE_CALIBRATION_DIR") or "calibration").is_dir()
