"""Jinja2 templates with autoescape on, and every printed value made visible first.

`finalize` runs on each `{{ … }}` before it is escaped: control and format characters
(ESC, bidi overrides, zero-width characters) show as `\\x1b`-style escapes, None prints as
nothing. Autoescape then makes `<`, `&` and quotes inert. Values already marked safe
(`Markup`, only ever built in this package from constants) pass as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from judge.safe_text import visible

TEMPLATES = Path(__file__).parent / "templates"


def _finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return visible(value, keep="\n\t")


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      finalize=_finalize, trim_blocks=True, lstrip_blocks=True)
    return env
