"""Is a candidate's name an ordinary English word? Then it is not redacted on its own.

The word list is pyspellchecker's English frequency dictionary (about 160,000 words with
counts from OpenSubtitles and Wikipedia; MIT; loaded once, lazily, about 0.3 s). A word is
*common* when its count is at least COMMON_COUNT: `order` (258,122), `support`, `helper`
(1,492) are common; `acme` (130), `sonnet` (664), `claude` (580) are not. Only names made of
letters alone are looked up; anything with a digit, a dash or a space is not a word.
"""

from __future__ import annotations

from functools import lru_cache

COMMON_COUNT = 1000


@lru_cache(maxsize=1)
def _counts() -> dict[str, int]:
    from spellchecker import SpellChecker

    return dict(SpellChecker(language="en", distance=1).word_frequency.dictionary)


@lru_cache(maxsize=4096)
def is_common_word(word: str) -> bool:
    w = word.strip().lower()
    if not w.isalpha() or not w.isascii():
        return False
    return _counts().get(w, 0) >= COMMON_COUNT
