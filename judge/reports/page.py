"""The page every HTML report is: one shell, one stylesheet, one escaping rule.

The agreement report (judge.reports.html) and the run report (judge.reports.run) are Jinja2
templates under `judge/reports/templates/` extending `page.html.j2`, which inlines
`report.css`. Jinja2 rather than f-strings because escaping is then the default, not a call
each line must remember: autoescape is on for every template, and `finalize` first shows
control and format characters as escapes (judge.safe_text.visible), so `{{ value }}` is
`html_text(value)`. Only `Markup` passes unescaped — markup this package built itself
from escaped parts (the agreement report's body, a message whose code spans the `code`
filter turned into `<code>`) or a PNG data URI it drew.

A page is one self-contained file: inline CSS, figures as `data:image/png;base64` URIs, no
script, no link, no external URL; its Content-Security-Policy forbids anything else
(`default-src 'none'`), so even a template mistake could not load or run anything.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from judge.safe_text import html_code_spans, visible

#: what a report page may load: its own inline style and embedded PNGs, nothing else
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; " \
      "form-action 'none'"


def _finalize(value: Any) -> Any:
    """Every `{{ }}` value: markup we built passes as is; anything else is made visible
    (control and format characters as escapes) and then autoescaped by Jinja2."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    return visible(value)


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("judge.reports", "templates"), autoescape=True,
                      finalize=_finalize, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["pct"] = pct
    env.filters["num"] = num
    env.filters["sev_class"] = sev_class
    env.filters["code"] = code
    env.globals["CSP"] = CSP
    return env


def png(b64: str) -> Markup:
    """A base64 PNG (judge.reports.plots) as a data URI for an `<img src>`."""
    if not b64.isascii() or not b64.replace("+", "").replace("/", "").rstrip("=").isalnum():
        raise ValueError("not base64")
    return Markup(f"data:image/png;base64,{b64}")


def pct(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def num(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def code(value: object) -> Markup:
    """A message with its Markdown code spans (`name`) as `<code>`, everything escaped
    first (judge.safe_text.html_code_spans): `{{ message|code }}`."""
    return Markup(html_code_spans("" if value is None else value))


def sev_class(severity: object) -> str:
    """The CSS class of a severity badge (a known severity's, else a neutral one)."""
    known = ("informational", "task-quality", "judge-fail", "costly", "unsafe",
             "safety-critical")
    return f"sev-{severity}" if severity in known else "sev-informational"


def render(template: str, **context: Any) -> str:
    """Render one report template (a full page) with `context`."""
    return environment().get_template(template).render(**context)
