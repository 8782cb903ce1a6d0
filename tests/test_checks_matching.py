"""The compiled matchers of judge.checks.matching agree with their plain definitions."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.checks.matching import carries, has_phrase, value_phrases
from judge.ledger.reducer import Entry
from judge.ledger.scenario import EntryClass, Persistence, Sensitivity, Source

words = st.sampled_from(["US", "ship to US", "CA", "500 dollars", "a.b", "(x)", "", " ",
                         "é", "order-13", "7", "us", "U", "uſ", "\u212a", "k", "\u0130x",
                         "ix", "ß", "SS", "a a", "b", "a"])
entry_values = st.one_of(st.none(), words, st.integers(0, 9), st.floats(0, 2),
                         st.lists(st.one_of(words, st.integers(0, 9)), max_size=3),
                         st.dictionaries(st.just("k"), words, max_size=1), st.booleans())


def plain_carries(text: str, entry: Entry) -> bool:
    """`carries` as specified: an alias as a whole phrase, or every phrase of the value."""
    if any(has_phrase(text, a) for a in entry.aliases):
        return True
    phrases = value_phrases(entry.value)
    return bool(phrases) and all(has_phrase(text, p) for p in phrases)


def entry(value: Any, aliases: list[str]) -> Entry:
    return Entry(key="k", value=value, class_=EntryClass.CONSTRAINT,
                 persistence=Persistence.SESSION, sensitivity=Sensitivity.NORMAL,
                 source=Source.USER, since_turn=1, aliases=tuple(aliases))


@settings(max_examples=500, deadline=None)
@given(value=entry_values, aliases=st.lists(words, max_size=3),
       text=st.lists(st.one_of(words, st.sampled_from([" ", ", ", "x", "-", ".", "_", "9"])),
                     max_size=6).map("".join))
def test_compiled_carries_is_the_plain_definition(value: Any, aliases: list[str],
                                                  text: str) -> None:
    e = entry(value, aliases)
    assert carries(text, e) == plain_carries(text, e)
    assert carries(text, e) == plain_carries(text, e)  # the compiled form, cached


def plain_has_phrase(text: str, phrase: str) -> bool:
    return bool(phrase) and re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text,
                                      re.IGNORECASE) is not None


@settings(max_examples=500, deadline=None)
@given(phrase=words, text=st.lists(st.one_of(words, st.sampled_from(list(" x._1-"))),
                                   max_size=5).map("".join))
def test_has_phrase_is_the_whole_word_regex(phrase: str, text: str) -> None:
    assert has_phrase(text, phrase) == plain_has_phrase(text, phrase)


@pytest.mark.parametrize(("text", "phrase", "found"), [
    ("ba a a", "a a", True),  # the first occurrence is inside a word, an overlapping one not
    ("xa-a-a.", "a-a", True), ("ship to CA.", "ca", True), ("CAT", "CA", False),
    ("_US", "us", False), ("US_", "us", False), ("(x) y", "(x)", True), ("a(x)", "(x)", False),
])
def test_has_phrase_examples(text: str, phrase: str, found: bool) -> None:
    assert has_phrase(text, phrase) is found is plain_has_phrase(text, phrase)
