"""Calibration records committed to git: where they live and the one routing needs.

Light on purpose (no scikit-learn, no scipy): routing reads records on every run.
"""

from __future__ import annotations

import os
from pathlib import Path

from judge.calibration.record import CalibrationRecord, find_record, load_record, safe_part

ENV_DIR = "JUDGE_CALIBRATION_DIR"
DEFAULT_DIR = Path("calibration")


def records_dir(root: str | Path | None = None) -> Path:
    """Where calibration records are read and written: `root`, else $JUDGE_CALIBRATION_DIR,
    else `calibration/` in the working directory."""
    if root is not None:
        return Path(root)
    env = os.environ.get(ENV_DIR)
    return Path(env) if env else DEFAULT_DIR


# -- records committed to git (routing's fallback) ------------------------------------------
_FileKey = tuple[str, int, int]
_file_memo: dict[str, tuple[tuple[_FileKey, ...], list[CalibrationRecord]]] = {}


def file_record(rubric: str, prompt_hash: str | None, model: str,
                root: str | Path | None = None) -> CalibrationRecord | None:
    """The newest record for (rubric, prompt hash, model) under `records_dir(root)/<rubric>/`,
    or None. Parsed files are remembered until one changes (routing asks once per batch)."""
    folder = records_dir(root) / safe_part(rubric)
    if not folder.is_dir():
        return None
    files = sorted(folder.glob("*.json"))
    keys: list[_FileKey] = []
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        keys.append((str(p), st.st_mtime_ns, st.st_size))
    memo_key = str(folder.resolve())
    cached = _file_memo.get(memo_key)
    if cached is not None and cached[0] == tuple(keys):
        records = cached[1]
    else:
        records = [load_record(k[0]) for k in keys]
        _file_memo[memo_key] = (tuple(keys), records)
    return find_record(records, rubric, prompt_hash, model)
