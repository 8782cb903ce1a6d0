"""Helpers shared by the CLI sub-apps: every error as one line on stderr, and its exit code.

Commands turn the library's `JudgeError`s into their messages (`cli_errors`, `die`); anything
else that escapes a command reaches `report_exception` (called by `judge.cli.main.main`),
which prints one line too and picks the exit code:

- `JudgeError`: its message(s) and its code (2 for bad input, usage and failures of judge);
- `OSError`: "cannot read or write PATH: reason", exit 2;
- a closed stdout (`judge ... | head`): nothing, exit 141 (`EXIT_CLOSED_PIPE`);
- `RecursionError` / `MemoryError`: "input nested too deeply / too large", exit 2;
- anything else: "internal error: Type: message (run with --debug for the traceback)", exit 2.

Never exit 1 (a veto or a failed gate, nothing else) and never a traceback, unless the root
option `--debug` or `JUDGE_DEBUG=1` asks for one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer

from judge.cli.lazy import ClosedStdout
from judge.cli.numbers import float_option
from judge.errors import InputErrors, JudgeError

if TYPE_CHECKING:
    from pathlib import Path

    from judge.ledger import LoadedScenario

T = TypeVar("T")

#: 128 + SIGPIPE: what a shell reports for a program stopped by a closed pipe
EXIT_CLOSED_PIPE = 141
#: exit code of bad input, usage errors and every failure of judge's own
EXIT_BAD_INPUT = 2
DEBUG_ENV = "JUDGE_DEBUG"


def one_line(message: str) -> str:
    """A message as one line with nothing live in it: line breaks and every other control or
    format character inside it (e.g. from a field name or value) are shown as escapes."""
    from judge.safe_text import one_line as visible_line

    return visible_line(message)


class _State:
    debug = False


STATE = _State()


def debugging() -> bool:
    """Whether tracebacks are wanted: `judge --debug ...` or JUDGE_DEBUG=1 (or true/yes)."""
    return STATE.debug or os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes")


def _print_err(line: str) -> None:
    with suppress(OSError, ValueError):  # stderr closed too: nothing more can be said
        print(line, file=sys.stderr, flush=True)


def die(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line to stderr and exit with `code` (2 = bad input or usage)."""
    _print_err(f"judge: error: {one_line(message)}")
    raise typer.Exit(code)


def _exit_code(exc: JudgeError) -> int:
    return exc.exit_code if exc.exit_code != 1 else EXIT_BAD_INPUT  # 1 is a veto's only


def die_of(exc: JudgeError) -> NoReturn:
    """Print each line of a JudgeError (one per problem) and exit with its code."""
    for line in exc.lines():
        _print_err(f"judge: error: {one_line(line)}")
    raise typer.Exit(_exit_code(exc))


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn any JudgeError raised inside into its one-line message(s) and exit code."""
    try:
        yield
    except JudgeError as exc:
        die_of(exc)


def warn(message: str) -> None:
    _print_err(f"judge: {one_line(message)}")


def run(fn: Callable[[], T]) -> T:
    with cli_errors():
        return fn()
    raise AssertionError("unreachable")


def load_valid_scenario(path: Path) -> LoadedScenario:
    """Load a scenario and check every cross-reference of it, as `judge validate` does:
    keys, tools, regexes, rubric names. All its problems are raised together (one line
    each), before any trace is read."""
    from judge.checks import validate_scenario
    from judge.ledger.loader import load_scenario

    loaded = load_scenario(path)
    problems = validate_scenario(loaded)
    if problems:
        raise InputErrors(problems)
    return loaded


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0].strip()


def describe_exception(exc: BaseException) -> tuple[list[str], int]:
    """The lines to print (without the "judge: error: " prefix) and the exit code for an
    exception that ended a command. A closed stdout gives no line."""
    if isinstance(exc, JudgeError):
        return exc.lines(), _exit_code(exc)
    if isinstance(exc, BrokenPipeError | ClosedStdout):
        return [], EXIT_CLOSED_PIPE
    if isinstance(exc, OSError):
        reason = exc.strerror or _first_line(str(exc)) or type(exc).__name__
        names = [str(os.fsdecode(n)) for n in (exc.filename, exc.filename2) if n is not None]
        if names:
            return [f"cannot read or write {' -> '.join(names)}: {reason}"], EXIT_BAD_INPUT
        return [f"input/output error: {reason}"], EXIT_BAD_INPUT
    if isinstance(exc, RecursionError):
        return ["input nested too deeply (it could not be processed)"], EXIT_BAD_INPUT
    if isinstance(exc, MemoryError):
        return ["input too large (out of memory)"], EXIT_BAD_INPUT
    if isinstance(exc, UnicodeError):
        return [f"not UTF-8 text ({_first_line(str(exc))})"], EXIT_BAD_INPUT
    message = _first_line(str(exc))
    return [f"internal error: {type(exc).__name__}{': ' + message if message else ''} "
            f"(run with --debug for the traceback)"], EXIT_BAD_INPUT


def report_exception(exc: BaseException) -> int:
    """Print what ended a command (one line; with --debug, the traceback first) and return
    the exit code to end with."""
    if isinstance(exc, BrokenPipeError | ClosedStdout):
        silence_stdout()
    elif debugging():
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    lines, code = describe_exception(exc)
    for line in lines:
        _print_err(f"judge: error: {one_line(line)}")
    return code


def silence_stdout() -> None:
    """The reader of stdout went away: send what is still buffered nowhere, so Python's
    final flush does not fail again (and print a second error)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (an in-memory stdout)
        pass


def jury_list(values: list[str]) -> tuple[str, ...] | None:
    """`--jury a --jury b` or `--jury a,b` → ("a", "b"); None when not given. A `--jury`
    that names no model (`--jury ''`, `--jury ',,'`) is refused: grading with one judge
    instead would be the opposite of what was asked."""
    out = tuple(p.strip() for v in values for p in v.split(",") if p.strip())
    if values and not out:
        die(f"--jury {one_line(repr(values[0]))[:60]} names no model; give the jury's models "
            f"(e.g. --jury openai:gpt-4.1-mini,anthropic:claude-3-5-haiku-latest)")
    return out or None


# The jury options of every command that grades (grade, run, calibrate fit, probe): one
# definition, so their names, bounds and help cannot drift apart.
JURY_OPTION = typer.Option(
    [], "--jury", help="grade with a jury of these models (repeatable or comma-separated); "
    "a split jury goes to review")
SAMPLES_OPTION = typer.Option(
    None, "--samples", min=1, max=32, help="ask each juror (no --jury: the model) this many "
    "times: self-consistency; needs --temperature above 0")
TEMPERATURE_OPTION = float_option(
    None, "--temperature", lo=0.0, hi=2.0, help="sampling temperature (default 0)")
