"""The cache key of one provider call: what makes two calls the same call.

sha256 over the prompt hash, the model spec, the generation parameters and the rendered
input (system prompt, messages, schema). Any change to any of them is a different call;
the same request rendered again is the same call, so a rerun makes zero provider calls.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from judge.providers.base import JudgeRequest, ModelParams

KEY_VERSION = "judge-call-v1"


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


class KeyMaker:
    """Cache keys for one (prompt, model, params, schema): the constant part is hashed once."""

    __slots__ = ("_base", "_systems")

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
        self._systems: dict[str, bytes] = {}

    def key(self, request: JudgeRequest) -> str:
        h = self._base.copy()
        sys_digest = self._systems.get(request.system)
        if sys_digest is None:
            sys_digest = hashlib.sha256(request.system.encode("utf-8")).digest()
            if len(self._systems) < 64:
                self._systems[request.system] = sys_digest
        h.update(sys_digest)
        h.update(b"\0")
        for m in request.messages:  # length-prefixed, so no content can fake a boundary
            for part in (str(m.get("role", "")), str(m.get("content", ""))):
                data = part.encode("utf-8")
                h.update(len(data).to_bytes(8, "big"))
                h.update(data)
        return "sha256:" + h.hexdigest()


def cache_key(prompt_hash: str, model: str, params: ModelParams, request: JudgeRequest) -> str:
    """The cache key of `request` sent to `model` under a prompt with `prompt_hash`."""
    return KeyMaker(prompt_hash, model, params, request.schema, request.schema_name).key(request)
