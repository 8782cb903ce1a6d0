"""Credentials given in free text, in several languages: a keyword, then its value.

A keyword of lexicon.py (`password`, `Passwort`, `mot de passe`, `contraseña`, `senha`,
`пароль`, `密码`, `パスワード`, `PIN`, `CVV`, `signing key`, …), then one of these forms;
the span reported is the value's only, so the judge still reads that a password was given:

1. a separator: `password: X`, `Passwort = X`, `пароль — X`, `密码：X`, `mot de passe : X`;
2. a copula: `my pw is: X`, `mein Passwort lautet X`, `mon mot de passe est X`,
   `mi contraseña es X`, `minha senha é X`, `мой пароль это X`, `我的密码是X`, `パスワードはX`;
3. a few words, then 1 or 2: `the password for the VPN is X`, `Passwort für den Server: X`;
4. the value alone: `password hunter7hunter`, `PIN 4829`, `CVV 613`, `signing key 3f9a…`;
5. (keys) a few words, then key material: `signing key (hex) 3f9a…`.

They are tried in the order 1, 2, 4, 3, 5. A keyword of a language written without spaces
takes its own particles (`是`, `は`, `는`) and an ASCII value glued to it, or any form above
(`the 密钥 is …`).

In forms 1 and 2 any value is taken unless it says the secret is absent or how it is
(`is incorrect`, `ist falsch`, `est requis`, `неверный`: lexicon.STATE_WORDS). In forms
3–5 the value must also look like a secret of the keyword's kind: a password (a digit or
symbol among letters, all digits, mixed case inside a long word, or words joined by
hyphens), a number (3–12 digits, for PINs, card codes and one-time codes), key material
(32+ hex digits or a long high-entropy token, where no hash or commit word sits between),
or a passphrase. So `password reset link sent`, `PIN code feature`, `token count 4096`,
`commit 3f9a…`, `signing key fingerprint 3f9a…` stay as they are. Quoted values (`"…"`,
`'…'`, `«…»`, `„…“`, `「…」`, JSON-escaped `\\"…\\"`) are taken whole; a passphrase after a
separator or copula runs to the end of its clause (seed phrases are words).

Keywords are found in one RE2 pass; each form is then read with small, bounded Python
patterns over the next few hundred characters only (`match(text, pos, endpos)`: no copy,
so the whole stays linear in the text).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from itertools import pairwise

from judge.redaction.lexicon import (
    COPULAS,
    FUNCTION_WORDS,
    KEYWORD_KIND,
    NEEDS_SEPARATOR,
    OWN_LANGUAGE_COPULAS,
    STATE_WORDS,
    UNSPACED_COPULAS,
    UNSPACED_KIND,
)
from judge.redaction.rx import compile_re2
from judge.redaction.secrets import entropy, is_placeholder
from judge.redaction.spans import Span, escape_ends_at

#: how far after a keyword its value is looked for
WINDOW = 240


def _alternation(words: list[str]) -> str:
    def one(w: str) -> str:
        return r"[ \t]+".join(re.escape(part) for part in w.split())

    return "|".join(one(w) for w in sorted(words, key=len, reverse=True))


_SPACES = re.compile(r"[ \t]+")


def fold(word: str) -> str:
    """A keyword as looked up: case and accents folded, spaces single (`API ANAHTARI` is
    `api anahtarı`, whose dotless ı upper-cases to I)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold().replace("ı", "i"))
    return _SPACES.sub(" ", "".join(c for c in decomposed if not unicodedata.combining(c)))


_SPACED_KIND = {fold(w): kind for w, kind in KEYWORD_KIND.items()}
_UNSPACED_KIND = {fold(w): kind for w, kind in UNSPACED_KIND.items()}
_NEEDS_SEPARATOR = frozenset(fold(w) for w in NEEDS_SEPARATOR)
_OWN_COPULAS = {c: frozenset(fold(w) for w in words) for c, words in
                OWN_LANGUAGE_COPULAS.items()}
#: group 1: a keyword of a spaced language; group 2: one of an unspaced language. Each as
#: written and folded (`contrasena`, `codigo pin`; and `api anahtari`, which RE2's case
#: folding needs to match `API ANAHTARI`)
KEYWORD_RE = compile_re2(f"(?i)({_alternation(sorted(set(KEYWORD_KIND) | set(_SPACED_KIND)))})|"
                         f"({_alternation(sorted(set(UNSPACED_KIND) | set(_UNSPACED_KIND)))})")

#: `:`, `=`, `=>`, `->`, `→`, a dash set off by spaces, an em or en dash (the value may
#: start the next line, raw or escaped: `Password:\\nhunter7`); or the end of an XML/HTML
#: tag (`<password>X</password>`); after a closing quote (`"Passwort": …`)
_SEP = re.compile(r"""\\?["']?[ \t]*(?:=>|->|:=|[:：=→]|[—–]|(?<=[ \t])-(?=[ \t]))[ \t]*"""
                  r"""(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*)?|>""")
#: `password's X`; `password, X` (then the value must look like one)
_CONTRACTION = re.compile(r"['’]s[ \t]+")
_COMMA = re.compile(r"[ \t]*,[ \t]*")
_COPULA = re.compile(
    r"[ \t]+(" + "|".join(r"[ \t]+".join(re.escape(p) for p in c.split())
                          for c in sorted(set(COPULAS), key=len, reverse=True))
    + r""")(?:[ \t]*[:：])?(?=[ \t"'`«“„「]|$)[ \t]*""", re.IGNORECASE)
_UNSPACED_COPULA = re.compile(
    r"[ \t]*(?:" + "|".join(re.escape(c) for c in UNSPACED_COPULAS) + r")[ \t]*[:：]?[ \t]*")
#: one word between a keyword and its separator or copula (`for`, `the`, `VPN`, `(hex)`)
_WORD = re.compile(r"""[ \t]+[^\s:：=,.;!?"`\[\]{}<>\\]{1,30}""")
MAX_WORDS = 5
_BARE = re.compile(r"[ \t]+[(\[]?")
_CLAUSE_END = re.compile(r"""[ \t]*(?:[.,;:!?)"'\]}\n]|\\[nrt"]|$)""")
#: the value before its keyword: `hunter7 is my password`, `use X as the new password`,
#: `X ist mein Passwort` (then the value must look like one)
_BEFORE = re.compile(
    r"""(?:^|(?<=[\s"'(>]))([^\s"'()<>\[\]{}\\]{3,60})[ \t]+(?:(?:is|was|will[ \t]+be|ist|war|"""
    r"""est|était|es|era|é|è)[ \t]+(?:my|the|your|our|his|her|their|mein|meine|dein|deine|das|"""
    r"""der|die|mon|ma|le|la|votre|mi|tu|el|su|meu|minha|o|a|sua|il|mio)|"""
    r"""as[ \t]+(?:the|your|my|a|an))[ \t]+(?:(?:new|old|current|temporary|initial|"""
    r"""neues|nouveau|nouvelle|nueva|nova)[ \t]+)?$""", re.IGNORECASE)

_QUOTED = re.compile(
    r"""\\"([^"\\\n]{1,200})\\"|"([^"\\\n]{1,200})"|'([^'\n]{1,200})'|`([^`\n]{1,200})`"""
    r"|«([^»\n]{1,200})»|“([^”\n]{1,200})”|„([^“”\n]{1,200})[“”]|「([^」\n]{1,200})」"
    r"|『([^』\n]{1,200})』")
#: a value: no space, quote, bracket or backslash, no control character, and no CJK (a
#: value ends where a sentence in Chinese or Japanese goes on: `hunter2我的…`)
_TOKEN = re.compile(r"""[^\s"'`<>\[\]{}()，。、；：！？（）「」『』【】《》“”‘’«»\\"""
                    "\x00-\x1f\x7f\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
                    "]{1,200}")
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9!#$%&*+\-./=?@^_|~]{1,200}")
_CLAUSE = re.compile(r"""[^\n.;!?"\\，。；！？]{1,200}""")
#: sentence punctuation after a value, not part of it (`!` and `?` are: `Summer2024!`)
_TRAILING = ".,;:)"
_TRAILING_NUMBER = ".,;:)!?"

#: words between a key word and hex digits that make those digits no key
_NOT_KEY_CONTEXT = re.compile(r"(?i)\b(?:hash|sha\d*|md5|commit|digest|checksum|"
                              r"fingerprint|id|uuid|etag|revision|rev|build|public)\b")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_SYMBOLS = frozenset("!@#$%^&*+=?~|<>{}[]()/\\:;,'\"`")
_NUMBER_UNIT = re.compile(r"\d+[a-z]+|v?\d+(?:\.\d+)+|\d+(?:st|nd|rd|th)", re.IGNORECASE)


def find_phrases(text: str) -> Iterator[tuple[Span, str | None]]:
    """(span of the value, the value to remember or None) for every credential phrase."""
    n = len(text)
    for m in KEYWORD_RE.finditer(text):
        spaced = m.start(1) >= 0
        s, e = m.span()
        if spaced and not _at_word(text, s, e):
            continue
        word = fold(m.group())
        kind = (_SPACED_KIND if spaced else _UNSPACED_KIND).get(word)
        if kind is None:
            continue
        end = min(n, e + WINDOW)
        found = _spaced(text, word, kind, e, end) if spaced else _unspaced(text, word, kind, e,
                                                                        end)
        if found is None and spaced:
            found = _before(text, kind, s, e)
        if found is not None:
            a, b = found
            value = text[a:b]
            yield Span(a, b, "secret"), (value if kind != "number" and len(value) >= 6 else None)


def _at_word(text: str, s: int, e: int) -> bool:
    """A spaced language's keyword stands as a word: no letter, digit or `_` glued to it.
    Before it, only a letter of its own script counts (`我的密钥是2fa code: 100`,
    `是пин: 100`, `éPasswort: …` are boundaries), and an
    escape's letter does not (`\\npassword`); after it, any letter or digit does
    (`Passwortänderung`, `passwords1`)."""
    if s > 0:
        prev = text[s - 1]
        if (prev == "_" or (prev.isalnum() and _script(prev) == _script(text[s]))) \
                and not escape_ends_at(text, s):
            return False
    return not (e < len(text) and (text[e].isalnum() or text[e] == "_"))


def _script(ch: str) -> str:
    """`ascii`, or the first word of the character's Unicode name (LATIN, CYRILLIC, CJK,
    HIRAGANA, …): letters of two scripts side by side are two words."""
    if ch.isascii():
        return "ascii"
    return unicodedata.name(ch, "?").split(" ", 1)[0]


def _spaced(text: str, word: str, kind: str, pos: int, end: int) -> tuple[int, int] | None:
    """The forms in order: 1 and 2 (directly after the keyword), 4 (the value alone: a
    word that looks like a secret right after the keyword is one, whatever follows), 3 (a
    few words first), 5. Reading the value alone before a few words keeps redaction
    idempotent: a few words may end in a separator only because a later value is not yet
    redacted (`seed phrase A-A https://…?sig=…` read `https:` as the separator)."""
    for start, strict in _joins(text, word, pos, end):  # 1, 2: directly after the keyword
        v = _value(text, start, end, kind, strict=strict)
        if v is not None:
            return v
    if word not in _NEEDS_SEPARATOR:  # 4: the value alone
        m = _BARE.match(text, pos, end)
        if m is not None:
            v = _value(text, m.end(), end, kind, strict=True)
            if v is not None:
                return v
    for after in _words(text, pos, end):  # 3: a few words, then a separator or copula
        for start, _ in _joins(text, word, after, end):
            v = _value(text, start, end, kind, strict=True)
            if v is not None:
                return v
    if kind == "key":  # 5: a few words, then key material
        return _key_after_words(text, pos, end)
    return None


def _joins(text: str, word: str, pos: int, end: int) -> Iterator[tuple[int, bool]]:
    """Where a value may start after a separator or copula at `pos`, and whether it must
    then look like a secret (after a comma, or a copula of another language: `password to
    the VPN` is English, `hasło to X` Polish)."""
    m = _SEP.match(text, pos, end)
    if m is not None:
        yield m.end(), False
    m = _COPULA.match(text, pos, end)
    if m is not None:
        own = _OWN_COPULAS.get(_SPACES.sub(" ", m.group(1).lower()))
        yield m.end(), own is not None and word not in own
    for form, strict in ((_CONTRACTION, False), (_COMMA, True)):
        m = form.match(text, pos, end)
        if m is not None:
            yield m.end(), strict


def _before(text: str, kind: str, s: int, e: int) -> tuple[int, int] | None:
    """A value said before its keyword (`_BEFORE`), if it looks like one and the keyword
    ends the clause (`4829 is my PIN.`, not `order 4829 is the PIN pad model`)."""
    if e < len(text) and not _CLAUSE_END.match(text, e):
        return None
    m = _BEFORE.search(text, max(0, s - 90), s)
    if m is None:
        return None
    a, b = _trimmed(text, m.start(1), m.end(1), _TRAILING_NUMBER if kind == "number"
                    else _TRAILING)
    value = text[a:b]
    return (a, b) if not _no_value(value, kind) and _looks_like(value, kind) else None


def _words(text: str, pos: int, end: int) -> Iterator[int]:
    """Where each of the next 1..MAX_WORDS words after `pos` ends (not past a clause)."""
    for _ in range(MAX_WORDS):
        m = _WORD.match(text, pos, end)
        if m is None:
            return
        pos = m.end()
        yield pos


def _unspaced(text: str, word: str, kind: str, pos: int, end: int
              ) -> tuple[int, int] | None:
    m = _UNSPACED_COPULA.match(text, pos, end)
    if m is not None and m.end() > pos:
        v = _value(text, m.end(), end, kind, strict=False, ascii_only=True)
        if v is not None:
            return v
    if word not in _NEEDS_SEPARATOR:
        start = pos
        while start < end and text[start] in " \t":
            start += 1
        v = _value(text, start, end, kind, strict=True, ascii_only=True)
        if v is not None:
            return v
    # a keyword of an unspaced language among words of a spaced one (`the 密钥 is …`)
    return _spaced(text, word, kind, pos, end)


def _value(text: str, start: int, end: int, kind: str, *, strict: bool,
           ascii_only: bool = False) -> tuple[int, int] | None:
    """The value that starts at `start`, if it is one for a keyword of `kind` (`strict`:
    it must also look like one)."""
    q = _QUOTED.match(text, start, end)
    if q is not None:
        g = next(i for i in range(1, (q.re.groups or 0) + 1) if q.start(i) >= 0)
        a, b = q.span(g)
        value = text[a:b]
        if value.strip() and not _no_value(value, kind):
            return a, b
        return None
    if kind == "phrase":
        words = _passphrase(text, start, end, strict)
        if words is not None:
            return words
        if not strict:
            c = _CLAUSE.match(text, start, end)
            if c is None or not text[start].isalnum():  # words, not `(flight UA 4829`
                return None
            a, b = _trimmed(text, c.start(), c.end())
            return (a, b) if b > a and not _no_value(text[a:b], kind) else None
    # a number ends where its digits do (`is 100我的…`); other values run to a space
    t = (_ASCII_TOKEN if ascii_only or kind == "number" else _TOKEN).match(text, start, end)
    if t is None:
        return None
    a, b = _trimmed(text, t.start(), t.end(), _TRAILING_NUMBER if kind == "number"
                    else _TRAILING)
    if b - a < 3:
        return None
    value = text[a:b]
    if _no_value(value, kind):
        return None
    if strict and not _looks_like(value, kind):
        return None
    return a, b


_PHRASE_WORD = re.compile(r"[^\W\d_]{2,24}")
_PHRASE_GAP = re.compile(r"[ \t]+")


def _passphrase(text: str, start: int, end: int, strict: bool) -> tuple[int, int] | None:
    """Words of letters from `start` (a passphrase given without quotes: `correct horse
    battery staple`), up to the first function word or anything else: three or more after a
    separator or copula (four when the first is a word a secret can be said to be:
    `is very strong indeed` is none), four or more in lower case when given alone
    (`passphrase recovery link sent` is none)."""
    pos = start
    last = -1
    n = 0
    lower = True
    while pos < end:
        w = _PHRASE_WORD.match(text, pos, end)
        if w is None or w.group().lower() in FUNCTION_WORDS:
            break
        if w.end() < len(text) and (text[w.end()].isalnum() or text[w.end()] == "_"):
            break  # a word glued to digits or more: no passphrase word
        n += 1
        last = w.end()
        lower = lower and w.group().islower()
        gap = _PHRASE_GAP.match(text, w.end(), end)
        if gap is None:
            break
        pos = gap.end()
    if strict:
        return (start, last) if n >= 4 and lower else None
    first = text[start:text.find(" ", start) if " " in text[start:last] else last].lower()
    return (start, last) if n >= (4 if first in STATE_WORDS else 3) else None


def _trimmed(text: str, a: int, b: int, trailing: str = _TRAILING) -> tuple[int, int]:
    while b > a and (text[b - 1] in trailing or text[b - 1].isspace()) and b - a > 1:
        b -= 1
    return a, b


def _no_value(value: str, kind: str) -> bool:
    first = value.split(maxsplit=1)[0] if value.split() else value
    if is_placeholder(value) or first.lower().strip(_TRAILING) in STATE_WORDS:
        return True
    return kind == "number" and not any(c.isdigit() for c in value)


def _looks_like(value: str, kind: str) -> bool:
    if kind == "number":
        return value.isdigit() and 3 <= len(value) <= 12
    if kind == "key":
        return _keyish(value) or (len(value) >= 8 and looks_like_password(value))
    if kind == "phrase":
        parts = re.split(r"[-_.]", value)
        return (len(parts) >= 2 and all(p.isalpha() for p in parts)) \
            or looks_like_password(value)
    return looks_like_password(value)


@lru_cache(maxsize=4096)
def looks_like_password(value: str) -> bool:
    """Would a person read `value`, given right after the word "password", as one?"""
    if len(value) < 4 or value.lower() in STATE_WORDS:
        return False
    if value.isdigit():
        return True
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(c in _SYMBOLS for c in value)
    if letters and digits:
        return len(value) >= 5 and not _NUMBER_UNIT.fullmatch(value)
    if letters and symbols:
        return True
    parts = re.split(r"[-_.]", value)
    if len(parts) >= 4 and all(p.isalpha() for p in parts):
        return True  # correct-horse-battery-staple
    return len(value) >= 8 and any(a.islower() and b.isupper() for a, b in pairwise(value))


def _keyish(value: str) -> bool:
    if _HEX.fullmatch(value):
        return True
    return len(value) >= 20 and any(c.isdigit() for c in value) \
        and any(c.isalpha() for c in value) and entropy(value) >= 3.5


def _key_after_words(text: str, pos: int, end: int) -> tuple[int, int] | None:
    """Key material one to MAX_WORDS words after a key word (`signing key (hex) 3f9a…`),
    unless a word between says it is a hash, a commit or an id."""
    for after in _words(text, pos, end):
        if _NOT_KEY_CONTEXT.search(text, pos, after):
            return None
        bare = _BARE.match(text, after, end)
        if bare is None:
            return None
        t = _TOKEN.match(text, bare.end(), end)
        if t is not None:
            a, b = _trimmed(text, t.start(), t.end())
            if _keyish(text[a:b]):
                return a, b
    return None
