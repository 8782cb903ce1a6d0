"""One event of a trace slice as one line of text, for reports (the run report's text,
Markdown and HTML forms share it)."""

from __future__ import annotations

import json
from typing import Any


def event_text(e: dict[str, Any], width: int) -> str:
    """What one slice event says, on one line, at most `width` characters (not made
    visible: each caller escapes for where it writes)."""
    body: Any
    kind = e.get("kind", "?")
    if kind in ("user", "assistant", "summary"):
        body = e.get("text", "")
    elif kind == "tool_call":
        body = f"{e.get('tool')}({json.dumps(e.get('args', {}), sort_keys=True)})"
    elif kind == "tool_result":
        body = f"{e.get('tool')} → " + (f"ERROR {e['error']}" if e.get("error")
                                        else json.dumps(e.get("result")))
    else:
        body = f"{e.get('key')} = {json.dumps(e.get('value'))}"
    text = " ".join(str(body).split())
    return text if len(text) <= width else text[: width - 1] + "…"
