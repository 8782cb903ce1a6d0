"""A normalised view of a text for matching names and facts, mapped back to the original.

Identity is matched on a view where compatibility forms are folded (NFKC: full-width
`ＧＰＴ`, ligatures, circled and mathematical letters), zero-width and soft-hyphen
characters and the combining marks NFKC leaves are gone, every dash-like character is `-`,
a few Cyrillic/Greek letters and small capitals that look Latin are folded to Latin, and
accented Latin letters to their base letter (`Cläude` is `claude`).
A span found in the view is replaced in the original text (`View.original`), so the output
keeps every character the redaction did not replace. ASCII text is its own view at no cost.

`plain` is the view's text after terminal escape sequences and every control or format
character are dropped: what a reader sees, for checks that look for a fact a trace must not
show (`ORD-88412` written `88\u200b412`, `\x1b[31m88412`, full-width `８８４１２` or with a
Cyrillic `е` in a name is still that fact).
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from urllib.parse import unquote

from judge.safe_text import HIDDEN

#: combining marks that NFKC leaves alone (`c̶l̶a̶u̶d̶e̶`: a strike-through on each letter)
COMBINING = frozenset(chr(c) for lo, hi in ((0x0300, 0x036F), (0x1AB0, 0x1AFF),
                                            (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
                                            (0xFE20, 0xFE2F)) for c in range(lo, hi + 1))
ZERO_WIDTH = frozenset("\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063"
                       "\u2064\ufeff\u034f\u115f\u1160\u3164\uffa0") | COMBINING
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
    # small capitals, which NFKC keeps (`ᴄʟᴀᴜᴅᴇ`), and a few more Latin look-alikes
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i",
    "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z", "ɑ": "a", "ı": "i",
}


def _accented() -> dict[str, str]:
    """Latin letters with diacritics, as their base letter (`Cläude`, `Gémini`, `ChâtGPT`):
    every letter of Latin-1, Latin Extended-A/B and Latin Extended Additional whose
    canonical decomposition is an ASCII letter and combining marks."""
    out: dict[str, str] = {}
    for lo, hi in ((0x00C0, 0x024F), (0x1E00, 0x1EFF)):
        for cp in range(lo, hi + 1):
            d = unicodedata.normalize("NFD", chr(cp))
            if len(d) > 1 and d[0].isascii() and d[0].isalpha() and all(
                    unicodedata.combining(c) for c in d[1:]):
                out[chr(cp)] = d[0]
    return out


CONFUSABLES.update(_accented())


@dataclass(frozen=True, slots=True)
class View:
    text: str
    #: (view start, original start, length, linear) pieces; None: the view is the text.
    #: A linear piece maps character to character; a folded one (one original character
    #: that became several, or stayed one) maps all its view characters to one original.
    pieces: tuple[tuple[int, int, int, bool], ...] | None = None
    starts: tuple[int, ...] = ()

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original span that view characters [start, end) came from."""
        if self.pieces is None:
            return start, end
        return self._at(start), self._at(end - 1) + 1

    def _at(self, v: int) -> int:
        vs, os_, _, linear = self.pieces[bisect_right(self.starts, v) - 1]  # type: ignore[index]
        return os_ + (v - vs) if linear else os_


def _view_of(chars: list[str], pieces: list[tuple[int, int, int, bool]]) -> View:
    return View("".join(chars), tuple(pieces), tuple(p[0] for p in pieces))


_ONE_TO_ONE = {**{h: "-" for h in HYPHENS}, **CONFUSABLES}
_ONE_TO_ONE_RE = re.compile("[" + "".join(sorted(_ONE_TO_ONE)) + "]")
_SPECIAL = re.compile("[" + "".join(sorted(ZERO_WIDTH | HYPHENS | frozenset(CONFUSABLES)))
                      + "]")
_ZW_RUN = re.compile("[" + "".join(sorted(ZERO_WIDTH)) + "]+")


def view(text: str) -> View:
    if text.isascii():
        return View(text, None)
    if unicodedata.is_normalized("NFKC", text):
        if _SPECIAL.search(text) is None:
            return View(text, None)
        # hyphens and look-alikes map one character to one: positions do not move
        folded = _ONE_TO_ONE_RE.sub(lambda m: _ONE_TO_ONE[m.group()], text)
        if ZERO_WIDTH.isdisjoint(text):
            return View(folded, None)
        kept: list[str] = []
        pieces: list[tuple[int, int, int, bool]] = []
        pos = vpos = 0
        for m in _ZW_RUN.finditer(folded):
            if m.start() > pos:
                pieces.append((vpos, pos, m.start() - pos, True))
                kept.append(folded[pos:m.start()])
                vpos += m.start() - pos
            pos = m.end()
        pieces.append((vpos, pos, len(folded) - pos, True))
        kept.append(folded[pos:])
        return _view_of(kept, pieces)
    return _slow_view(text)


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def _slow_view(text: str) -> View:
    """For text that NFKC changes (`…`, full-width letters, ligatures): ASCII stretches are
    copied whole, each non-ASCII character is folded on its own."""
    chars: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    pos = vpos = 0
    for m in _NON_ASCII_RUN.finditer(text):
        if m.start() > pos:
            chars.append(text[pos:m.start()])
            pieces.append((vpos, pos, m.start() - pos, True))
            vpos += m.start() - pos
        for i in range(m.start(), m.end()):
            ch = text[i]
            if ch in ZERO_WIDTH:
                continue
            folded = "-" if ch in HYPHENS else "".join(
                CONFUSABLES.get(c, c) for c in unicodedata.normalize("NFKC", ch))
            if folded:
                chars.append(folded)
                pieces.append((vpos, i, len(folded), False))
                vpos += len(folded)
        pos = m.end()
    chars.append(text[pos:])
    pieces.append((vpos, pos, len(text) - pos, True))
    return _view_of(chars, pieces)


#: ESC sequences a terminal acts on: CSI (colours, cursor), OSC (titles, clipboard; ended by
#: BEL or ST, or by the end of the text), and the two-character ones
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -~]?)")
_WHITESPACE = "\t\n\r\x0b\x0c"
#: control and format characters other than whitespace
_DROP = re.compile(f"(?![{_WHITESPACE}]){HIDDEN.pattern}")
_ASCII_DROP = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_BREAKS = re.compile("[\x85\u2028\u2029]")


def plain(text: str) -> str:
    """`text` as a reader sees it, in the view's folded form: escape sequences dropped, every
    control or format character but whitespace dropped (Unicode's line and paragraph
    separators are spaces), then `view`'s folding (NFKC, zero-width characters, dashes,
    look-alikes, accents)."""
    if text.isascii() and _ASCII_DROP.search(text) is None:
        return text  # the common case: nothing to drop, nothing to fold
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    text = _DROP.sub("", _BREAKS.sub(" ", text))
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    # `view`'s folding without its map back to the original (nothing here needs positions):
    # whole-text passes instead of one character at a time
    return _ONE_TO_ONE_RE.sub(lambda m: _ONE_TO_ONE[m.group()], _ZW_RUN.sub("", text))


#: markup a renderer or a browser reads through: HTML tags, Markdown emphasis and code marks
_TAG = re.compile(r"<[^<>]{0,200}>")
_EMPHASIS = re.compile(r"[*~`]+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
#: a `+` between two word characters (a URL's query writes a space so) and JSON's \uXXXX
_PLUS = re.compile(r"(?<=\w)\+(?=\w)")
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _decoded(text: str) -> str:
    if "\\u" in text:
        text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text, errors="replace")
    if "<" in text:
        text = _TAG.sub("", text)
    return _PLUS.sub(" ", _EMPHASIS.sub("", text))


def readings(text: str) -> tuple[str, ...]:
    """The ways a reader may read `text`: `plain(text)`, and, when it differs, the same after
    the markup a renderer or a browser reads through — HTML entities and tags, Markdown
    emphasis (`**ORD**-**88412**`), percent-escapes and `+` of a URL (`Lee+Chen`,
    `ORD%2D88412`), JSON's `\\u0038` — is read through. Both are kept: reading markup through
    can join what the text keeps apart."""
    seen = plain(text)
    if not _MAY_DECODE.search(seen):
        return (seen,)
    alt = plain(_decoded(seen))
    return (seen,) if alt == seen else (seen, alt)


_MAY_DECODE = re.compile(r"[&%<*~`_+]|\\u")
