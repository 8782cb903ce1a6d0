"""Writing the file a command's `-o`/`--output` names: every command writes through here.

- A regular file (or a name not there yet) is written **atomically**: a temporary file in the
  same directory (so `os.replace` is a rename on one file system), fsynced, then renamed over
  the target, keeping an existing file's permission bits (a new one gets the umask's). On any
  failure — a full disk, an interrupt, a bad record from the producer — the temporary file is
  removed: no `.tmp` survives, and the old target is untouched.
- Anything else — a character or block device (`/dev/null`, a tty), a FIFO, a socket — is
  written **in place**. Renaming over it would replace the device node with a regular file
  (as root, `-o /dev/null` would break every other program on the machine).
- `-` is standard output.
- A symbolic link is followed: the file it points to is written, the link stays a link.
- A directory given as the output, a missing parent directory or a path through a
  non-directory is bad input (InputError: one line, exit 2), found by `check_output`
  before any work is done and again at write time.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from judge.errors import InputError

STDOUT = "-"
T = TypeVar("T")


def is_stdout(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path) == STDOUT


def is_special(path: str | os.PathLike[str]) -> bool:
    """"-", or an existing device, FIFO or socket: written in place, whatever its name."""
    if is_stdout(path):
        return True
    try:
        mode = os.stat(os.fspath(path)).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _error(path: str | os.PathLike[str], exc: OSError) -> InputError:
    return InputError(f"cannot write ({exc.strerror or exc})", file=os.fspath(path))


def check_output(path: str | os.PathLike[str]) -> os.stat_result | None:
    """Raise InputError unless `path` can be written as an output; the target's stat (links
    followed), or None when it does not exist yet."""
    if is_stdout(path):
        return None
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        parent = Path(os.path.realpath(name)).parent
        if not parent.is_dir():
            raise InputError(f"cannot write: directory {str(Path(name).parent)!r} does not "
                             "exist", file=name) from None
        return None
    except NotADirectoryError:
        raise InputError("cannot write: a part of the path is not a directory",
                         file=name) from None
    except OSError as exc:
        raise _error(name, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory: give a file to write", file=name)
    return st


def write_output(path: str | os.PathLike[str], chunks: str | Iterable[str]) -> None:
    """Write `chunks` (a str, or strs produced as they are written) to `path` as described
    above. An exception from the producer propagates unchanged (nothing is left behind); an
    error of the output itself is an InputError naming the file."""
    pieces = [chunks] if isinstance(chunks, str) else chunks
    if is_stdout(path):
        for piece in pieces:
            sys.stdout.write(piece)
        sys.stdout.flush()
        return
    name = os.fspath(path)
    st = check_output(name)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(name, pieces)
    else:
        _write_atomic(name, pieces, None if st is None else stat.S_IMODE(st.st_mode))


def _guard(name: str, fn: Callable[..., T], *args: Any) -> T:
    """Run one operation on the output: an OSError of it names the output file. (Errors of
    the producer of the text are not the output's and propagate as they are.)"""
    try:
        return fn(*args)
    except OSError as exc:
        raise _error(name, exc) from None


def _write_in_place(name: str, pieces: Iterable[str]) -> None:
    fh = _guard(name, open, name, "w", -1, "utf-8")
    try:
        for piece in pieces:
            _guard(name, fh.write, piece)
        _guard(name, fh.flush)
    finally:
        with suppress(OSError):
            fh.close()


def _write_atomic(name: str, pieces: Iterable[str], mode: int | None) -> None:
    target = Path(os.path.realpath(name))
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # 0o666: a new file gets the umask's permissions, like open(); O_EXCL: never another's
    fd = _guard(name, os.open, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        fh = os.fdopen(fd, "w", encoding="utf-8")
        try:
            for piece in pieces:
                _guard(name, fh.write, piece)
            _guard(name, fh.flush)
            _guard(name, os.fsync, fh.fileno())
        finally:
            with suppress(OSError):  # flushed and fsynced above, or failing anyway
                fh.close()
        if mode is not None:
            _guard(name, os.chmod, tmp, mode)
        _guard(name, os.replace, tmp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (where the platform allows a directory to be fsynced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.EACCES):
            raise _error(str(directory), exc) from None
    finally:
        os.close(fd)
