"""Every CLI output of trace-derived text goes through here (judge.safe_text does the work).

- `echo(text)`: plain output; control and format characters are shown as escapes (line
  breaks and tabs kept: a multi-line document stays one). Fields that must stay on one line
  (an id, a rationale) go through `field()` first.
- `console()`: a rich Console that can be given trace text: markup, emoji codes and
  highlighting are off (`[bold red]…[/]`, `[link=…]`, `[/INST]` print as themselves and
  cannot raise MarkupError), and every piece of text it renders is made visible — strings in
  `render_str`, and every text segment of every renderable (tables, panels, Text built by
  hand) in `render`. Our own styling is given as `rich.text.Text` with a style, never as
  markup. None of it depends on isatty.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

import typer

from judge.safe_text import one_line, visible

if TYPE_CHECKING:  # rich loads only for the commands that draw with it
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment
    from rich.style import Style
    from rich.text import Text, TextType

_DOC = "\n\t"


def field(value: object) -> str:
    """One value on one line: every control, format and line-break character shown."""
    return one_line(value)


def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """typer.echo of `text` made visible (line breaks and tabs kept)."""
    typer.echo(visible(text, keep=_DOC), err=err, nl=nl)


def console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A Console for hostile text: no markup, no emoji codes, no highlighting, nothing
    invisible or controlling emitted."""
    return _safe_console()(stderr=stderr, **kwargs)


@cache
def _safe_console() -> type[Console]:
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("markup", False)
            kwargs.setdefault("emoji", False)
            kwargs.setdefault("highlight", False)
            super().__init__(**kwargs)

        def render_str(self, text: str, **kwargs: Any) -> Text:
            return super().render_str(visible(text, keep="\n"), **kwargs)

        def render(self, renderable: RenderableType,
                   options: ConsoleOptions | None = None) -> Iterable[Segment]:
            for seg in super().render(renderable, options):
                if seg.control is None and not seg.text.isprintable() and seg.text != "\n":
                    seg = Segment(visible(seg.text, keep="\n"), seg.style, None)
                yield seg

        def input(self, prompt: TextType = "", *, markup: bool = False, emoji: bool = False,
                  password: bool = False, stream: Any = None) -> str:
            return super().input(prompt, markup=markup, emoji=emoji, password=password,
                                 stream=stream)

    return SafeConsole


def styled(value: object, style: str | Style) -> Text:
    """Our own styled words (e.g. SAFETY-CRITICAL in bold red): a Text, never markup."""
    from rich.text import Text

    return Text(visible(value), style=style)


def text(value: object) -> Text:
    """Trace-derived text as a rich Text: literal, visible."""
    from rich.text import Text

    return Text(visible(value, keep="\n"))
