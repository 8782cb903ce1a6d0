"""Whether a path names a file judge can read as input, said in words before it is opened.

A directory, a FIFO (opening one blocks until a writer comes), a device or a socket given
where an input file belongs is bad input — one line naming the path — not an OSError from
deep inside a reader, nor a command that hangs.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def unusable_file(path: str | Path) -> str | None:
    """Why `path` cannot be read as an input file (None: it is a regular file)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        return f"cannot read ({exc.strerror or type(exc).__name__})"
    except ValueError:  # an embedded NUL byte
        return "not a valid path (it contains a NUL byte)"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device")
        return f"is {kind}, not a regular file"
    return None
