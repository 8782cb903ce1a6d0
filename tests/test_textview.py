"""`textview.plain`: a text as a reader sees it, the form fact checks look in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judge.safe_text import HIDDEN
from judge.textview import plain, view

#: letters a disguise is made of: ASCII, accented, combining marks, full-width, Cyrillic and
#: Greek look-alikes, dashes, ligatures, zero-width characters
PIECES = st.sampled_from([*"abcXYZ019 -.,", "é", "ü", "e\u0308", "\u0336", "ｘ", "８",
                          "а", "е", "Ο", "\u2011", "\u2014", "ﬁ", "\u200b", "\u00ad",
                          "\ufeff", "ᴄ", "ı"])


@given(st.lists(PIECES, max_size=30).map("".join))
def test_plain_is_the_redaction_view_of_text_without_controls(text: str) -> None:
    """Where nothing is hidden or escaped, `plain` folds exactly as the identity view the
    redaction matches names on (one pass over the text instead of one per character)."""
    assert HIDDEN.search(text) is None or set(HIDDEN.findall(text)) <= {"\u200b", "\u00ad",
                                                                        "\ufeff"}
    assert plain(text) == view(text).text


@given(st.lists(PIECES | st.sampled_from(["\x1b[31m", "\x1b[0m", "\x1b]52;c;aGk=\x07",
                                           "\u202e", "\u2066", "\x00", "\t", "\n"]),
                max_size=30).map("".join))
def test_plain_shows_nothing_a_reader_cannot_see_and_is_stable(text: str) -> None:
    out = plain(text)
    assert "\x1b" not in out and set(HIDDEN.findall(out)) <= set("\t\n")
    assert plain(out) == out


def test_escapes_and_invisible_characters_leave_the_letters_a_reader_reads() -> None:
    assert plain("order \x1b[31m88\u200b412\x1b[0m") == "order 88412"
    assert plain("ＯＲＤ\u2011７７１ for L\u0435e Ch\u0435n\n") == "ORD-771 for Lee Chen\n"
    assert plain("\x1b]0;title\x07ok\x1b") == "ok"
    assert plain("one\ttwo\nthree\u2028four\x00") == "one\ttwo\nthree four"
