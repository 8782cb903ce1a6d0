"""Reading an import's input: the one place that opens it, bounds its numbers and sizes, and
says in one line what is wrong with it.

- The path must name a regular file (`judge.trace.files.unusable_file`: a directory, a
  FIFO, a device or a link loop is said as such, not "no such file").
- A gzip-compressed file (by its magic bytes, whatever its name) is read through gzip, its
  decompressed size capped like an archive member's (`max_bytes`); a UTF-8 byte-order mark
  at the start is skipped. Every importer reads this way, so they all accept the same files.
- Numbers have bounded width on every path: an integer has at most `MAX_INT_DIGITS` digits
  (Python's own limit for `int()`, which keeps converting one linear), a float fits in a
  double, and `NaN`/`Infinity` are not JSON. Whole documents go through `loads` (Python's
  `json` with those guards); streams through `events`, which reads with ijson's C backend
  (`use_float=True`: its 64-bit integers and doubles, and an error above them) and, when a
  wider integer stops it, starts again with ijson's pure-Python backend, skipping the events
  it already gave, so 128-bit ids are read too. The C backend is never asked to convert a
  number itself (without `use_float` it crashes the process on a >4,300-digit integer).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, cast

import ijson

from judge.errors import InputError
from judge.trace.files import unusable_file

#: the most digits an integer may have (Python refuses longer ones: `int()` is quadratic)
MAX_INT_DIGITS = 4300
#: the most bytes one archive member (or a gzip file) may decompress to, by default
DEFAULT_MAX_MEMBER_BYTES = 128 << 20
#: the cap in force (`judge import --max-member-bytes` sets it for one import: `capped`)
MAX_MEMBER_BYTES: ContextVar[int] = ContextVar("max_member_bytes",
                                               default=DEFAULT_MAX_MEMBER_BYTES)


@contextlib.contextmanager
def capped(max_bytes: int | None) -> Iterator[None]:
    """Within: archive members and gzip files decompress to at most `max_bytes`."""
    token = MAX_MEMBER_BYTES.set(max_bytes or DEFAULT_MAX_MEMBER_BYTES)
    try:
        yield
    finally:
        MAX_MEMBER_BYTES.reset(token)


def cap(max_bytes: int | None = None) -> int:
    return max_bytes if max_bytes is not None else MAX_MEMBER_BYTES.get()
BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
_PY_BACKEND = ijson.get_backend("python")
#: what ijson reads at a time: with its default (64 KiB) a long string costs time quadratic
#: in its length (25 MB: 4.7 s; 250 MB: over 10 minutes), with 1 MiB it is linear (0.3 s)
BUF_SIZE = 1 << 20


def size_text(n: int) -> str:
    """A byte count for people: `256 MiB`, `2.0 GiB`, `512 bytes`."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def compact(exc: BaseException, limit: int = 100) -> str:
    """An exception's message on one line, cut to `limit` characters."""
    return " ".join(str(exc).split())[:limit]


class Capped(io.RawIOBase):
    """A binary stream that stops with an InputError once more than `limit` bytes were read
    from it (a gzip file or an archive member that decompresses to more than the cap)."""

    def __init__(self, raw: IO[bytes], limit: int, what: str, file: str) -> None:
        super().__init__()
        self._raw = raw
        self._left = limit
        self._limit = limit
        self._what = what
        self._file = file

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b)
        want = min(len(view), self._left + 1)
        data = self._raw.read(want)
        n = len(data)
        if n > self._left:
            raise InputError(f"{self._what} decompresses to more than the cap of "
                             f"{size_text(self._limit)} (--max-member-bytes raises it)",
                             file=self._file)
        view[:n] = data
        self._left -= n
        return n

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._raw.close()
        super().close()


def check_file(path: str | Path) -> None:
    """InputError unless `path` names a regular file (said in words: a directory, a FIFO…)."""
    problem = unusable_file(path)
    if problem is not None:
        raise InputError(problem, file=str(path))


def is_gzip(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def is_jsonl(path: str | Path) -> bool:
    """Whether a file holds one document a line, by its name (`.jsonl`, `.jsonl.gz`)."""
    name = Path(path).name.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"))


def _unreadable(exc: OSError, file: str) -> InputError:
    return InputError(f"cannot read ({exc.strerror or type(exc).__name__})", file=file)


def open_input(path: str | Path, *, max_bytes: int | None = None) -> IO[bytes]:
    """The file's bytes as a stream: gzip decompressed (at most `max_bytes`), a leading BOM
    skipped. InputError for a path that is not a readable regular file."""
    file = str(path)
    max_bytes = cap(max_bytes)
    check_file(path)
    try:
        fh: IO[bytes] = open(path, "rb")  # noqa: SIM115 (returned to the caller)
    except OSError as exc:
        raise _unreadable(exc, file) from None
    try:
        head = fh.read(3)
        fh.seek(0)
        if head[:2] == GZIP_MAGIC:
            unzipped = cast(IO[bytes], gzip.GzipFile(fileobj=fh, mode="rb"))
            fh = io.BufferedReader(Capped(unzipped, max_bytes, "the gzip file", file),
                                   1 << 16)
            head = fh.peek(3)[:3]
        if head == BOM:
            fh.read(3)
    except (OSError, EOFError, zlib.error) as exc:
        fh.close()
        raise InputError(f"not a readable gzip file ({compact(exc)})", file=file) from None
    return fh


def read_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """The whole file (see `open_input`)."""
    file = str(path)
    with open_input(path, max_bytes=max_bytes) as fh:
        try:
            return fh.read()
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile):
                raise _unreadable(exc, file) from None
            raise InputError(f"not a readable gzip file ({compact(exc)})", file=file) \
                from None


def decode(data: bytes, file: str, line: int | None = None) -> str:
    """UTF-8 text, or an InputError naming the byte (and the line of a JSONL file)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = " of the line" if line is not None else ""
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start}{where})",
                         file=file, line=line) from None


# -- whole documents ---------------------------------------------------------------------------
class NumberError(ValueError):
    """A number judge does not read: too many digits, out of a double's range, NaN."""


def _int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise NumberError(f"an integer of {digits:,} digits (judge reads at most "
                          f"{MAX_INT_DIGITS:,})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NumberError(f"a number out of range ({text[:24]})")
    return value


def _constant(text: str) -> Any:
    raise NumberError(f"{text} is not a JSON number")


_LONG_INT = re.compile(r"-?\d{" + str(MAX_INT_DIGITS + 1) + ",}")


def _where_number(text: str) -> str:
    m = _LONG_INT.search(text)
    if m is None:
        return ""
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return f" at line {line} column {col}"


def loads(text: str | bytes, file: str, line: int | None = None) -> Any:
    """One JSON document with bounded numbers; InputError naming the file (and line)."""
    if isinstance(text, bytes):
        if text.startswith(BOM):
            text = text[3:]
        text = decode(text, file, line)
    elif text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if line is None \
            else f" at column {exc.colno}"
        raise InputError(f"malformed JSON ({exc.msg}{where})", file=file, line=line) from None
    except NumberError as exc:
        where = _where_number(text) if line is None else ""
        raise InputError(f"malformed JSON ({exc}{where})", file=file, line=line) from None
    except RecursionError:
        raise InputError("malformed JSON (nested too deeply)", file=file, line=line) from None
    except ValueError as exc:
        raise InputError(f"malformed JSON ({compact(exc)})", file=file, line=line) from None


def load_file(path: str | Path, *, max_bytes: int | None = None) -> Any:
    """A whole `.json` file as one document (see `open_input`, `loads`)."""
    file = str(path)
    data = read_bytes(path, max_bytes=max_bytes)
    if not data.strip():
        raise InputError("the file is empty", file=file)
    return loads(data, file)


def iter_lines(path: str | Path, *, max_bytes: int | None = None,
               ) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every line that is not blank (a JSONL file)."""
    file = str(path)
    with open_input(path, max_bytes=max_bytes) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    yield lineno, raw
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(f"not a readable gzip file ({compact(exc)})", file=file) \
                from None
        except OSError as exc:
            raise _unreadable(exc, file) from None


# -- streams -----------------------------------------------------------------------------------
def stream_error(exc: BaseException, file: str, where: str | None = None) -> InputError:
    """What an exception of a streaming parse means, as one line."""
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"not UTF-8 text ({exc.reason})", file=file, path=where)
    if isinstance(exc, RecursionError):
        return InputError("malformed JSON (nested too deeply)", file=file, path=where)
    text = compact(exc)
    if text.startswith(("b'", 'b"')):  # yajl's message, as bytes: its first line
        text = str(exc).split("\\n")[0].lstrip("b'\"").rstrip(".") or text
    if "invalid bytes in UTF8" in text:
        return InputError("not UTF-8 text", file=file, path=where)
    if "floating point) overflow" in text:
        return InputError("malformed JSON (a number out of a double's range)", file=file,
                          path=where)
    wide = "integer string conversion" in str(exc.__context__ or "") or (
        "Unexpected symbol" in text and _LONG_DIGITS.search(text) is not None)
    if wide:
        text = f"an integer of more than {MAX_INT_DIGITS:,} digits"
    return InputError(f"malformed JSON ({text})", file=file, path=where)


_LONG_DIGITS = re.compile(r"'-?\d{40,}")
STREAM_ERRORS = (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError,
                 RecursionError, EOFError, zlib.error, OSError, ValueError)


def _checked(value: Any) -> Any:
    if type(value) is float and not math.isfinite(value):
        raise NumberError("a number out of a double's range")
    return value


def events(opener: Callable[[], IO[bytes]], file: str,
           where: str | None = None) -> Generator[tuple[str, Any], None, None]:
    """ijson's basic events of the stream `opener()` gives, numbers bounded (see the module
    docstring); InputError (naming `file` and `where`) for anything malformed."""
    n = 0
    try:
        with opener() as fh:
            for ev in ijson.basic_parse(fh, use_float=True, buf_size=BUF_SIZE):
                n += 1
                yield ev
        return
    except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
        if "integer overflow" not in str(exc):
            raise stream_error(exc, file, where) from None
    except InputError:
        raise
    except STREAM_ERRORS as exc:
        raise stream_error(exc, file, where) from None
    # A wider integer than 64 bits: read again with the pure-Python backend from the start,
    # skipping what was given (the same document gives the same events).
    try:
        with opener() as fh:
            for i, (ev, value) in enumerate(_PY_BACKEND.basic_parse(fh, use_float=True,
                                                                    buf_size=BUF_SIZE)):
                if i >= n:
                    yield ev, _checked(value) if ev == "number" else value
    except InputError:
        raise
    except NumberError as exc:
        raise InputError(f"malformed JSON ({exc})", file=file, path=where) from None
    except STREAM_ERRORS as exc:
        raise stream_error(exc, file, where) from None


class Pull:
    """Basic events with one event of look-ahead, and whole values built from them."""

    def __init__(self, evs: Iterator[tuple[str, Any]]) -> None:
        self._it = evs
        self._peeked: tuple[str, Any] | None = None

    def next(self) -> tuple[str, Any]:
        if self._peeked is not None:
            ev, self._peeked = self._peeked, None
            return ev
        return next(self._it)

    def peek(self) -> tuple[str, Any]:
        if self._peeked is None:
            self._peeked = next(self._it)
        return self._peeked

    def value(self) -> Any:
        """The next complete value (iteratively: deep nesting is no recursion)."""
        ev, val = self.next()
        if ev not in ("start_map", "start_array"):
            return val
        root: Any = {} if ev == "start_map" else []
        stack: list[Any] = [root]
        key: Any = None
        while stack:
            ev, val = self.next()
            if ev == "map_key":
                key = val
                continue
            if ev in ("end_map", "end_array"):
                stack.pop()
                continue
            node: Any = {} if ev == "start_map" else [] if ev == "start_array" else val
            top = stack[-1]
            if type(top) is list:
                top.append(node)
            else:
                top[key] = node
            if ev in ("start_map", "start_array"):
                stack.append(node)
        return root

    def objects(self) -> Iterator[None]:
        """Consume an array; stop before each object item (the caller reads it), skip the
        other items."""
        self.next()  # start_array
        while True:
            ev = self.peek()[0]
            if ev == "end_array":
                self.next()
                return
            if ev == "start_map":
                yield None
            else:
                self.value()
