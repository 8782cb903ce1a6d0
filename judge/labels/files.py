"""Read and write human-label and verdict files (JSONL, one record a line; formats §3, §4).

Every error is one InputError naming file:line and the field. Blank lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.outputs import write_output
from judge.safe_text import json_safe
from judge.trace.loader import validation_error

M = TypeVar("M", bound=BaseModel)


def _iter_records(path: str | Path, model: type[M], what: str) -> Iterator[tuple[int, M]]:
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    try:
        fh = p.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None
    with fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline()
            except UnicodeDecodeError:
                raise InputError("not UTF-8 text", file=file, line=lineno + 1) from None
            if not raw:
                return
            lineno += 1
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})",
                                 file=file, line=lineno) from None
            if not isinstance(obj, dict):
                raise InputError(f"expected a {what} object", file=file, line=lineno)
            try:
                yield lineno, model.model_validate(obj)
            except ValidationError as exc:
                raise validation_error(exc, file, lineno) from None


def iter_labels(path: str | Path) -> Iterator[tuple[int, HumanLabel]]:
    """Yield (line number, label) for each label of a labels file, validating as it goes."""
    return _iter_records(path, HumanLabel, "label")


def read_labels(path: str | Path) -> list[HumanLabel]:
    """Every label of a labels file, in file order (history: several per item are fine)."""
    return [label for _, label in iter_labels(path)]


def iter_verdicts(path: str | Path) -> Iterator[tuple[int, Verdict]]:
    """Yield (line number, verdict) for each verdict of a verdicts file."""
    return _iter_records(path, Verdict, "verdict")


def read_verdicts(path: str | Path, *, unique: bool = True) -> list[Verdict]:
    """Every verdict of a verdicts file. With `unique`, a second verdict for an item is an
    InputError naming both lines (a verdicts file holds one verdict per item)."""
    seen: dict[str, int] = {}
    out: list[Verdict] = []
    for lineno, verdict in iter_verdicts(path):
        if unique:
            first = seen.setdefault(verdict.item_id, lineno)
            if first != lineno:
                raise InputError(
                    f"duplicate verdict for item {verdict.item_id!r} (first on line {first})",
                    file=str(path), line=lineno, field="item_id")
        out.append(verdict)
    return out


def _write(path: str | Path, records: Iterable[BaseModel]) -> int:
    """Atomically for a regular file, in place for a device, FIFO or "-" (judge.outputs)."""
    n = 0

    def lines() -> Iterator[str]:
        nonlocal n
        for record in records:
            yield json_safe(record.model_dump_json(exclude_defaults=False)) + "\n"
            n += 1

    write_output(path, lines())
    return n


def write_labels(path: str | Path, labels: Iterable[HumanLabel]) -> int:
    """Write labels as JSONL (what `read_labels` reads back); returns how many."""
    return _write(path, labels)


def write_verdicts(path: str | Path, verdicts: Iterable[Verdict]) -> int:
    """Write verdicts as JSONL (what `read_verdicts` reads back); returns how many."""
    return _write(path, verdicts)
