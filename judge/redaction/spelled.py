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
#: a JSON escape just before a run is no part of it (`\\ng p t`)
_ESCAPE = r"\\(?:[nrtbf]|u[0-9a-fA-F]{4})"
#: group 1: a run of single characters set off from any word (ASCII text, which is its
#: own view: one pass, and the anchors leave almost every word alone)
SPELLED_RE = compile_re2(f"(?:^|[^{_ELEMENT}]|{_ESCAPE})((?:[{_ELEMENT}]{_SEP}){{2,}}"
                         f"[{_ELEMENT}])(?:$|[^{_ELEMENT}])")
#: group 1: the same, where characters may be glued to either end (other text: the view
#: folds `é` to `e`, which is then glued to `éc l a u d e`; whether the ends stand alone
#: is judged on the original text, by `alone`)
SPELLED_GLUED_RE = compile_re2(f"(?:^|[^{_ELEMENT}]|{_ESCAPE})[{_ELEMENT}]*((?:[{_ELEMENT}]"
                               f"{_SEP}){{2,}}[{_ELEMENT}])")
ELEMENTS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@$")
#: a name read out of a run must be this long, unless it is the whole run
MIN_CHARS = 4


def spelled_names(text: str, builtin: Callable[[str], Iterable[tuple[int, int]]],
                  names: Any, tail: Callable[[str, int], int],
                  alone: Callable[[int, bool], bool], folded: bool = True
                  ) -> Iterator[tuple[int, int]]:
    """Spans of `text` where a name is spelled out: `builtin(s)` finds the built-in names
    in a string, `names` (a `Literals`, or None) the candidate's own; a name that ends the
    run takes the version written after it (`tail(text, end)`: `G-P-T-4o`). `alone(i,
    first)` says whether the run's character at `i` stands alone on its outer side (a
    first or last character glued to a word is left out of the run: `xc l a u d e`);
    `folded`: `text` is a view that differs from the original (else the anchors of
    SPELLED_RE judge the ends)."""
    glued = folded
    for m in (SPELLED_GLUED_RE if glued else SPELLED_RE).finditer(text):
        a, b = m.span(1)
        pos = [i for i in range(a, b) if text[i] in ELEMENTS]
        if glued:
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
