"""Canned verdicts for fakes: a valid `pass` built from what a request shows.

The evidence seq is the item's target seq when the structured item is at hand (scripted
provider), else the largest `seq` mentioned in the rendered text (the fake server sees only
text; a slice ends at its target, so the largest seq shown is the target). Fields the
request's JSON schema requires beyond the usual ones get a plain value of their type.
"""

from __future__ import annotations

import json
import re
from typing import Any

from judge.providers.base import JudgeRequest

_SEQ = re.compile(r"""["']?\bseq["']?\s*[:=#]?\s*["']?(\d{1,9})\b""", re.IGNORECASE)

_TYPE_DEFAULTS: dict[str, Any] = {"string": "", "integer": 0, "number": 0.0,
                                  "boolean": False, "array": [], "object": {}, "null": None}


def find_seq(text: str) -> int | None:
    """The largest `seq` number mentioned in `text` (`"seq": 4`, `seq=4`, `seq 4`), or None."""
    found = [int(m.group(1)) for m in _SEQ.finditer(text)]
    return max(found) if found else None


def default_verdict(schema: dict[str, Any] | None = None, *, seq: int | None = None,
                    label: str = "pass", confidence: float = 0.9) -> dict[str, Any]:
    """A verdict object that passes the usual checks for `label` pass with `seq` as evidence."""
    verdict: dict[str, Any] = {"label": label, "violated_key": None, "evidence_event": seq,
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
    """The scripted provider's default answer: a pass citing the item's target seq."""
    seq = getattr(request.item, "seq", None)
    if not isinstance(seq, int):
        seq = find_seq(request_text(request))
    return json.dumps(default_verdict(request.schema, seq=seq))
