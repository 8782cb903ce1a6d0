"""One progress bar for long CLI work, on stderr, shown only when asked or on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Bar:
    """`total(n)` once the size is known, `tick()` per finished unit; no-ops when hidden."""

    def __init__(self, progress: Any, description: str, min_items: int, force: bool) -> None:
        self._progress = progress
        self._description = description
        self._min_items = min_items
        self._force = force
        self._task: Any = None

    def total(self, n: int) -> None:
        if self._progress is None or self._task is not None:
            return
        if self._force or n > self._min_items:
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=n)

    def tick(self, *_: object) -> None:
        if self._task is not None:
            self._progress.advance(self._task)


@contextmanager
def progress_bar(description: str, show: bool | None, *, total: int | None = None,
                 min_items: int = 20) -> Iterator[Bar]:
    """A bar for `description`; `show=None` means: on a terminal, past `min_items` units."""
    if show is False or (show is None and not sys.stderr.isatty()):
        yield Bar(None, description, min_items, False)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from judge.cli.console import console

    # the description may hold a model name: shown as text, never as markup
    progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                        MofNCompleteColumn(), TimeRemainingColumn(),
                        console=console(stderr=True), transient=True)
    bar = Bar(progress, description, min_items, bool(show))
    try:
        if total is not None:
            bar.total(total)
        yield bar
    finally:
        progress.stop()
