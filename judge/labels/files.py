"""Read and write human-label and verdict files (JSONL, one record a line; formats §3, §4).

Every error is one InputError naming file:line and the field. Blank lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.outputs import write_output
from judge.safe_text import json_safe
from judge.trace.loader import validation_error

M = TypeVar("M", bound=BaseModel)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _iter_records(path: str | Path, model: type[M], what: str, *,
                  errors: list[InputError] | None = None, strict: bool = False,
                  check: Callable[[dict[str, Any]], None] | None = None,
                  ) -> Iterator[tuple[int, M]]:
    """(line number, record) for each line. Without `errors`, the first bad line raises;
    with it, each bad line's InputError is appended and the reading goes on. `strict`:
    a key given twice in one object is an error, and values are not coerced (`"5"` or
    `true` is not an integer). `check` sees each object before the model does and raises
    InputError (a field, no file or line) for a bad one."""
    file = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None

    def bad(err: InputError) -> None:
        if errors is None:
            raise err
        errors.append(err)

    hook = _no_duplicate_keys if strict else None
    with fh:
        for lineno, data in enumerate(fh, 1):
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError:
                bad(InputError("not UTF-8 text", file=file, line=lineno))
                continue
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw, object_pairs_hook=hook)
            except json.JSONDecodeError as exc:
                bad(InputError(f"malformed JSON ({exc.msg} at column {exc.colno})",
                               file=file, line=lineno))
                continue
            except _DuplicateKey as exc:
                bad(InputError("the field is given twice in one record", file=file,
                               line=lineno, field=exc.key))
                continue
            except RecursionError:
                bad(InputError("JSON nested too deeply", file=file, line=lineno))
                continue
            except ValueError as exc:  # an integer too long for Python to convert
                bad(InputError(f"malformed JSON ({exc})", file=file, line=lineno))
                continue
            if not isinstance(obj, dict):
                bad(InputError(f"expected a {what} object", file=file, line=lineno))
                continue
            if check is not None:
                try:
                    check(obj)
                except InputError as exc:
                    bad(at_line(exc, file, lineno))
                    continue
            try:
                record = (model.model_validate_json(raw, strict=True) if strict
                          else model.model_validate(obj))
            except ValidationError as exc:
                bad(validation_error(exc, file, lineno))
                continue
            yield lineno, record


def iter_labels(path: str | Path, *, errors: list[InputError] | None = None,
                strict: bool = False, check: Callable[[dict[str, Any]], None] | None = None,
                ) -> Iterator[tuple[int, HumanLabel]]:
    """Yield (line number, label) for each label of a labels file, validating as it goes
    (`errors`, `strict`, `check`: see `_iter_records`; `judge labels import` uses them)."""
    return _iter_records(path, HumanLabel, "label", errors=errors, strict=strict,
                         check=check)


def at_line(exc: InputError, file: str, line: int) -> InputError:
    """`exc` (naming a field only) placed at file:line."""
    message = exc.message.removeprefix(f"field '{exc.field}': ") if exc.field else exc.message
    return InputError(message, file=file, line=line, field=exc.field)


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
