"""The cache key of one provider call: what makes two calls the same call.

sha256 over the prompt hash, the model spec, the generation parameters and the rendered
input (system prompt, messages, schema). Any change to any of them is a different call;
the same request rendered again is the same call, so a rerun makes zero provider calls.

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
from judge.providers.base import JudgeRequest, ModelParams

KEY_VERSION = "judge-call-v1"


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


class KeyMaker:
    """Cache keys for one (prompt, model, params, schema): the constant part is hashed once."""

    __slots__ = ("_base",)

    def __init__(self, prompt_hash: str, model: str, params: ModelParams,
                 schema: dict[str, Any], schema_name: str = "verdict") -> None:
        base = hashlib.sha256()
        for part in (KEY_VERSION, prompt_hash, model):
            base.update(part.encode("utf-8"))
            base.update(b"\0")
        base.update(_canonical(params.to_dict()))
        base.update(b"\0")
        base.update(_canonical({"name": schema_name, "schema": schema}))
        base.update(b"\0")
        self._base = base

    def key(self, request: JudgeRequest) -> str:
        h = self._base.copy()
        # length-prefixed parts, so no content can fake a boundary between them
        parts = [request.system]
        for m in request.messages:
            parts.append(str(m.get("role", "")))
            parts.append(str(m.get("content", "")))
        for part in parts:
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
        return "sha256:" + h.hexdigest()


def cache_key(prompt_hash: str, model: str, params: ModelParams, request: JudgeRequest) -> str:
    """The cache key of `request` sent to `model` under a prompt with `prompt_hash`."""
    return KeyMaker(prompt_hash, model, params, request.schema, request.schema_name).key(request)


@functools.cache
def renderer_fingerprint() -> str:
    """A digest of the code that turns an item into a request (rendering, redaction, slice
    text). A render memo is only trusted while this code is unchanged."""
    h = hashlib.sha256()
    for name in RENDER_MODULES:
        module = importlib.import_module(name)
        path = getattr(module, "__file__", None)
        h.update(name.encode("utf-8"))
        h.update(Path(path).read_bytes() if path else b"?")
    return h.hexdigest()


RENDER_MODULES = ("judge.prompts.render", "judge.prompts.redact", "judge.prompts.files",
                  "judge.items.slice", "judge.items.model")

# No key sorting: equal items from the same source serialize alike, and a memo miss on a
# reordered dict is harmless (the item is rendered and found by its cache key).
_ORJSON_OPTS = orjson.OPT_NON_STR_KEYS


class MemoMaker:
    """Render-memo keys: a digest of everything `render` reads — the item's content, the
    prompt, model, params, redaction and the renderer's code — so a rerun can find an item's
    earlier call without rendering it again (rendering costs far more than hashing)."""

    __slots__ = ("_base",)

    def __init__(self, prompt_hash: str, model: str, params: ModelParams,
                 redaction: object | None) -> None:
        base = hashlib.sha256()
        for part in ("judge-render-memo-v1", renderer_fingerprint(), prompt_hash, model,
                     repr(sorted(params.to_dict().items())), repr(redaction)):
            base.update(part.encode("utf-8"))
            base.update(b"\0")
        self._base = base

    def key(self, item: Item) -> str:
        h = self._base.copy()
        content = (item.item_id, item.trace_id, item.seq, item.turn, item.rubric, item.kind,
                   item.goal, item.ledger, item.events, item.target, sorted(item.ledger_keys),
                   sorted(item.slice_seqs), item.safety_critical, item.candidate,
                   item.unsupported, item.end_state, item.actions)
        try:
            h.update(orjson.dumps(content, option=_ORJSON_OPTS, default=str))
        except TypeError:  # e.g. an integer beyond 64 bits
            h.update(b"json:" + _canonical(content))
        return "memo:" + h.hexdigest()
