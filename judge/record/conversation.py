"""What the adapters share: finding the user's new messages in a model request.

Agent frameworks send the model the conversation so far on every call; a judge trace holds
each user message once, at the turn it started. The new user messages of a request are the
ones at its end, after the last message that is not the user's (an assistant reply, a tool
result): `[u1]` → u1; `[u1, call, result]` → none; `[u1, a1, u2]` → u2 (the next turn, the
history given again, or a server-managed conversation that sends only u2). The same trailing
messages asked again with nothing recorded in between (a retry of the same call) are not a
new turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts
    (`{"type": "text"|"input_text"|"output_text", "text": ...}`, or plain strings)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(getattr(part, "text", None), str):
                parts.append(part.text)
        return "\n".join(p for p in parts if p)
    return ""


class UserTurns:
    """Tracks which user messages of successive requests were recorded already."""

    def __init__(self) -> None:
        self._last: list[str] | None = None
        self._recorded_at = -1

    def new(self, messages: Iterable[tuple[bool, str]], events_so_far: int) -> list[str]:
        """The new user messages of one request: `messages` is (is_user, text) for each
        message of it, in order (system messages left out); `events_so_far` is how many
        events the trace has now (a retry adds none between two requests)."""
        trailing: list[str] = []
        for is_user, text in messages:
            if is_user:
                trailing.append(text)
            else:
                trailing = []
        if not trailing:
            return []
        if trailing == self._last and events_so_far == self._recorded_at:
            return []
        self._last = trailing
        self._recorded_at = events_so_far + len(trailing)
        return trailing
