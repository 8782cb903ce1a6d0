"""The garbage collector's settings for one grading run.

Measured on the 1,164-call benchmark (benchmarks/README.md, "CPU per item"): the grading
process ran 571 collections costing 0.36 CPU-s, a tenth of its CPU. Most of what they
traverse is long-lived: the modules, classes and models imported before and early in the
run (the openai SDK alone is ~79,000 tracked objects, judge's CLI, pipeline and store
~16,000), which every older-generation collection walks again and finds alive; and the
requests' short-lived objects fill the default 700-object first generation again and
again. With these settings: 185 collections, 0.11 CPU-s.

So for the run (`settled_heap`): `gc.freeze()` moves everything alive at its start into the
permanent generation, which no collection walks (the checking and call-writing children
forked after it inherit that, and their copy-on-write pages stay shared, CPython's
documented use of freeze before fork); the first generation's threshold is raised so a
collection runs every few calls instead of several times per call. Both are undone when
the run ends (`gc.unfreeze`, the old thresholds): a library caller's process is left as it
was. Nothing is left uncollectable: a cycle made during the run is collected as before
(later); one alive at its start is collected after it, if it died meanwhile.

And at the process's exit (`atexit`, registered by the first run): `gc.freeze()` again, so
the interpreter's finalization does not walk every object still alive (the SDK's models, the
run's results) in its collections before tearing the modules down. Measured with the
imports of `judge grade` alone: 1.28 CPU-s with a normal exit, 0.90 s frozen at exit (and
0.96 s with `os._exit`); on the whole 1,164-call grade, 5.33 CPU-s (frozen during the run)
against 5.15 s (and at exit), 5.62 s with neither. Objects still alive at exit are freed by
their reference counts as before; only cyclic garbage left at exit is not collected, which
the interpreter never promises to finalize anyway (judge closes its files and databases
itself).
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: the first generation's threshold during a run (CPython's default is 700)
RUN_GEN0_THRESHOLD = 10_000


@contextmanager
def settled_heap(gen0: int = RUN_GEN0_THRESHOLD) -> Iterator[None]:
    """Freeze what is alive now and collect the young generation less often, until the
    block ends."""
    _freeze_at_exit()
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(gen0, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


_exit_hook: list[bool] = []


def _freeze_at_exit() -> None:
    if not _exit_hook:
        _exit_hook.append(True)
        atexit.register(gc.freeze)


def freeze_before_fork() -> None:
    """Freeze what is alive now (inside `settled_heap`, which undoes it), right before the
    run forks its children."""
    gc.freeze()
