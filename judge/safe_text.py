"""Text from a trace made harmless for a terminal, a Markdown file, HTML or JSON.

Every byte of a trace is hostile. Before trace-derived text reaches any output:

- `visible` shows control and format characters as escapes (`\\x1b`, `\\u202e`) instead of
  emitting them: C0 (except the line breaks and tabs a caller keeps), DEL, C1 (so ESC, CSI,
  OSC — OSC 52 clipboard writes included — and BEL never reach a terminal), line and
  paragraph separators, lone surrogates (which would crash the encoder), and every Unicode
  format character (bidi overrides and isolates such as U+202E, zero-width spaces and
  joiners, soft hyphens, the invisible tag characters). It does not depend on isatty: a
  piped OSC 52 still reaches the terminal the pipe ends in.
- `md_text` is one inline Markdown fragment (a table cell, a heading, a list item) that
  renders as the literal text: HTML is escaped, and so is every character CommonMark or GFM
  would read as a link, an image, an autolink, emphasis, code, a table cell break, or a block
  (heading, list, quote) at the start of a line. Line breaks show as `\\n`.
- `md_code` and `md_fence` put text in a code span or fenced block it cannot close.
- `html_text` is `html.escape` after `visible`.
- `json_safe` escapes what `visible` shows in an already serialised JSON document as `\\uXXXX`
  (valid JSON, same data), for JSON printed on a terminal.
"""

from __future__ import annotations

import html
import re

#: Unicode categories Cc, Cf, Cs, Zl and Zp (Unicode 15.1), as code point ranges. Tested
#: against `unicodedata` of the running Python (tests/test_safe_text.py).
_HIDDEN_RANGES = (
    (0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F),
    (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    def one(cp: int) -> str:
        return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 \
            else f"\\U{cp:08x}"
    return "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges)


HIDDEN = re.compile(f"[{_class(_HIDDEN_RANGES)}]")


def escape_char(ch: str) -> str:
    """One character as a Python-style escape: `\\x1b`, `\\u202e`, `\\U000e0041`."""
    cp = ord(ch)
    if cp < 0x100:
        return f"\\x{cp:02x}" if ch not in "\n\r\t" else repr(ch)[1:-1]
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def visible(text: object, *, keep: str = "") -> str:
    """`text` (str() of anything) with every control or format character shown as an escape;
    the characters in `keep` (e.g. "\\n" for a multi-line document) stay as they are."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # the common case, at C speed
        return s
    if keep:
        return HIDDEN.sub(lambda m: m.group() if m.group() in keep else escape_char(m.group()),
                          s)
    return HIDDEN.sub(lambda m: escape_char(m.group()), s)


def one_line(text: object) -> str:
    """`visible` with line breaks shown too: one line whatever the input."""
    return visible(text)


# -- Markdown ------------------------------------------------------------------------------
# Backslash-escaped anywhere: code, emphasis, links and images, table cells, strikethrough,
# autolinks (':' scheme, '@' email; '.' in "example.com" below), math ('$'), and backslash.
_MD_ALWAYS = frozenset("\\`*[]()!|~:@$")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# block markers when they open a line: a heading ("# "), a list item ("- ", "+ ", "1. ",
# "1) "), a setext underline or thematic break ("===", "---"); '>', '*' and '_' are escaped
# anywhere. "-0.5", "#10" and "1.5" open no block and stay as they are.
_LEADING = re.compile(r"^( {0,3})([#+=-])(?=[#+= -]|$)")
_ORDERED = re.compile(r"^( {0,3}\d{1,9})([.)])(?= |$)")


def md_text(text: object) -> str:
    """An inline Markdown fragment that renders as exactly `text` (made visible, one line):
    no HTML, link, image, autolink, emphasis, code, cell break or block from the content."""
    s = visible(text)
    out: list[str] = []
    n = len(s)
    for i, ch in enumerate(s):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_ALWAYS:
            out.append("\\" + ch)
        elif ch == "_":  # intraword '_' never opens or closes emphasis: keep snake_case
            inner = 0 < i < n - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()
            out.append("_" if inner else "\\_")
        elif ch == ".":
            out.append("\\." if _domain_dot(s, i) else ".")
        else:
            out.append(ch)
    escaped = "".join(out)
    escaped = _LEADING.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", escaped)
    return _ORDERED.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", escaped)


def _domain_dot(s: str, i: int) -> bool:
    """Whether the dot at `i` could join a host name a linkifier turns into a link
    ("evil.com"): a word before it, a letter after it, and no '_' glued to either part (a
    dotted snake_case name such as "queue.by_state.open" is no host and stays readable)."""
    n = len(s)
    if not (0 < i < n - 1 and s[i - 1].isalnum() and s[i + 1].isalpha()):
        return False
    a = i - 1
    while a > 0 and (s[a - 1].isalnum() or s[a - 1] == "-"):
        a -= 1
    b = i + 1
    while b < n - 1 and (s[b + 1].isalnum() or s[b + 1] == "-"):
        b += 1
    return not (_inner_underscore(s, a - 1) or _inner_underscore(s, b + 1))


def _inner_underscore(s: str, j: int) -> bool:
    """An intraword '_' (kept as is, so a linkifier sees it glued to the word)."""
    return 0 < j < len(s) - 1 and s[j] == "_" and s[j - 1].isalnum() and s[j + 1].isalnum()


def _longest_run(s: str, ch: str) -> int:
    runs = re.findall(f"{re.escape(ch)}+", s)
    return max((len(r) for r in runs), default=0)


def md_code(text: object) -> str:
    """A code span holding `text` (visible, one line) that its backticks cannot close.
    Not for table cells: GFM splits cells on '|' even inside code spans."""
    s = visible(text)
    fence = "`" * (_longest_run(s, "`") + 1)
    pad = " " if s.startswith(("`", " ")) or s.endswith(("`", " ")) or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_fence(lines: list[str]) -> list[str]:
    """A fenced code block of `lines` (each made visible) that no line of it can close."""
    shown = [visible(line) for line in lines]
    fence = "`" * max(3, max((_longest_run(x, "`") for x in shown), default=0) + 1)
    return [fence, *shown, fence]


#: a Markdown code span of one backtick each side: how judge's messages quote a name
#: ("`book_reservation` called at turn 5")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def md_code_spans(text: object) -> str:
    """`md_text`, but each code span of `text` stays a code span (`md_code`): a message's
    quoted names render as code, and nothing else in it can be markup. Not for table cells
    (`md_code`)."""
    parts = CODE_SPAN.split(visible(text))  # text, code, text, code, …, text
    return "".join(md_code(p) if i % 2 else md_text(p) for i, p in enumerate(parts) if p)


# -- HTML and JSON -------------------------------------------------------------------------
def html_text(text: object) -> str:
    """Text for HTML element content or a quoted attribute: visible, then escaped."""
    return html.escape(visible(text), quote=True)


def html_code_spans(text: object) -> str:
    """`html_text`, with each Markdown code span (`name`) as `<code>name</code>`. The text
    is escaped first, so a span holds escaped text and no markup can come from it."""
    return CODE_SPAN.sub(r"<code>\1</code>", html_text(text))


def _json_escape(ch: str) -> str:
    cp = ord(ch)
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def json_safe(document: str) -> str:
    """A serialised JSON document with every raw control or format character (DEL, C1,
    bidi, zero-width, …; JSON escapes only C0) written as a `\\u` escape: same data."""
    if document.isprintable():
        return document
    # raw line breaks and tabs in valid JSON are whitespace between tokens (JSON escapes
    # them inside strings): they stay
    return HIDDEN.sub(lambda m: m.group() if m.group() in "\n\r\t"
                      else _json_escape(m.group()), document)
