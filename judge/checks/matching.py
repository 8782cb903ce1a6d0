"""Small pure helpers shared by the checks: globs, dotted paths, matchers, phrases.

Equality is JSON-strict: `True` never equals `1`, and `"42"` never equals `42`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from judge.ledger.reducer import Entry, LedgerSnapshot
from judge.ledger.scenario import ArgMatcher, ResultMatcher

MISSING: Any = object()
_SCALAR = frozenset({str, int, float})


@lru_cache(maxsize=4096)
def glob_match(name: str, pattern: str) -> bool:
    """A tool name against a glob (`*`, `?`, `[...]`); a plain name must match exactly."""
    return fnmatchcase(name, pattern)


def any_glob(name: str, patterns: list[str] | tuple[str, ...]) -> bool:
    return any(glob_match(name, p) for p in patterns)


def get_path(obj: Any, path: str) -> Any:
    """The value at a dotted path (`a.b.0.c`); `MISSING` when absent. Empty path = obj."""
    if not path:
        return obj
    cur = obj
    for part in path.split("."):
        if isinstance(cur, dict):
            if part not in cur:
                return MISSING
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit():
            i = int(part)
            if not -len(cur) <= i < len(cur):
                return MISSING
            cur = cur[i]
        else:
            return MISSING
    return cur


def json_eq(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def json_in(value: Any, items: Any) -> bool:
    if not isinstance(items, list | tuple):
        return json_eq(value, items)
    return any(json_eq(value, x) for x in items)


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def regex_search(pattern: str, text: str) -> bool:
    return _regex(pattern).search(text) is not None


_BACKREF = re.compile(r"\\[1-9]|\(\?P=|\\g<")


def any_regex(patterns: list[str]) -> Callable[[str], bool]:
    """Does any of `patterns` (case-insensitive) match somewhere in a text? One regex for
    all of them when they combine, else one at a time: an inline global flag cannot be
    combined, and a backreference would point into another pattern's groups."""
    if not patterns:
        return lambda text: False
    try:
        if any(_BACKREF.search(p) for p in patterns):
            raise re.error("backreference")
        combined = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    except re.error:
        compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
        return lambda text: any(c.search(text) for c in compiled)
    search = combined.search
    return lambda text: search(text) is not None


def arg_matches(m: ArgMatcher, args: dict[str, Any], ledger: LedgerSnapshot,
                eq: Callable[[Any, Any], bool] = json_eq) -> bool:
    """Does one argument matcher hold for a call's args, against the ledger at its turn?
    `eq` is the equality (JSON's by default; an outcome reference passes normalised
    equality, judge.diff.normalise.same).

    A ledger test whose key holds no value at that turn never matches (no rule applies).
    """
    def within(value: Any, items: Any) -> bool:
        if not isinstance(items, list | tuple):
            return eq(value, items)
        return any(eq(value, x) for x in items)

    v = get_path(args, m.path)
    if m.exists is not None:
        return (v is not MISSING) is m.exists
    if v is MISSING:
        return False
    if m.equals is not None:
        return eq(v, m.equals)
    if m.not_equals is not None:
        return not eq(v, m.not_equals)
    if m.in_ is not None:
        return within(v, m.in_)
    if m.not_in is not None:
        return not within(v, m.not_in)
    if m.matches is not None:
        return isinstance(v, str) and regex_search(m.matches, v)
    key = m.equals_key or m.in_key or m.not_in_key
    assert key is not None
    held = ledger.value(key, MISSING)
    if held is MISSING or held is None:
        return False
    if m.equals_key is not None:
        return eq(v, held)
    if m.in_key is not None:
        return within(v, held)
    return not within(v, held)


ArgTest = Callable[[dict[str, Any], LedgerSnapshot], bool]


def compile_arg_matcher(m: ArgMatcher) -> ArgTest:
    """`arg_matches` for one matcher, specialised once (the hot path of `forbidden`)."""
    path = m.path
    if path and "." not in path and m.exists is None and m.equals is not None:
        want = m.equals
        if is_scalar(want):
            t = type(want)

            def equals(args: dict[str, Any], _snap: LedgerSnapshot) -> bool:
                v = args.get(path, MISSING)
                return v is not MISSING and ((type(v) is t and v == want) or json_eq(v, want))
            return equals
    if (path and "." not in path and m.exists is None
            and (m.in_ is not None or m.not_in is not None)):
        items = m.in_ if m.in_ is not None else m.not_in
        assert items is not None
        inside = m.in_ is not None
        fast = {x for x in items if is_scalar(x)}
        rest = [x for x in items if not is_scalar(x)]

        def member(args: dict[str, Any], _snap: LedgerSnapshot) -> bool:
            v = args.get(path, MISSING)
            if v is MISSING:
                return False
            found = (is_scalar(v) and v in fast) or json_in(v, rest)
            return found is inside
        return member

    key = m.equals_key or m.in_key or m.not_in_key
    if path and "." not in path and m.exists is None and key is not None and (
            m.equals is None and m.not_equals is None and m.in_ is None and m.not_in is None
            and m.matches is None):
        test = json_eq if m.equals_key is not None else json_in
        negate = m.not_in_key is not None

        def against_ledger(args: dict[str, Any], snap: LedgerSnapshot) -> bool:
            v = args.get(path, MISSING)
            if v is MISSING:
                return False
            held = snap.value(key, MISSING)
            if held is MISSING or held is None:
                return False
            if type(v) is str and type(held) is list:
                return (v in held) is not negate  # a string equals only an equal string
            return test(v, held) is not negate
        return against_ledger

    def general(args: dict[str, Any], snap: LedgerSnapshot) -> bool:
        return arg_matches(m, args, snap)
    return general


def result_matches(m: ResultMatcher, result: Any) -> bool:
    v = get_path(result, m.path)
    if m.exists is not None:
        return (v is not MISSING) is m.exists
    if v is MISSING:
        return False
    if m.equals is not None:
        return json_eq(v, m.equals)
    if m.in_ is not None:
        return json_in(v, m.in_)
    if m.matches is not None:
        text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        return regex_search(m.matches, text)
    return True


def iter_scalars(obj: Any, limit: int = 10_000,
                 keys: bool = False) -> Iterator[str | int | float]:
    """Strings and numbers (not booleans) nested anywhere in `obj`, at most `limit`.

    With `keys`, mapping keys count too (ids are often keys: `{"card_12": {...}}`).
    """
    if (not keys and type(obj) is dict and len(obj) <= limit
            and all(type(v) in _SCALAR for v in obj.values())):
        yield from obj.values()  # the common flat case, no stack
        return
    stack = [obj]
    n = 0
    while stack and n < limit:
        cur = stack.pop()
        if isinstance(cur, str) or (isinstance(cur, int | float) and not isinstance(cur, bool)):
            n += 1
            yield cur
        elif isinstance(cur, dict):
            stack.extend(cur.values())
            if keys:
                stack.extend(cur.keys())
        elif isinstance(cur, list | tuple):
            stack.extend(cur)


def is_scalar(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool))


@lru_cache(maxsize=4096)
def _phrase_re(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)


def has_phrase(text: str, phrase: str) -> bool:
    """Whole-word, case-insensitive: `CA` is found in "ship to CA." but not in "CAT"."""
    if not phrase:
        return False
    if text.isascii() and phrase.isascii():
        return _ascii_phrase_in(text.lower(), phrase.lower())
    return _phrase_re(phrase).search(text) is not None


_ASCII_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _ascii_phrase_in(low: str, phrase: str) -> bool:
    """`has_phrase` for lowered ASCII text and phrase, without the regex engine: an
    occurrence of the phrase with no word character (`\\w`) just before or after it."""
    n, end = len(phrase), len(low)
    i = low.find(phrase)
    while i >= 0:
        j = i + n
        if (i == 0 or low[i - 1] not in _ASCII_WORD) and (j == end or low[j] not in _ASCII_WORD):
            return True
        i = low.find(phrase, i + 1)
    return False


def value_phrases(value: Any) -> list[str]:
    """How a value may appear in text: a scalar as itself; a list as all its scalars."""
    if is_scalar(value):
        return [str(value)]
    if isinstance(value, list) and value and all(is_scalar(x) for x in value):
        return [str(x) for x in value]
    return []


def carries(text: str, entry: Entry) -> bool:
    """Does `text` carry the entry: one of its aliases, or its whole current value?"""
    return text_carrier(entry)(text, text.lower() if text.isascii() else None)


Carrier = Callable[[str, str | None], bool]
"""`carrier(text, low)`: `carries(text, entry)` for one entry; `low` is `text.lower()` if
the text is ASCII, else None (worked out once for all the entries a text is tested for)."""


def text_carrier(entry: Entry) -> Carrier:
    """The entry's `Carrier`, its phrases prepared once (kept while the entry lives)."""
    found = _carriers.get(id(entry))
    if found is None or found[0] is not entry:  # (an id can be reused once freed)
        if len(_carriers) >= 4096:
            _carriers.clear()
        found = _carriers[id(entry)] = (entry, _carrier(entry))
    return found[1]


_carriers: dict[int, tuple[Entry, Carrier]] = {}


def _carrier(entry: Entry) -> Carrier:
    """For ASCII text, lowered phrases found without the regex engine; otherwise all aliases
    in one whole-word regex (some alias matches iff the alternation does), then each phrase
    of the value."""
    aliases = [a for a in entry.aliases if a]
    any_alias = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(a) for a in aliases) + r")(?!\w)",
                           re.IGNORECASE).search if aliases else None
    phrases = value_phrases(entry.value)
    each = [_phrase_re(p).search for p in phrases] if phrases and all(phrases) else []
    low_aliases = [a.lower() for a in aliases] if all(a.isascii() for a in aliases) else None
    low_phrases = ([p.lower() for p in phrases] if each and all(p.isascii() for p in phrases)
                   else None)

    def carrier(text: str, low: str | None) -> bool:
        if any_alias is not None:
            if low is not None and low_aliases is not None:
                for a in low_aliases:
                    if _ascii_phrase_in(low, a):
                        return True
            elif any_alias(text) is not None:
                return True
        if not each:
            return False
        if low is not None and low_phrases is not None:
            return all(_ascii_phrase_in(low, p) for p in low_phrases)
        return all(search(text) is not None for search in each)
    return carrier


def canonical_call(tool: str, args: dict[str, Any] | None) -> int:
    """A hash identifying a call by tool and arguments (key order does not matter)."""
    if args is not None:
        try:  # flat args hash as they are (1, 1.0 and True collide)
            items: frozenset[tuple[str, Any]] | None = frozenset(args.items())
        except TypeError:  # a list or object among the values
            items = None
        if items is not None:
            return hash((tool, items))
    try:
        body = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        body = repr(args)
    return hash((tool, body))
