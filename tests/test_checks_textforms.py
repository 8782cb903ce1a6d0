"""The checks' one normalisation of text (judge.checks.textforms): case, whitespace, numbers
and dates, shared by the outcome check's facts and the leakage checks."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.checks.outcome import fact_stated
from judge.checks.textforms import Phrase, date_of, dates_in, fact_in_text, fold, number_tokens
from judge.ledger.scenario import FactRef


@pytest.mark.parametrize(("text", "days"), [
    ("ships 2026-12-05.", {(2026, 12, 5)}),
    ("ships 2026/12/5", {(2026, 12, 5)}),
    ("on December 5, 2026", {(2026, 12, 5)}),
    ("on Dec. 5th 2026", {(2026, 12, 5)}),
    ("the 5th of december 2026", {(2026, 12, 5)}),
    ("5 Dec 2026", {(2026, 12, 5)}),
    ("12/05/2026", {(2026, 12, 5), (2026, 5, 12)}),    # read both ways
    ("13/05/2026", {(2026, 5, 13)}),                    # only one reading is a day
    ("12/5/26", {(2026, 12, 5), (2026, 5, 12)}),
    ("2026-02-30 or 2026-13-01", set()),                # not days
    ("v1.2.2026 and ORD-2026-12-05x", set()),           # parts of other tokens
    ("no date here", set()),
])
def test_dates_in_any_form(text: str, days: set[tuple[int, int, int]]) -> None:
    assert dates_in(text) == days


@settings(max_examples=300, deadline=None)
@given(st.dates(date(1970, 1, 1), date(2069, 12, 31)), st.integers(0, 6))
def test_every_form_of_a_day_is_that_day(d: date, form: int) -> None:
    text = [d.isoformat(), d.strftime("%B %d, %Y"), d.strftime("%d %b %Y"),
            f"{d.month}/{d.day}/{d.year}", f"{d.day}/{d.month}/{d.year}",
            d.strftime("%Y/%m/%d"), f"{d.strftime('%b')}. {d.day}, {d.year}"][form]
    assert (d.year, d.month, d.day) in dates_in(f"due {text}, thanks")
    assert (d.year, d.month, d.day) in date_of(text)


@pytest.mark.parametrize(("text", "phrase", "found"), [
    ("order ORD-88412.", "ord-88412", True),
    ("ORD-884123", "ORD-88412", False),
    ("xORD-88412", "ORD-88412", False),
    ("ship to  Lee\nChen today", "Lee Chen", True),
    ("total 4,200 USD", "4200", True),
    ("total 4200.5", "4200", False),
    ("version 1.4200", "4200", False),
    ("STRASSE 5", "Straße 5", True),                    # casefold
])
def test_a_phrase_is_a_whole_token_of_folded_text(text: str, phrase: str, found: bool) -> None:
    assert (Phrase(phrase).find(fold(text)) >= 0) is found


def test_numbers_stand_alone() -> None:
    assert list(number_tokens("a9999 $4,200.00, 4200x (17). 1.5")) == ["$4,200.00", "17", "1.5"]


@pytest.mark.parametrize(("text", "value", "found"), [
    ("refund of $4,200.00 issued", 4200, True),
    ("refund of 4200.0", "4,200", True),
    ("arrives December 5, 2026", "2026-12-05", True),
    ("arrives December 6, 2026", "2026-12-05", False),
])
def test_fact_in_text(text: str, value: object, found: bool) -> None:
    assert fact_in_text(text, value) is found


def test_the_outcome_check_finds_a_required_date_in_any_form() -> None:
    """Before the shared normalisation, `{text: 2026-12-05}` was missing from a reply that
    said "December 5, 2026"."""
    fact = FactRef(text="2026-12-05")
    assert fact_stated(fact, "Your order arrives on December 5, 2026.")
    assert fact_stated(fact, "Your order arrives on 12/05/2026.")
    assert not fact_stated(fact, "Your order arrives on December 6, 2026.")
    assert fact_stated(FactRef(value=4200), "Refunded $4,200.00.")
    assert fact_stated(FactRef(text="rf-1"), "Refund RF-1 done.")
