"""Is a scenario still an unreviewed draft? One line saying so, naming file, line, field."""

from __future__ import annotations

import re
from pathlib import Path

from judge.errors import InputError
from judge.ledger.loader import LoadedScenario

_STATUS = re.compile(r"status\s*:")


def unreviewed(loaded: LoadedScenario) -> InputError | None:
    """The warning for a scenario marked `status: draft` (None when reviewed): an
    `InputError` only for its file, line and field; callers decide whether it is fatal."""
    if loaded.scenario.status != "draft":
        return None
    return InputError("unreviewed draft: review every entry, then delete this line",
                      file=loaded.file, line=_status_line(loaded.file), field="status")


def _status_line(file: str) -> int | None:
    """The line of the top-level `status:` key (a draft's text is read once more)."""
    try:
        with Path(file).open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if _STATUS.match(line):
                    return n
    except (OSError, UnicodeDecodeError):
        return None
    return None
