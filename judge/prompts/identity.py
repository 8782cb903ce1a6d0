"""A prompt's identity: sha256 over its canonical text plus the canonical output schema."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_text(text: str) -> str:
    """Normalized newlines, trailing whitespace stripped from every line and the end."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def prompt_hash(text: str, schema: dict[str, Any]) -> str:
    """`sha256:<hex>` of the canonical prompt file text and the canonical schema JSON."""
    h = hashlib.sha256()
    h.update(canonical_text(text).encode("utf-8"))
    h.update(b"\x00")
    h.update(canonical_json(schema).encode("utf-8"))
    return f"sha256:{h.hexdigest()}"
