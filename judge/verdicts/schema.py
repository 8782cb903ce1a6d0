"""The JSON Schema a judge model must return (strict: every field required, no extras).

Kept within what OpenAI strict structured outputs and Anthropic tool input schemas accept:
ranges are stated in descriptions and enforced by `parse_verdict`, not by `minimum`.
"""

from __future__ import annotations

import copy
from typing import Any

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {
            "type": "string", "enum": ["pass", "fail"],
            "description": "pass or fail under the rubric",
        },
        "violated_key": {
            "type": ["string", "null"],
            "description": "for fail: the ledger key the item violates (a key shown in the "
                           "ledger block); null for pass",
        },
        "evidence_event": {
            "type": ["integer", "null"],
            "description": "for fail: the seq of the shown event that shows the violation; "
                           "null for pass",
        },
        "confidence": {
            "type": "number",
            "description": "probability in [0, 1] that the label is right",
        },
        "rationale": {
            "type": "string",
            "description": "one or two sentences citing the key and event",
        },
    },
    "required": ["label", "violated_key", "evidence_event", "confidence", "rationale"],
    "additionalProperties": False,
}


def verdict_schema(labels: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A fresh copy of the verdict schema (optionally with a prompt's own label set)."""
    schema = copy.deepcopy(_SCHEMA)
    if labels:
        schema["properties"]["label"]["enum"] = list(labels)
    return schema
