"""Number options that are finite and in range, with a message that says so.

Typer's own `min=`/`max=` let `nan` through to a confusing "should be ≤ 2" (every comparison
with NaN is false) and `inf` or `1e300` through to the command, where a lease of 1e300
seconds overflows a datetime and a page answers 500. `number(lo, hi)` is the `parser=` of
every float option instead: it reads the text, refuses what is not a finite number, and
names the range a value falls outside of. (With `parser=`, typer applies no `min`/`max` of
its own, so the range is stated once, here.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import EllipsisType
from typing import Any

import typer

#: The longest lease or wait any option accepts: a week, in seconds.
A_WEEK_S = 7 * 24 * 3600.0


def _fmt(x: float) -> str:
    return f"{x:g}"


def number(lo: float | None = None, hi: float | None = None, *,
           lo_open: bool = False, hi_open: bool = False) -> Callable[[str], float]:
    """A typer `parser=`: the option's text as a finite float in [lo, hi] (an end is open
    with `lo_open`/`hi_open`; None: unbounded on that side), else a BadParameter (exit 2)."""
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    span = f"{left}{'-∞' if lo is None else _fmt(lo)}, {'∞' if hi is None else _fmt(hi)}{right}"

    def parse(text: str | float) -> float:
        if isinstance(text, float | int) and not isinstance(text, bool):
            value = float(text)  # a default, already a number
        else:
            raw = str(text).strip()
            try:
                value = float(raw)  # 5,000 digits read as inf, refused below
            except ValueError:
                raise typer.BadParameter(f"{_quote(raw)} is not a number") from None
        if not math.isfinite(value):
            raise typer.BadParameter(f"{_quote(str(text))} is not a finite number; expected "
                                     f"a number in {span}")
        below = lo is not None and (value < lo or (lo_open and value == lo))
        above = hi is not None and (value > hi or (hi_open and value == hi))
        if below or above:
            raise typer.BadParameter(f"{_fmt(value)} is not in {span}")
        return value

    parse.__name__ = f"number in {span}"
    return parse


def _quote(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def float_option(default: float | EllipsisType | None, *decls: str, lo: float | None = None,
                 hi: float | None = None, lo_open: bool = False, hi_open: bool = False,
                 **kwargs: Any) -> Any:
    """A `typer.Option` for a float that must be finite and in [lo, hi]; its help shows the
    range as the metavar (`<number in [0, 2]>`)."""
    parse = number(lo, hi, lo_open=lo_open, hi_open=hi_open)
    return typer.Option(default, *decls, parser=parse, metavar=f"<{parse.__name__}>", **kwargs)


#: The largest seed numpy's generators take (`--seed`: 0 .. 2**32 - 1).
SEED_MAX = 2**32 - 1


def integer(lo: int, hi: int) -> Callable[[str], int]:
    """A typer `parser=`: the option's text as a whole number in [lo, hi], else a
    BadParameter (exit 2) that names the range, as `number` does for floats."""
    span = f"[{lo}, {hi}]"

    def parse(text: str | int) -> int:
        if isinstance(text, int) and not isinstance(text, bool):
            value = text  # a default, already a number
        else:
            raw = str(text).strip()
            try:
                value = int(raw)
            except ValueError:
                raise typer.BadParameter(f"{_quote(raw)} is not a whole number; expected one "
                                         f"in {span}") from None
        if not lo <= value <= hi:
            raise typer.BadParameter(f"{value} is not in {span}")
        return value

    parse.__name__ = f"integer in {span}"
    return parse


def int_option(default: int | EllipsisType | None, *decls: str, lo: int, hi: int,
               **kwargs: Any) -> Any:
    """A `typer.Option` for a whole number in [lo, hi]; its help shows the range as the
    metavar (`<integer in [0, 4294967295]>`)."""
    parse = integer(lo, hi)
    return typer.Option(default, *decls, parser=parse, metavar=f"<{parse.__name__}>", **kwargs)
