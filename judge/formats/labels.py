"""The human label record (formats §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def utcnow() -> datetime:
    return datetime.now(UTC)


class HumanLabel(BaseModel):
    """One human judgement of one item. Newer labels by the same annotator supersede older."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    label: Literal["pass", "fail", "unsure"]
    violated_key: str | None = None
    evidence_event: int | None = None
    annotator: str = Field(min_length=1)
    created_at: datetime = Field(default_factory=utcnow)
    note: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> HumanLabel:
        if self.created_at.tzinfo is None:
            self.created_at = self.created_at.replace(tzinfo=UTC)
        return self
