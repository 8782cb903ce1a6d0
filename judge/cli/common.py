"""Helpers shared by the CLI sub-apps: turning library errors into one-line messages."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import typer

from judge.errors import JudgeError

T = TypeVar("T")


def one_line(message: str) -> str:
    """A message as one line with nothing live in it: line breaks and every other control or
    format character inside it (e.g. from a field name or value) are shown as escapes."""
    from judge.safe_text import one_line as visible_line

    return visible_line(message)


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
