"""YAML text from hostile strings: quoted scalars, literal tool globs and one-line comments.

Every string a draft takes from a trace (tool names, argument paths, ids, the user's words)
is written as a YAML double-quoted scalar by `quote`: `"` and `\\` are escaped, and so is
every character Python does not call printable — controls, line breaks (including YAML's
NEL, LS and PS), bidi overrides, zero-width and other format characters, surrogates,
private-use and unassigned code points — as `\\xXX`, `\\uXXXX` or `\\UXXXXXXXX`. So a value can
neither end its scalar nor start a new key, a comment or a document, nothing in the file can
drive a terminal or reorder what a reviewer sees, and loading the file gives back exactly
the string. Printable non-ASCII text (accents, CJK, emoji) stays readable.

Why not `yaml.dump`: with `allow_unicode=True` PyYAML writes bidi overrides and zero-width
characters raw (they are printable to YAML), and with `allow_unicode=False` every non-ASCII
letter becomes an escape. This is the one rule we want, in a dozen lines, and a property test
loads its output back with the scenario loader.
"""

from __future__ import annotations

import re

_SIMPLE = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII without `"` and `\`


def quote(text: str) -> str:
    """`text` as a YAML double-quoted scalar that loads back as exactly `text` — except a
    lone surrogate (JSON can carry one), which no scenario string may hold (pydantic refuses
    it), written as U+FFFD."""
    if _SIMPLE.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for c in text:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c.isprintable():  # Python's printable characters are all YAML-printable
            out.append(c)
        else:
            o = ord(c)
            if 0xD800 <= o <= 0xDFFF:
                out.append("\ufffd")
            else:
                out.append(f"\\x{o:02x}" if o <= 0xFF
                           else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


def has_surrogate(text: str) -> bool:
    return not text.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def scalar(value: str | int) -> str:
    """A string quoted, an integer as itself."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) \
        else quote(str(value))


def flow_list(values: list[str] | list[str | int]) -> str:
    return "[" + ", ".join(scalar(v) for v in values) + "]"


def comment_text(text: str, limit: int = 80) -> str:
    """`text` for a `#` comment: one line, unprintable characters escaped, at most `limit`
    characters (cut with `…`)."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_GLOB = re.compile(r"([*?\[])")


def literal_glob(name: str) -> str:
    """A tool name as a glob that matches exactly that name (`*`, `?`, `[` bracketed), since
    every tool field of a scenario is a glob. A lone surrogate, which a scenario cannot hold,
    becomes `?` (any one character), so the glob still matches the name."""
    out = _GLOB.sub(r"[\1]", name)
    if has_surrogate(out):
        out = "".join("?" if 0xD800 <= ord(c) <= 0xDFFF else c for c in out)
    return out
