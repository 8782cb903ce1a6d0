"""judge.safe_text and judge.cli.console: nothing from content is live in a terminal,
Markdown, HTML or JSON — checked against the Unicode database and real parsers (markdown-it
with GFM tables and linkify, html.parser, rich)."""

from __future__ import annotations

import io
import json
import re
import sys
import unicodedata
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from judge.cli.console import console, echo, field
from judge.safe_text import (
    CODE_SPAN,
    HIDDEN,
    html_code_spans,
    html_text,
    json_safe,
    md_code,
    md_code_spans,
    md_fence,
    md_text,
    visible,
)
from tests.hostile_text import CORPUS, HOSTILE, raw_controls

HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}

# any text, with the dangerous characters much more likely than uniform sampling gives
DANGEROUS = ("\x1b\x07\x00\x7f\x85\x9b\x9d\u202e\u2066\u200b\u200d\ufeff\u2028\n\r\t"
             "[]<>|`*_#!:@.\\&$~()")
texts = st.text(st.one_of(st.characters(codec="utf-8"), st.characters(),
                          st.sampled_from(DANGEROUS)), max_size=60)


def test_hidden_covers_every_control_and_format_character() -> None:
    missing = [hex(cp) for cp in range(sys.maxunicode + 1)
               if unicodedata.category(chr(cp)) in HIDDEN_CATEGORIES
               and not HIDDEN.fullmatch(chr(cp))]
    assert missing == []


def test_ordinary_text_is_unchanged() -> None:
    for s in ("refund-once/pass#4:scope_fidelity", "naïve café 東京 😀", "a b\u00a0c", ""):
        assert visible(s) == s


@pytest.mark.parametrize("s", HOSTILE)
def test_visible_leaves_no_raw_control(s: str) -> None:
    shown = visible(s)
    assert not HIDDEN.search(shown)
    assert raw_controls(shown.encode("utf-8", "surrogatepass")) == []


@given(texts)
def test_visible_is_printable_idempotent_and_keeps_what_is_asked(s: str) -> None:
    shown = visible(s)
    assert not HIDDEN.search(shown) and visible(shown) == shown
    shown.encode("utf-8")  # lone surrogates are escaped too: the encoder cannot fail
    kept = visible(s, keep="\n")
    assert kept.count("\n") == s.count("\n") and not HIDDEN.search(kept.replace("\n", ""))


def test_escapes_read_as_python_escapes() -> None:
    assert visible("\x1b[2J") == "\\x1b[2J"
    assert visible("a\u202eb") == "a\\u202eb"
    assert visible("\U000e0041") == "\\U000e0041"
    assert visible("x\ny\tz") == "x\\ny\\tz"
    assert visible("\ud800") == "\\ud800"


# -- Markdown, through a CommonMark + GFM parser with linkify on ---------------------------
MD = MarkdownIt("gfm-like", {"typographer": False})


def _md_escape(s: str) -> str:  # how markdown-it escapes text in HTML output
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&quot;")


def _para(rendered: str) -> str:
    assert rendered.startswith("<p>") and rendered.endswith("</p>\n"), rendered
    return rendered[3:-5]


@pytest.mark.parametrize("s", HOSTILE)
def test_md_text_renders_as_the_literal_text(s: str) -> None:
    html = MD.render("x " + md_text(s))
    assert _para(html) == _md_escape(("x " + visible(s)).rstrip())


@settings(max_examples=300)
@given(texts)
def test_md_text_property_no_markup_from_any_text(s: str) -> None:
    html = MD.render("x " + md_text(s))
    assert _para(html) == _md_escape(("x " + visible(s)).rstrip())


@settings(max_examples=500)
@given(st.text(st.sampled_from("ab.-_:/@w cmo"), max_size=30))
def test_md_text_property_no_link_from_host_like_text(s: str) -> None:
    """Host names, schemes and emails glued to '_' and '-' (a linkifier's edge cases)."""
    html = MD.render("x " + md_text(s))
    assert "<a " not in html and _para(html) == _md_escape(("x " + visible(s)).rstrip())


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_cells(html: str) -> _Cells:
    p = _Cells()
    p.feed(html)
    p.close()
    return p


@settings(max_examples=200)
@given(st.lists(st.lists(texts, min_size=3, max_size=3), min_size=1, max_size=4))
def test_md_table_keeps_its_columns_and_cells(rows: list[list[str]]) -> None:
    lines = ["| a | b | c |", "|---|---|---|"]
    lines += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    parsed = table_cells(MD.render("\n".join(lines) + "\n"))
    assert set(parsed.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}
    assert [len(r) for r in parsed.rows] == [3] * (len(rows) + 1)
    assert parsed.rows[1:] == [[visible(c).strip() for c in r] for r in rows]


@given(texts)
def test_md_code_and_fence_cannot_be_closed_from_inside(s: str) -> None:
    span = MD.render("x " + md_code(s))
    assert span.startswith("<p>x <code>") and span.count("<code>") == 1
    block = MD.render("\n".join([*md_fence([s, "after"]), "", "tail"]) + "\n")
    assert block.startswith("<pre><code>") and block.count("<pre>") == 1
    assert block.endswith("<p>tail</p>\n")
    assert _md_escape(visible(s)) in block


# -- HTML and JSON -------------------------------------------------------------------------
class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.data: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.data.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


@given(texts)
def test_html_text_is_only_text(s: str) -> None:
    p = _Tags()
    p.feed(f"<p>{html_text(s)}</p>")
    p.close()
    assert p.tags == ["p"] and not p.comments and "".join(p.data) == visible(s)


@given(st.recursive(st.none() | st.booleans() | st.integers() | texts,
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3),
                    max_leaves=8))
def test_json_safe_is_the_same_data_with_nothing_raw(value: object) -> None:
    try:
        doc = json.dumps(value, ensure_ascii=False, indent=1)
        doc.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: only escaped JSON can carry them
        doc = json.dumps(value, ensure_ascii=False, indent=1)
    safe = json_safe(doc)
    assert json.loads(safe) == value
    assert not HIDDEN.search(safe.replace("\n", ""))


# -- the CLI's console and echo ------------------------------------------------------------
def _render(*renderables: object, width: int = 200) -> str:
    buf = io.StringIO()
    con = console(file=buf, width=width, force_terminal=True, color_system="truecolor")
    for r in renderables:
        con.print(r)
    return buf.getvalue()


def _strip_sgr(s: str) -> str:
    """rich's own styling: SGR sequences (ESC [ … m) only."""
    return re.sub(r"\x1b\[[0-9;]*m", "", s)


@pytest.mark.parametrize("s", HOSTILE)
def test_console_shows_content_literally_even_on_a_terminal(s: str) -> None:
    table = Table("col")
    table.add_row(s)
    table.add_row(Text(s))
    out = _render(s, f"prefix {s}", table, Panel(s, title="t"), Text(s), width=400)
    rest = _strip_sgr(out)  # what is left must be text: no content escape, no OSC 8 link
    assert "\x1b" not in rest and raw_controls(rest.encode("utf-8", "surrogatepass")) == []
    for line in visible(s, keep="\n").split("\n"):
        assert line.strip() in rest  # markup printed as itself, not interpreted


def test_console_markup_would_have_rendered() -> None:
    """The check above has teeth: a default Console turns the same text into styles."""
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, force_terminal=True, color_system="truecolor").print(
        CORPUS["rich_markup"][0])
    assert "[bold red]" not in buf.getvalue() and "\x1b[1;31m" in buf.getvalue()


def test_echo_and_field(capsys: pytest.CaptureFixture[str]) -> None:
    echo("line one\nline two\t\x1b[2J\u202e")
    assert capsys.readouterr().out == "line one\nline two\t\\x1b[2J\\u202e\n"
    assert field("a\nb\x07") == "a\\nb\\x07"


def test_the_parser_would_have_rendered_the_corpus_live() -> None:
    """The Markdown checks above have teeth: unescaped, the corpus makes links, images,
    headings, raw HTML and extra table cells."""
    live = [MD.render("x " + s) for s in CORPUS["markdown"] + CORPUS["html"]]
    assert sum("<a " in h for h in live) >= 6 and any("<img" in h for h in live)
    assert any("<script>" in h for h in live)
    assert "<h1>" in MD.render(CORPUS["markdown"][2])
    broken = table_cells(MD.render("| a | b |\n|---|---|\n| a|b|c | x |\n"))
    assert [len(r) for r in broken.rows] == [2, 2] and broken.rows[1] != ["a|b|c", "x"]


# -- code spans in messages (issue 22: the run report showed Markdown literally) ----------
def _spans_removed(s: str) -> str:
    """What a message reads as once its code spans are rendered: the backticks gone."""
    return CODE_SPAN.sub(r"\1", visible(s))


def test_code_spans_become_code_and_the_rest_stays_text() -> None:
    msg = "`book_reservation` called at turn 5 (seq 17) <b>x</b> `a<i>`"
    assert html_code_spans(msg) == ("<code>book_reservation</code> called at turn 5 (seq 17) "
                                    "&lt;b&gt;x&lt;/b&gt; <code>a&lt;i&gt;</code>")
    assert html_code_spans("a lone ` stays") == "a lone ` stays"
    assert _para(MD.render(md_code_spans(msg))) == (
        "<code>book_reservation</code> called at turn 5 (seq 17) &lt;b&gt;x&lt;/b&gt; "
        "<code>a&lt;i&gt;</code>")


@settings(max_examples=300)
@given(texts)
def test_html_code_spans_property_only_code_tags_and_the_text(s: str) -> None:
    p = _Tags()
    p.feed(f"<p>{html_code_spans(s)}</p>")
    p.close()
    assert set(p.tags) <= {"p", "code"} and not p.comments
    assert "".join(p.data) == _spans_removed(s)


@settings(max_examples=300)
@given(texts)
def test_md_code_spans_property_renders_only_code_and_the_text(s: str) -> None:
    rendered = MD.render("x " + md_code_spans(s))
    inner = _para(rendered) if rendered.strip() else ""
    p = _Tags()
    p.feed(f"<p>{inner}</p>")
    p.close()
    assert set(p.tags) <= {"p", "code"} and not p.comments
    # markdown-it trims a code span's padding space and the paragraph's end
    assert "".join(p.data).replace(" ", "") == ("x " + _spans_removed(s)).rstrip().replace(
        " ", "")
