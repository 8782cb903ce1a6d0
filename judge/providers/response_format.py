"""How an OpenAI-compatible server is asked for a verdict: the structured-output ladder.

OpenAI-compatible servers differ in what they take for structured output. The modes, best
first (`LADDER`):

- `json_schema`: `response_format: {type: json_schema, json_schema: {strict: true, schema}}`
  (OpenAI, vLLM, llama.cpp's llama-server, LM Studio; Ollama turns it into its `format`);
- `json_object`: JSON mode with the schema, `response_format: {type: json_object, schema}`
  (llama-cpp-python's server, llama-server; a server that ignores `schema` still gives JSON);
- `prompt`: no `response_format`; the schema is stated in the system prompt and the reply is
  parsed and validated the same way.

`guided_json` (vLLM's own field, before vLLM 0.12 dropped it) is never chosen by the ladder
(a vLLM that does not know it answers 200 without constraint, so nothing would tell us); it
is there to be chosen with JUDGE_RESPONSE_FORMAT.

The mode is found per endpoint and model (`Ladder`): the first request goes out in the best
mode not known to be refused; a refusal (`ProviderFailure.refused`) moves it one rung down
and sends the same request again, and the first rung that answers is the mode from then on,
remembered in the settings cache (`FormatMemory`, keyed by base URL and model) and said once
on stderr. While the mode is being found, the provider's other requests wait for it (one
discovery per endpoint and model, not one per item), then go straight out: the per-call cost
of the ladder is one attribute read. JUDGE_RESPONSE_FORMAT (or `response_format` in
judge.toml) fixes the mode: nothing is tried, a refusal fails the call.

A refusal that no rung cures is about the request, not its format (a wrong model name, a
prompt past the context window): the rung whose refusal is the one the prompt rung got is
the mode (every rung before it refused the format), and the call fails with that message.
A refusal that says the schema is invalid ("Invalid schema for response_format ...") is a
fault of the schema, not of the mode: the mode stays, and the call fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.providers.base import ProviderFailure, ProviderResponse
from judge.providers.endpoints import normalize_endpoint

JSON_SCHEMA = "json_schema"
JSON_OBJECT = "json_object"
GUIDED_JSON = "guided_json"
PROMPT = "prompt"
AUTO = "auto"
#: every mode a setting may name
MODES = (JSON_SCHEMA, JSON_OBJECT, GUIDED_JSON, PROMPT)
#: the modes the ladder tries, best first
LADDER = (JSON_SCHEMA, JSON_OBJECT, PROMPT)
DESCRIPTIONS = {
    JSON_SCHEMA: "JSON Schema, strict (response_format json_schema)",
    JSON_OBJECT: "JSON mode with the schema (response_format json_object)",
    GUIDED_JSON: "vLLM guided_json",
    PROMPT: "plain JSON asked for in the prompt",
}
#: what the prompt rung adds to the system prompt ({schema}: the item's schema as JSON)
PROMPT_SCHEMA_TEXT = ("\n\nReply with only one JSON object, and nothing before or after it, "
                      "that follows this JSON Schema:\n{schema}")

#: the settings cache: the mode found for each endpoint and model
MEMORY_FILE = "response-formats.json"
MEMORY_VERSION = 1

Notice = Callable[[str], None]


def apply_mode(body: dict[str, Any], mode: str, schema: dict[str, Any], schema_name: str,
               decoder: Callable[[], dict[str, Any]] | None = None) -> None:
    """Ask for `schema` in `body` (a chat completions body) the way `mode` says. `decoder`:
    the decoder schema for the grammar modes (json_object, guided_json), when not `schema`
    (judge.verdicts.schema.decoder_schema)."""
    if mode == JSON_SCHEMA:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": schema_name, "strict": True, "schema": schema}}
    elif mode == JSON_OBJECT:
        body["response_format"] = {"type": "json_object",
                                   "schema": decoder() if decoder else schema}
    elif mode == GUIDED_JSON:
        body["guided_json"] = decoder() if decoder else schema
    elif mode == PROMPT:
        messages = body["messages"]
        text = PROMPT_SCHEMA_TEXT.format(schema=json.dumps(schema, ensure_ascii=False))
        if messages and messages[0].get("role") == "system":
            messages[0] = {**messages[0], "content": str(messages[0]["content"]) + text}
        else:
            messages.insert(0, {"role": "system", "content": text.lstrip()})
    else:
        raise ValueError(f"unknown response format {mode!r}")


def stderr_notice(message: str) -> None:
    """Say `message` on stderr as one line with nothing live in it."""
    from judge.safe_text import one_line

    with suppress(OSError, ValueError):
        print(f"judge: {one_line(message)}", file=sys.stderr, flush=True)


def memory_path(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/judge/response-formats.json (~/.cache/judge/... without it)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "judge" / MEMORY_FILE


class FormatMemory:
    """The settings cache of found modes: a small JSON file, keyed by the normalized base
    URL and the model name. Unreadable, foreign or hand-broken content is ignored (the mode
    is found again); a file that cannot be written is not an error (nothing is remembered)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    @classmethod
    def default(cls) -> FormatMemory:
        return cls(memory_path())

    @staticmethod
    def key(endpoint: str, model: str) -> str:
        return f"{normalize_endpoint(endpoint)} {model}"

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict) or data.get("version") != MEMORY_VERSION:
            return {}
        entries = data.get("endpoints")
        return entries if isinstance(entries, dict) else {}

    def get(self, endpoint: str, model: str) -> str | None:
        """The mode remembered for this endpoint and model, if any (only a ladder mode)."""
        entry = self._read().get(self.key(endpoint, model))
        mode = entry.get("response_format") if isinstance(entry, dict) else None
        return mode if mode in LADDER else None

    def put(self, endpoint: str, model: str, mode: str, why: str) -> bool:
        """Remember `mode` (atomically: a reader never sees half a file); False when the file
        cannot be written."""
        if self.path is None:
            return False
        entries = self._read()
        entries[self.key(endpoint, model)] = {
            "response_format": mode, "why": why,
            "found_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        body = json.dumps({"version": MEMORY_VERSION, "endpoints": entries}, indent=1,
                          ensure_ascii=False, sort_keys=True)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".response-formats.", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(body + "\n")
            os.replace(tmp, self.path)
        except OSError:
            with suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            return False
        return True


class Ladder:
    """The structured-output mode of one endpoint and model, found from refusals.

    `mode` is the mode requests go out in; `settled` once it is known (a fixed setting, or a
    rung that answered). `send(post)` posts one request: at once in a settled mode, else
    down the ladder from `mode`, one such walk at a time (the others wait for its outcome).
    A remembered mode is where the walk starts; it is settled by the first answer."""

    def __init__(self, *, setting: str = AUTO, remembered: str | None = None,
                 on_found: Callable[[str, str, ProviderFailure], None] | None = None) -> None:
        if setting != AUTO and setting not in MODES:
            raise ValueError(f"unknown response format {setting!r}")
        self.forced = setting != AUTO
        self.mode = setting if self.forced else (remembered or LADDER[0])
        self.settled = self.forced
        self.on_found = on_found
        #: the first refusal of a walk that load or an outage cut short (the next walk
        #: starts below it, and says it when it settles)
        self._refused_before: tuple[str, ProviderFailure] | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _the_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:  # a lock belongs to one loop
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    async def send(self, send: Callable[[str], Awaitable[ProviderResponse]]) -> ProviderResponse:
        """`send(mode)` in the settled mode; before that, through the ladder."""
        if self.settled:
            return await send(self.mode)
        async with self._the_lock():
            if not self.settled:
                return await self._walk(send)
        return await send(self.mode)

    async def _walk(self, send: Callable[[str], Awaitable[ProviderResponse]]) -> ProviderResponse:
        start = self.mode
        rungs = LADDER[LADDER.index(start):] if start in LADDER else (start,)
        refused: list[tuple[str, ProviderFailure]] = []
        for rung in rungs:
            try:
                response = await send(rung)
            except ProviderFailure as failure:
                if not failure.refused:  # load, outage, timeout: not about the format
                    failure.calls = len(refused) + 1
                    self.mode = rung  # the rungs above it were refused: start here again
                    if refused and self._refused_before is None:
                        self._refused_before = refused[0]
                    raise
                if _SCHEMA_REFUSED.search(str(failure)):
                    # the server takes the mode and finds fault with the schema: a bug of
                    # the schema's, which another mode would only hide
                    failure.calls = len(refused) + 1
                    self._settle(rung, refused[0] if refused else None)
                    raise
                refused.append((rung, failure))
                continue
            response.calls = len(refused) + 1
            self._settle(rung, refused[0] if refused else None)
            return response
        # every rung refused: the request itself is refused, not only its format
        last = refused[-1][1]
        for rung, refusal in refused:
            if _same(refusal, last):
                self._settle(rung, refused[0] if rung != start else None)
                refusal.calls = len(refused)
                raise refusal
        raise AssertionError("unreachable")  # pragma: no cover - the last matches itself

    def _settle(self, mode: str, refusal: tuple[str, ProviderFailure] | None) -> None:
        """`mode` it is; `refusal`: the first refused rung and its refusal, when the mode was
        found by going down (`on_found(refused_mode, mode, refusal)`)."""
        self.mode = mode
        self.settled = True
        refusal = refusal or self._refused_before
        if refusal is not None and self.on_found is not None:
            self.on_found(refusal[0], mode, refusal[1])


#: a refusal of the schema itself, not of the mode ("Invalid schema for response_format ...")
_SCHEMA_REFUSED = re.compile(r"invalid (?:json )?schema|schema is invalid", re.IGNORECASE)


def _same(a: ProviderFailure, b: ProviderFailure) -> bool:
    return a.status == b.status and str(a) == str(b)
