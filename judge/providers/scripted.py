"""`scripted`: a real provider that answers from a queue, for tests on the production path.

Each queued entry is a completion text, a `ProviderFailure` to raise, or a function of the
request returning a completion text. When the queue is empty the `default` is used (same
kinds); with no default the call fails (not retryable), so a test cannot pass by accident.

`scripted` alone answers every request with `default_completion`: a valid `pass` citing the
target seq. The fake server's canned verdicts (judge.testing) are built by the same
functions, so the scripted provider and the fake server agree.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.errors import ConfigError
from judge.providers.base import JudgeRequest, Provider, ProviderFailure, ProviderResponse

if TYPE_CHECKING:
    from judge.settings import Settings

Scripted = str | ProviderFailure | Callable[[JudgeRequest], str]

_SEQ = re.compile(r"""["']?\bseq["']?\s*[:=#]?\s*["']?(\d{1,9})\b""", re.IGNORECASE)

_TYPE_DEFAULTS: dict[str, Any] = {"string": "", "integer": 0, "number": 0.0,
                                  "boolean": False, "array": [], "object": {}, "null": None}


def find_seq(text: str) -> int | None:
    """The largest `seq` number mentioned in `text` (`"seq": 4`, `seq=4`, `seq 4`), or None."""
    found = [int(m.group(1)) for m in _SEQ.finditer(text)]
    return max(found) if found else None


def default_verdict(schema: dict[str, Any] | None = None, *, seq: int | None = None,
                    label: str = "pass", confidence: float = 0.9) -> dict[str, Any]:
    """A verdict object that passes the usual checks for `label` pass (a pass cites no
    evidence: `seq` is the evidence only of a verdict whose label is not pass). Fields the
    schema requires beyond the usual ones get a plain value of their type."""
    verdict: dict[str, Any] = {"label": label, "violated_key": None,
                               "evidence_event": None if label == "pass" else seq,
                               "confidence": confidence,
                               "rationale": "fake judge: canned verdict"}
    props = (schema or {}).get("properties", {})
    for name in (schema or {}).get("required", []):
        if name in verdict:
            continue
        spec = props.get(name, {})
        kind = spec.get("type", "string")
        if isinstance(kind, list):
            kind = "null" if "null" in kind else kind[0]
        verdict[name] = spec["enum"][0] if spec.get("enum") else _TYPE_DEFAULTS.get(kind)
    return verdict


def request_text(request: JudgeRequest) -> str:
    return "\n".join(m.get("content", "") for m in request.messages)


def default_completion(request: JudgeRequest) -> str:
    """The scripted provider's default answer: a pass (which cites no evidence)."""
    return json.dumps(default_verdict(request.schema))


class ScriptedProvider(Provider):
    """Answers from `responses` in order, then from `default`; records every request.

    `remote` defaults to True so the engine takes the same retry and rate-limit path as for a
    network model.
    """

    prefix = "scripted"
    forms = ("scripted", "scripted:<responses.jsonl>")

    def __init__(self, responses: Iterable[Scripted] = (), *, default: Scripted | None = None,
                 spec: str = "scripted", display_name: str = "scripted (test provider)",
                 remote: bool = True) -> None:
        self.spec = spec
        self.remote = remote
        self.display_name = display_name
        self._queue: deque[Scripted] = deque(responses)
        self.default = default
        self.requests: list[JudgeRequest] = []

    @classmethod
    def from_settings(cls, argument: str | None, settings: Settings) -> ScriptedProvider:
        """`scripted`: every answer is `default_completion`; `scripted:<file>`: the file's
        completions in order, then failures."""
        if argument is None:
            return cls(default=default_completion)
        return cls(load_script(Path(argument)), default=None, spec=f"scripted:{argument}")

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


#: the largest scripted-responses file read (a script is test data, never this big)
MAX_SCRIPT_BYTES = 64 * 1024 * 1024


def load_script(path: Path) -> list[Scripted]:
    """Read a JSONL file of completions: each line a JSON string (the text) or an object
    (dumped as the text). Only a regular file of at most MAX_SCRIPT_BYTES: `/dev/zero`
    would grow memory without bound, and a FIFO would block until someone writes to it."""
    out: list[Scripted] = []
    try:
        with open(path, "rb", opener=_open_nonblocking) as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"{path}: cannot read scripted responses: not a regular file")
            data = fh.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read scripted responses: "
                          f"{exc.strerror or exc}") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise ConfigError(f"{path}: cannot read scripted responses: larger than "
                          f"{MAX_SCRIPT_BYTES // (1024 * 1024)} MiB")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: scripted responses are not UTF-8 text (byte "
                          f"{exc.start})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        out.append(value if isinstance(value, str) else json.dumps(value))
    return out


def _open_nonblocking(name: str, flags: int) -> int:
    """open(2) that does not wait for a FIFO's writer (the mode is checked once open)."""
    return os.open(name, flags | os.O_NONBLOCK)


def _approx_tokens(request: JudgeRequest) -> int:
    return (len(request.system) + sum(len(m.get("content", "")) for m in request.messages)) // 4
