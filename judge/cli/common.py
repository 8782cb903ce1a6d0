"""Helpers shared by the CLI sub-apps: turning library errors into one-line messages."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import typer

from judge.errors import JudgeError

T = TypeVar("T")


_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1]
                              for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(message: str) -> str:
    """A message as one line: line breaks inside it (e.g. from a field name) are escaped."""
    return message.translate(_LINE_BREAKS)


def die(message: str, code: int = 2) -> NoReturn:
    """Print one line to stderr and exit with `code` (2 = bad input or usage)."""
    typer.echo(f"judge: error: {one_line(message)}", err=True)
    raise typer.Exit(code)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn any JudgeError raised inside into its one-line message and exit code."""
    try:
        yield
    except JudgeError as exc:
        die(exc.message, exc.exit_code)


def warn(message: str) -> None:
    print(f"judge: {one_line(message)}", file=sys.stderr)


def run(fn: Callable[[], T]) -> T:
    with cli_errors():
        return fn()
    raise AssertionError("unreachable")
