"""Names spelled out letter by letter: `c l a u d e`, `c-l-a-u-d-e`, `C.L.A.U.D.E`,
`g p t - 4 o`, `c l 4 u d e`.

A run of three or more single letters or digits, each set off from the next by spaces or
one of `- . _ * / | · • + ~` (with spaces around it or not), is read once more with its
separators taken out (`claude`, `gpt4o`), and names are matched on that. A name found
there must be four characters or more, or three at the start or the end of the run:
`g p t` and `I am a g p t` hold a name, while `x g p t y`'s `gpt` and any `o1` are not read
out of a run (short names are too easily spelled by accident). Runs are found in one RE2
pass; the text between them costs nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from judge.redaction.rx import compile_re2

_ELEMENT = "A-Za-z0-9@$"
_SEP = r"(?:[ \t]*[-._*/|·•+~][ \t]*|[ \t]+)"
#: a run of single characters; whether its first and last stand alone is judged on the
#: original text (`edges`): the view folds `é` to `e`, which would glue it to a run
SPELLED_RE = compile_re2(f"(?:[{_ELEMENT}]{_SEP}){{2,}}[{_ELEMENT}]")
ELEMENTS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@$")
#: a name read out of a run must be this long, unless it is the whole run
MIN_CHARS = 4


def spelled_names(text: str, builtin: Callable[[str], Iterable[tuple[int, int]]],
                  names: Any, tail: Callable[[str, int], int],
                  alone: Callable[[int, bool], bool]) -> Iterator[tuple[int, int]]:
    """Spans of `text` where a name is spelled out: `builtin(s)` finds the built-in names
    in a string, `names` (a `Literals`, or None) the candidate's own; a name that ends the
    run takes the version written after it (`tail(text, end)`: `G-P-T-4o`). `alone(i,
    first)` says whether the run's character at `i` stands alone on its outer side (a
    first or last character glued to a word is left out of the run: `xc l a u d e`)."""
    for m in SPELLED_RE.finditer(text):
        a, b = m.span()
        pos = [i for i in range(a, b) if text[i] in ELEMENTS]
        if not alone(pos[0], True):
            pos = pos[1:]
        if not alone(pos[-1], False):
            pos = pos[:-1]
        if len(pos) < 3:
            continue
        b = pos[-1] + 1
        joined = "".join(text[i] for i in pos)
        hits: list[tuple[int, int]] = list(builtin(joined))
        if names is not None:
            hits.extend(k.span() for k in names.regex.finditer(joined))
        for s, e in hits:
            edge = s == 0 or e == len(joined)
            if e - s >= MIN_CHARS or (e - s == MIN_CHARS - 1 and edge):
                end = pos[e - 1] + 1
                yield pos[s], tail(text, end) if end == b else end
