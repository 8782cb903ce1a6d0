"""`scripted`: a real provider that answers from a queue, for tests on the production path.

Each queued entry is a completion text, a `ProviderFailure` to raise, or a function of the
request returning a completion text. When the queue is empty the `default` is used (same
kinds); with no default the call fails (not retryable), so a test cannot pass by accident.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from judge.errors import ConfigError
from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse

Scripted = str | ProviderFailure | Callable[[JudgeRequest], str]


class ScriptedProvider(Provider):
    """Answers from `responses` in order, then from `default`; records every request.

    `remote` defaults to True so the engine takes the same retry and rate-limit path as for a
    network model.
    """

    def __init__(self, responses: Iterable[Scripted] = (), *, default: Scripted | None = None,
                 spec: str = "scripted", display_name: str = "scripted (test provider)",
                 remote: bool = True) -> None:
        self.spec = spec
        self.remote = remote
        self.display_name = display_name
        self._queue: deque[Scripted] = deque(responses)
        self.default = default
        self.requests: list[JudgeRequest] = []

    def enqueue(self, *responses: Scripted) -> None:
        self._queue.extend(responses)

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.requests.append(request)
        entry = self._queue.popleft() if self._queue else self.default
        if entry is None:
            raise ProviderFailure("scripted provider: no response queued", retryable=False)
        if isinstance(entry, ProviderFailure):
            raise entry
        text = entry if isinstance(entry, str) else entry(request)
        usage = {"prompt_tokens": _approx_tokens(request), "completion_tokens": len(text) // 4}
        return ProviderResponse(text=text, model=self.spec, usage=usage)


def load_script(path: Path) -> list[Scripted]:
    """Read a JSONL file of completions: each line a JSON string (the text) or an object
    (dumped as the text)."""
    out: list[Scripted] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read scripted responses: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        out.append(value if isinstance(value, str) else json.dumps(value))
    return out


def _approx_tokens(request: JudgeRequest) -> int:
    return (len(request.system) + sum(len(m.get("content", "")) for m in request.messages)) // 4
