"""The schema as sqlmodel tables, for the code to query. The database itself is made only by the
frozen DDL of judge/store/migrations.py; a change here comes with a new migration there, and
tests/test_store_migrations.py checks that both agree (columns, types, keys, indexes)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, UniqueConstraint
from sqlmodel import Field, SQLModel


def _json() -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


def _when(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=nullable))


class AppliedMigration(SQLModel, table=True):
    __tablename__ = "judge_migrations"
    name: str = Field(primary_key=True)
    applied_at: datetime = _when()


class TraceRow(SQLModel, table=True):
    __tablename__ = "traces"
    trace_id: str = Field(primary_key=True)
    scenario: str | None = None
    candidate: dict[str, Any] = _json()
    meta: dict[str, Any] = _json()
    n_events: int = 0
    content_hash: str
    body: dict[str, Any] = _json()  # the whole trace document (formats §1)
    created_at: datetime = _when()


class ScenarioRow(SQLModel, table=True):
    __tablename__ = "scenarios"
    content_hash: str = Field(primary_key=True)
    scenario_id: str = Field(index=True)
    path: str | None = None
    text: str
    created_at: datetime = _when()


class ItemRow(SQLModel, table=True):
    __tablename__ = "items"
    item_id: str = Field(primary_key=True)
    trace_id: str = Field(index=True)
    seq: int
    turn: int
    rubric: str = Field(index=True)
    kind: str
    safety_critical: bool = False
    data: dict[str, Any] = _json()  # Item.to_dict(): goal, ledger snapshot, events slice, target
    created_at: datetime = _when()


class PromptRow(SQLModel, table=True):
    __tablename__ = "prompt_versions"
    prompt_hash: str = Field(primary_key=True)
    rubric: str = Field(index=True)
    version: str
    description: str | None = None
    template: str
    created_at: datetime = _when()


class CallRow(SQLModel, table=True):
    """One provider call; the grading cache (CallCache) is keyed by `cache_key`."""

    __tablename__ = "provider_calls"
    cache_key: str = Field(primary_key=True)
    item_id: str = Field(index=True)
    prompt_hash: str
    model: str
    params: dict[str, Any] = _json()
    request: dict[str, Any] = _json()
    response_text: str
    usage: dict[str, Any] = _json()
    latency_s: float = 0.0
    raw: dict[str, Any] = _json()
    created_at: datetime = _when()


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    run_id: str = Field(primary_key=True)
    status: str = "running"  # running | finished | failed | interrupted
    suite: str | None = None
    config: dict[str, Any] = _json()
    summary: dict[str, Any] = _json()
    started_at: datetime = _when()
    finished_at: datetime | None = _when(nullable=True)


class VerdictRow(SQLModel, table=True):
    """One verdict of one run; (run_id, item_id) is unique so a resumed run never duplicates."""

    __tablename__ = "verdicts"
    __table_args__ = (
        UniqueConstraint("run_id", "item_id", name="uq_verdicts_run_item"),
        Index("ix_verdicts_rubric_prompt_model", "rubric", "prompt_version", "model"),
    )
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.run_id")
    item_id: str  # indexed with created_at (migration 0002)
    rubric: str | None = None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    model: str | None = None
    label: str
    violated_key: str | None = None
    evidence_event: int | None = None
    confidence: float | None = None
    calibrated_confidence: float | None = None
    rationale: str | None = None
    reason: str | None = None
    overruled: bool = False
    route: str | None = None  # veto | review | auto_accept
    route_reason: str | None = None
    raw_completion: str | None = None
    meta: dict[str, Any] = _json()
    created_at: datetime = _when()


class LabelRow(SQLModel, table=True):
    """Append-only: a newer label by the same annotator on the same item supersedes the older,
    and both stay. `fingerprint` makes imports idempotent."""

    __tablename__ = "labels"
    __table_args__ = (Index("ix_labels_item_annotator", "item_id", "annotator"),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: str
    label: str  # pass | fail | unsure
    violated_key: str | None = None
    evidence_event: int | None = None
    annotator: str = Field(index=True)
    created_at: datetime = _when()
    note: str | None = None
    meta: dict[str, Any] = _json()
    fingerprint: str = Field(unique=True)


class QueueRow(SQLModel, table=True):
    """One item waiting for people. `required` distinct annotators must label it (2 when it
    was picked for double labelling); a claim is a lease that expires. The claim-order index
    (state, safety_critical DESC, sort_confidence, item_id) and the partial lease index (claimed
    entries only) are made by the migrations."""

    __tablename__ = "review_queue"
    item_id: str = Field(primary_key=True)
    rubric: str | None = None
    run_id: str | None = None
    verdict_id: int | None = None
    reason: str  # invalid verdict | uncalibrated | low confidence | audit
    safety_critical: bool = False
    confidence: float | None = None  # calibrated where it exists, else raw; None if unscored
    sort_confidence: float = 0.0  # ordering key: lowest first; unscored sorts as 0
    state: str = "open"  # open | claimed | done
    required: int = 1
    n_labelled: int = 0
    claimed_by: str | None = None
    lease_expires_at: datetime | None = _when(nullable=True)
    created_at: datetime = _when()
    done_at: datetime | None = _when(nullable=True)


class CalibrationRow(SQLModel, table=True):
    __tablename__ = "calibrations"
    __table_args__ = (Index("ix_calibrations_lookup", "rubric", "prompt_hash", "model"),)
    id: int | None = Field(default=None, primary_key=True)
    rubric: str
    prompt_version: str | None = None
    prompt_hash: str
    model: str
    threshold: float | None = None
    record: dict[str, Any] = _json()
    created_at: datetime = _when()


ALL_TABLES = [AppliedMigration, TraceRow, ScenarioRow, ItemRow, PromptRow, CallRow, RunRow,
              VerdictRow, LabelRow, QueueRow, CalibrationRow]


class WorkRow(SQLModel, table=True):
    """Grading work of a distributed run, leased by `judge worker` processes (migration 0003)."""

    __tablename__ = "grading_work"
    __table_args__ = (
        UniqueConstraint("run_id", "item_id", name="uq_grading_work_run_item"),
        Index("ix_grading_work_claim", "state", "lease_expires_at", "id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    item_id: str
    rubric: str
    state: str = "queued"  # queued | leased | done
    vetoed: bool = False
    lease_owner: str | None = None
    lease_expires_at: datetime | None = _when(nullable=True)
    attempts: int = 0
    updated_at: datetime = _when()


class MemoRow(SQLModel, table=True):
    """Render memo (migration 0005): an item's digest → the call already made for it, so a
    cached rerun finds its answer without rendering the prompt again."""

    __tablename__ = "render_memo"
    memo_key: str = Field(primary_key=True)
    cache_key: str
