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

The mode is found per endpoint and model (`Ladder`). A mode known good is settled from the
start, optimistically: the one remembered in the settings cache (`FormatMemory`, keyed by base
URL and model), else JSON Schema at OpenAI itself (no base URL, or api.openai.com); requests
go out in it at once, all of them concurrently, and its first answer confirms it. Against a
server never met, the first request goes out in the best mode; a refusal
(`ProviderFailure.refused`) moves it one rung down and sends the same request again, and the
first rung that answers is the mode from then on, remembered (a mode found by going down is
also said once on stderr; one that answered at the first try is kept quietly, so the next run
starts settled on it). While the mode is being found, the provider's other requests wait for
it (one discovery per endpoint and model, not one per item), then go straight out: the
per-call cost of the ladder is two attribute reads. A refusal of an optimistically settled mode
that no answer has confirmed yet (a remembered mode the server no longer takes) re-opens the
walk from the rung below it, one walk at a time: the other requests refused meanwhile wait for
it and are sent again in the mode it finds (two calls each, as for the walk's own request).
JUDGE_RESPONSE_FORMAT (or `response_format` in judge.toml) fixes the mode: nothing is tried or
remembered, a refusal fails the call.

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

    `mode` is the mode requests go out in. `settled`: requests go straight out in it, all at
    once; it is, from the start, when the setting fixes it (`forced`) or when it is known
    good (`remembered`: the mode kept in the settings cache, or JSON Schema at OpenAI itself),
    and once a rung has answered. `confirmed`: an answer (or the setting) vouches for it in
    this process. Unsettled, `send(post)` goes down the ladder from `mode`, one such walk at a
    time (the others wait for its outcome). A refusal in a settled mode that is not yet
    confirmed (a remembered mode the server no longer takes) re-opens the walk from the rung
    below; once confirmed, a refusal is the request's own and fails the call, and so does
    any refusal of a forced mode."""

    def __init__(self, *, setting: str = AUTO, remembered: str | None = None,
                 on_found: Callable[[str, str, ProviderFailure], None] | None = None,
                 on_kept: Callable[[str], None] | None = None) -> None:
        if setting != AUTO and setting not in MODES:
            raise ValueError(f"unknown response format {setting!r}")
        self.forced = setting != AUTO
        known = None if self.forced or remembered not in LADDER else remembered
        self.mode = setting if self.forced else (known or LADDER[0])
        self.settled = self.forced or known is not None
        self.confirmed = self.forced
        self.on_found = on_found
        #: called with a mode that answered at its first try and was not remembered yet
        self.on_kept = on_kept
        self._remembered = known
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
            if self.confirmed:  # the per-call cost: two attribute reads
                return await send(self.mode)
            return await self._optimistic(send)
        async with self._the_lock():
            if not self.settled:
                return await self._walk(send, self.mode, [])
        return await self.send(send)

    async def _optimistic(self, send: Callable[[str], Awaitable[ProviderResponse]]
                          ) -> ProviderResponse:
        """`send` in a mode known good but not yet confirmed here: at once (every request
        does, concurrently); its first answer confirms it, a refusal of the format walks on
        from the rung below."""
        mode = self.mode
        try:
            response = await send(mode)
        except ProviderFailure as failure:
            if not failure.refused or _SCHEMA_REFUSED.search(str(failure)):
                raise  # load or outage, or the schema's fault: not about the mode
            return await self._refused(send, mode, failure)
        if self.settled and self.mode == mode and not self.confirmed:
            self.confirmed = True
        return response

    async def _refused(self, send: Callable[[str], Awaitable[ProviderResponse]], mode: str,
                       failure: ProviderFailure) -> ProviderResponse:
        """The server refused `mode`, sent optimistically: walk from the rung below it (one
        walk at a time; a refusal that comes while one is under way waits for its outcome and
        is sent again in the mode found)."""
        async with self._the_lock():
            if self.mode == mode and not self.confirmed:
                self.settled = False  # the requests that come now wait for the walk
                return await self._walk(send, mode, [(mode, failure)])
        if self.mode == mode:  # `mode` answered meanwhile: the refusal is the request's own
            raise failure
        response = await self.send(send)
        response.calls += 1
        return response

    async def _walk(self, send: Callable[[str], Awaitable[ProviderResponse]], start: str,
                    refused: list[tuple[str, ProviderFailure]]) -> ProviderResponse:
        """Down the ladder from `start`; `refused`: the rungs already refused for this
        request (`start` first, when an optimistic send was refused: the walk goes on
        below it)."""
        begin = LADDER.index(start) + len(refused) if start in LADDER else 0
        rungs = LADDER[begin:] if start in LADDER else (start,)
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
            self._settle(rung, refused[0] if refused else None, answered=True)
            return response
        # every rung refused: the request itself is refused, not only its format
        last = refused[-1][1]
        for rung, refusal in refused:
            if _same(refusal, last):
                self._settle(rung, refused[0] if rung != start else None)
                refusal.calls = len(refused)
                raise refusal
        raise AssertionError("unreachable")  # pragma: no cover - the last matches itself

    def _settle(self, mode: str, refusal: tuple[str, ProviderFailure] | None, *,
                answered: bool = False) -> None:
        """`mode` it is; `refusal`: the first refused rung and its refusal, when the mode was
        found by going down (`on_found(refused_mode, mode, refusal)`); else, when `mode`
        answered at its first try and is not the one remembered, `on_kept(mode)`."""
        self.mode = mode
        self.settled = self.confirmed = True
        refusal = refusal or self._refused_before
        self._refused_before = None
        if refusal is not None:
            if self.on_found is not None:
                self.on_found(refusal[0], mode, refusal[1])
        elif answered and mode != self._remembered and self.on_kept is not None:
            self.on_kept(mode)
        self._remembered = mode


#: a refusal of the schema itself, not of the mode ("Invalid schema for response_format ...")
_SCHEMA_REFUSED = re.compile(r"invalid (?:json )?schema|schema is invalid", re.IGNORECASE)


def _same(a: ProviderFailure, b: ProviderFailure) -> bool:
    return a.status == b.status and str(a) == str(b)
