"""The verdict record (formats §3) and item ids `<trace_id>#<seq>:<rubric>`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def item_id(trace_id: str, seq: int, rubric: str) -> str:
    return f"{trace_id}#{seq}:{rubric}"


def parse_item_id(value: str) -> tuple[str, int, str]:
    """Split an item id into (trace_id, seq, rubric); ValueError if it is not one."""
    trace_id, sep, rest = value.rpartition("#")
    seq, sep2, rubric = rest.partition(":")
    if not sep or not sep2 or not trace_id or not rubric or not seq.isdigit():
        raise ValueError(f"not an item id (want <trace_id>#<seq>:<rubric>): {value!r}")
    return trace_id, int(seq), rubric


class Verdict(BaseModel):
    """One judge verdict on one item. `unscored` never counts as pass or fail."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    label: Literal["pass", "fail", "unscored"]
    violated_key: str | None = None
    evidence_event: int | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    rationale: str | None = None
    rubric: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    model: str | None = None
    reason: str | None = None
    # Extensions (formats allow added fields):
    calibrated_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    overruled: bool = False  # a deterministic veto on the trace overrules this verdict
    route: str | None = None  # veto | auto_accept | review
    route_reason: str | None = None
    raw_completion: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        if self.label == "fail" and not self.violated_key:
            raise ValueError("violated_key is required when label is fail")
        if self.label == "unscored" and not self.reason:
            raise ValueError("reason is required when label is unscored")
        return self
