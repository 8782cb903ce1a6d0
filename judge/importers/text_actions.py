"""Agents that act through text: a fenced block in the model's reply is the action.

mini-swe-agent, SWE-agent's thought-action mode and many ReAct loops have no tool calls: the
assistant writes a command in a fenced block (```bash … ```), the harness runs it and sends
the output back as the next (user) message. Imported as they are, such traces have no
`tool_call` events, so no check sees what the agent did. `with_text_actions` turns each
assistant event whose text holds a fenced block (the last one, as SWE-agent reads it) into
the text before it and a `tool_call` — `tool` named by the block's language (bash for
`bash`, `sh`, `shell`, `console` and mini-swe-agent's `mswea_bash_command`; the configured
name for a block without one), `args: {"command": <the block>}` — and the next user event
into that call's `tool_result` (its text the result), both marked
`metadata.action_from_text: true`. `judge import --actions text` applies it to any format;
the SWE-agent and mini-swe-agent formats apply it by default (`--actions none` turns it off).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_FENCE = re.compile(r"```([\w.+-]*)[ \t]*\r?\n(.*?)\r?\n?```", re.S)
_SHELLS = frozenset({"bash", "sh", "shell", "console", "zsh", "mswea_bash_command",
                     "bash_command"})
DEFAULT_TOOL = "bash"
MARK = "action_from_text"


def split_action(text: str) -> tuple[str, str, str] | None:
    """(text before it, language, command) of the last fenced block of `text`, or None."""
    blocks = list(_FENCE.finditer(text))
    if not blocks:
        return None
    last = blocks[-1]
    command = last.group(2).strip("\n")
    if not command.strip():
        return None
    return text[:last.start()].rstrip(), last.group(1).lower(), command


def tool_name(language: str, default: str = DEFAULT_TOOL) -> str:
    if not language:
        return default
    return "bash" if language in _SHELLS else language


def with_text_actions(events: Iterator[dict[str, Any]], default_tool: str = DEFAULT_TOOL,
                      prefix: str = "text") -> Iterator[dict[str, Any]]:
    """The events with the actions written as text made tool calls (module docstring)."""
    pending: dict[str, Any] | None = None  # the call waiting for its observation
    n = 0
    for ev in events:
        ev = {k: v for k, v in ev.items() if k not in ("seq", "turn")}  # positions move
        kind = ev.get("kind")
        if pending is not None and kind == "user":
            md = {**(ev.get("metadata") or {}), MARK: True}
            yield {"kind": "tool_result", "tool": pending["tool"],
                   "call_id": pending["call_id"], "result": ev.get("text", ""),
                   "metadata": md}
            pending = None
            continue
        if kind in ("assistant", "tool_call", "tool_result"):
            pending = None
        if kind != "assistant" or not isinstance(ev.get("text"), str) or \
                (ev.get("metadata") or {}).get("with_tool_calls"):
            yield ev
            continue
        split = split_action(ev["text"])
        if split is None:
            yield ev
            continue
        thought, language, command = split
        n += 1
        md = {**(ev.get("metadata") or {}), MARK: True}
        if thought:
            yield {**ev, "text": thought, "metadata": {**md, "with_tool_calls": True}}
        call = {"kind": "tool_call", "tool": tool_name(language, default_tool),
                "args": {"command": command}, "call_id": f"{prefix}-{n}", "metadata": md}
        yield call
        pending = call
