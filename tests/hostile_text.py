"""A hostile-text corpus for output tests: what a trace, a label file or a judge can put in a
field, by class. Each entry should print as inert text wherever judge writes it."""

from __future__ import annotations

import re

ESC = "\x1b"

#: class -> strings of that class
CORPUS: dict[str, list[str]] = {
    "csi": [f"{ESC}[2J{ESC}[H cleared", f"{ESC}[31mred{ESC}[0m", f"{ESC}[?1049h alt screen",
            "\x9b2J c1-csi"],
    "osc": [f"{ESC}]52;c;cm0gLXJmIH4K{ESC}\\ clipboard", f"{ESC}]52;c;aGk=\x07 clipboard bel",
            f"{ESC}]8;;http://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\",
            f"{ESC}]0;window title\x07", "\x9d52;c;aGk=\x9c c1-osc"],
    "c0_c1": ["bell\x07", "back\x08space", "carriage\roverwrite", "nul\x00byte", "del\x7f",
              "nel\x85line", "dcs\x90q\x9c", "vt\x0bff\x0c"],
    "bidi": ["\u202eevil.exe\u202c", "admin\u2066\u2069", "\u200fRLM \u061c", "\u202dLRO"],
    "zero_width": ["g\u200bpt-4o", "appro\u200dved", "\ufeffbom", "soft\u00adhyphen",
                   "tag\U000e0041\U000e0042chars"],
    "line_breaks": ["two\nlines", "para\u2029sep", "line\u2028sep"],
    "rich_markup": ["[bold red]APPROVED BY SECURITY[/bold red]", "[/INST]", "[/]",
                    "[link=https://evil.example]click here[/link]", "[@click=app.quit]x[/]",
                    ":warning: :smile:", "[reverse]inverted", "unclosed [bold"],
    "markdown": ["[x](javascript:alert(1))", "![](http://evil.example/pixel.png)",
                 "# heading from content", "- list from content", "**bold** _em_ `code`",
                 "<http://evil.example>", "http://evil.example/a", "www.evil.com",
                 "mail@evil.com", "evil.com", "~~struck~~", "1. ordered",
                 "===", "> quote", "$x^2$"],
    "html": ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
             "<a href='javascript:alert(1)'>x</a>", "&lt;script&gt;", "<!-- comment -->",
             "\"quoted\" 'single'"],
    "table": ["a|b|c", "cell\n| x | y |", "|", "\\|"],
}

HOSTILE = [s for strings in CORPUS.values() for s in strings]

#: bytes that must never reach a terminal from content: C0 but \n \t, DEL, C1 (UTF-8), and
#: the UTF-8 of the Unicode format characters used above
_RAW = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xa8-\xae]"
    rb"|\xe2\x81[\xa0-\xa4\xa6-\xaf]|\xef\xbb\xbf|\xd8\x9c|\xc2\xad|\xf3\xa0[\x80-\x81]")


def raw_controls(data: bytes) -> list[bytes]:
    """Every control, C1 or hidden-format sequence in `data` (empty: clean)."""
    return _RAW.findall(data)
