"""A normalised view of a text for matching names, mapped back to the original.

Identity is matched on a view where compatibility forms are folded (NFKC: full-width
`ＧＰＴ`, ligatures), zero-width and soft-hyphen characters are gone, every dash-like
character is `-`, and a few Cyrillic/Greek letters that look Latin are folded to Latin.
A span found in the view is replaced in the original text (`View.original`), so the output
keeps every character the redaction did not replace. ASCII text is its own view at no cost.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

ZERO_WIDTH = frozenset("\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063"
                       "\u2064\ufeff\u034f\u115f\u1160\u3164\uffa0")
HYPHENS = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58"
                    "\ufe63\uff0d\u02d7\u058a\u05be\u1806\u30fc")
#: Latin look-alikes (a short list of the common confusables, not all of Unicode's)
CONFUSABLES = {
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "ɡ": "g", "ӏ": "l", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "ι": "i", "κ": "k", "Α": "A",
    "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}
_SPECIAL = ZERO_WIDTH | HYPHENS | frozenset(CONFUSABLES)


@dataclass(frozen=True, slots=True)
class View:
    text: str
    #: index in the original text of each view character (None: the view is the text)
    index: tuple[int, ...] | None

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original span that view characters [start, end) came from."""
        if self.index is None:
            return start, end
        return self.index[start], self.index[end - 1] + 1


def view(text: str) -> View:
    if text.isascii():
        return View(text, None)
    if unicodedata.is_normalized("NFKC", text) and _SPECIAL.isdisjoint(text):
        return View(text, None)
    chars: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            chars.append(ch)
            index.append(i)
            continue
        if ch in ZERO_WIDTH:
            continue
        if ch in HYPHENS:
            folded = "-"
        else:
            folded = unicodedata.normalize("NFKC", ch)
            folded = "".join(CONFUSABLES.get(c, c) for c in folded)
        for c in folded:
            chars.append(c)
            index.append(i)
    return View("".join(chars), tuple(index))
