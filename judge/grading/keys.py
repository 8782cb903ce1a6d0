"""The cache key of one provider call: what makes two calls the same call.

sha256 over the prompt hash, the model spec, the endpoint (the provider's base URL: another
server under the same model name is another model), the generation parameters, the
structured-output mode when it is not the provider's own (judge.providers.response_format:
the same request asked in JSON mode or in the prompt is another call) and the rendered input
(system prompt, messages, schema, and the ledger keys and seqs the item's own schema allows:
judge.verdicts.schema). Any change to any of them is a different call; the same request
rendered again is the same call, so a rerun makes zero provider calls. Keys made before the
endpoint was part of them (`judge-call-v1`) or before the item's own schema (`judge-call-v2`)
are not looked up: nothing recorded which server answered them, or they were asked with
another schema.

A render memo (`MemoMaker`) lets a rerun skip rendering: it maps a digest of the item and
everything rendering depends on to the call made for it. It is a shortcut to a cache key,
never a key itself: a miss just renders.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import orjson

from judge.items.model import Item
from judge.providers.base import JudgeRequest, ModelParams, Provider
from judge.providers.endpoints import normalize_endpoint as normalize_endpoint

KEY_VERSION = "judge-call-v3"


def endpoint_of(provider: Provider) -> str:
    """Where `provider` sends its requests, normalized ("" for a local provider)."""
    return normalize_endpoint(getattr(provider, "endpoint", ""))


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


class KeyMaker:
    """Cache keys for one (prompt, model, params, schema): the constant part is hashed once."""

    __slots__ = ("_base",)

    def __init__(self, prompt_hash: str, model: str, params: ModelParams,
                 schema: dict[str, Any], schema_name: str = "verdict", *,
                 endpoint: str, response_format: str | None = None) -> None:
        base = hashlib.sha256()
        for part in (KEY_VERSION, prompt_hash, model, normalize_endpoint(endpoint)):
            base.update(part.encode("utf-8"))
            base.update(b"\0")
        base.update(_canonical(params.to_dict()))
        base.update(b"\0")
        base.update(_canonical({"name": schema_name, "schema": schema}))
        base.update(b"\0")
        if response_format:  # a mode other than the provider's own (key_format)
            base.update(b"response_format\0" + response_format.encode("utf-8") + b"\0")
        self._base = base

    def key(self, request: JudgeRequest) -> str:
        h = self._base.copy()
        # length-prefixed parts, so no content can fake a boundary between them
        parts = [request.system]
        for m in request.messages:
            parts.append(str(m.get("role", "")))
            parts.append(str(m.get("content", "")))
        view = request.view
        if view is not None and (view.ledger_keys is not None or view.slice_seqs is not None):
            # what the item's own schema is made of (judge.verdicts.schema.request_enums)
            enums = [None if view.ledger_keys is None else sorted(view.ledger_keys),
                     None if view.slice_seqs is None else sorted(view.slice_seqs)]
            try:
                shown = orjson.dumps(enums).decode("utf-8")
            except TypeError:  # an integer beyond 64 bits, a lone surrogate
                shown = json.dumps(enums, separators=(",", ":"))  # ASCII: \ud800 escaped
            parts.extend(("enums", shown))
        for part in parts:
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
        return "sha256:" + h.hexdigest()


def key_format(provider: Provider) -> str | None:
    """The structured-output mode that goes into `provider`'s cache keys now: None for its
    own mode (so keys made before modes existed stay those of its own mode)."""
    mode = provider.response_format
    return mode if mode and mode != provider.native_format else None


def cache_key(prompt_hash: str, model: str, params: ModelParams, request: JudgeRequest, *,
              endpoint: str, response_format: str | None = None) -> str:
    """The cache key of `request` sent to `model` at `endpoint` under a prompt with
    `prompt_hash` (in structured-output mode `response_format`, None: the provider's own)."""
    return KeyMaker(prompt_hash, model, params, request.schema, request.schema_name,
                    endpoint=endpoint, response_format=response_format).key(request)


@functools.cache
def renderer_fingerprint() -> str:
    """A digest of the code that turns an item into a request (rendering, redaction, slice
    text). A render memo is only trusted while this code is unchanged."""
    from judge.redaction.fingerprint import code_fingerprint

    h = hashlib.sha256()
    h.update(code_fingerprint().encode("utf-8"))  # the redaction engine, its rules and data
    for name in RENDER_MODULES:
        module = importlib.import_module(name)
        path = getattr(module, "__file__", None)
        h.update(name.encode("utf-8"))
        h.update(Path(path).read_bytes() if path else b"?")
    return h.hexdigest()


RENDER_MODULES = ("judge.prompts.render", "judge.prompts.redact", "judge.prompts.files",
                  "judge.items.slice", "judge.items.model", "judge.request")

# No key sorting: equal items from the same source serialize alike, and a memo miss on a
# reordered dict is harmless (the item is rendered and found by its cache key).
_ORJSON_OPTS = orjson.OPT_NON_STR_KEYS


class MemoMaker:
    """Render-memo keys: a digest of everything `render` reads — the item's content, the
    prompt, model, params, redaction and the renderer's code — and of the endpoint and the
    structured-output mode (a memo leads to a stored answer, which is only the same answer
    from the same server asked the same way), so a rerun can find an item's earlier call
    without rendering it again (rendering costs far more than hashing)."""

    __slots__ = ("_base",)

    def __init__(self, prompt_hash: str, model: str, params: ModelParams,
                 redaction: object | None, *, endpoint: str,
                 response_format: str | None = None) -> None:
        base = hashlib.sha256()
        # KEY_VERSION: a memo leads to a call made under the key rules of its time
        for part in ("judge-render-memo-v2", KEY_VERSION, renderer_fingerprint(), prompt_hash,
                     model, normalize_endpoint(endpoint),
                     repr(sorted(params.to_dict().items())), repr(redaction),
                     response_format or ""):
            base.update(part.encode("utf-8"))
            base.update(b"\0")
        self._base = base

    def key(self, item: Item) -> str:
        h = self._base.copy()
        content = (item.item_id, item.trace_id, item.seq, item.turn, item.rubric, item.kind,
                   item.goal, item.ledger, item.events, item.target, sorted(item.ledger_keys),
                   sorted(item.slice_seqs), item.safety_critical, item.candidate,
                   item.unsupported, item.end_state, item.actions, item.foreign,
                   # the scenario's redaction block: other patterns, another request
                   sorted(item.redaction.items()) if item.redaction else None)
        try:
            h.update(orjson.dumps(content, option=_ORJSON_OPTS, default=str))
        except TypeError:  # e.g. an integer beyond 64 bits
            h.update(b"json:" + _canonical(content))
        return "memo:" + h.hexdigest()
