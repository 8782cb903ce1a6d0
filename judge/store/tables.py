"""The schema as SQLAlchemy Core tables, for the code to query (no ORM: the store writes and
reads rows). The database itself is made only by the frozen DDL of judge/store/migrations.py;
a change here comes with a new migration there, and tests/test_store_migrations.py checks that
both agree (columns, types, keys, indexes).

Each table is also reachable as `<Name>Row.__table__`; `metadata` holds them all.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

metadata = MetaData()


def _str(name: str, *args: Any, nullable: bool = False, **kw: Any) -> Column[Any]:
    return Column(name, String, *args, nullable=nullable, **kw)


def _json(name: str) -> Column[Any]:
    return Column(name, JSON, nullable=False)


def _when(name: str, *, nullable: bool = False) -> Column[Any]:
    return Column(name, DateTime(timezone=True), nullable=nullable)


def _int(name: str, *, nullable: bool = False, **kw: Any) -> Column[Any]:
    return Column(name, Integer, nullable=nullable, **kw)


def _bool(name: str) -> Column[Any]:
    return Column(name, Boolean, nullable=False)


def _serial() -> Column[Any]:
    return Column("id", Integer, primary_key=True, autoincrement=True)


class _Row:
    """A named handle on a table (`__table__`), as the migrations refer to tables."""

    __table__: Table

    def __init_subclass__(cls, table: Table, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.__table__ = table


class AppliedMigration(_Row, table=Table(
        "judge_migrations", metadata,
        _str("name", primary_key=True),
        _when("applied_at"))):
    pass


class TraceRow(_Row, table=Table(
        "traces", metadata,
        _str("trace_id", primary_key=True),
        _str("scenario", nullable=True),
        _json("candidate"),
        _json("meta"),
        _int("n_events"),
        _str("content_hash"),
        _json("body"),  # the whole trace document (formats §1)
        _when("created_at"))):
    pass


class ScenarioRow(_Row, table=Table(
        "scenarios", metadata,
        _str("content_hash", primary_key=True),
        _str("scenario_id", index=True),
        _str("path", nullable=True),
        _str("text"),
        _when("created_at"))):
    pass


class ItemRow(_Row, table=Table(
        "items", metadata,
        _str("item_id", primary_key=True),
        _str("trace_id", index=True),
        _int("seq"),
        _int("turn"),
        _str("rubric", index=True),
        _str("kind"),
        _bool("safety_critical"),
        _json("data"),  # Item.to_dict(): goal, ledger snapshot, events slice, target
        _when("created_at"))):
    pass


class PromptRow(_Row, table=Table(
        "prompt_versions", metadata,
        _str("prompt_hash", primary_key=True),
        _str("rubric", index=True),
        _str("version"),
        _str("description", nullable=True),
        _str("template"),
        _when("created_at"))):
    pass


class CallRow(_Row, table=Table(
        "provider_calls", metadata,
        _str("cache_key", primary_key=True),  # the grading cache (CallCache) key
        _str("item_id", index=True),
        _str("prompt_hash"),
        _str("model"),
        _json("params"),
        _json("request"),
        _str("response_text"),
        _json("usage"),
        Column("latency_s", Float, nullable=False),
        _json("raw"),
        _when("created_at"),
        _str("invalid_reason", nullable=True))):  # migration 0007
    """One provider call. `invalid_reason`: why its reply failed verdict validation (kept for
    audit, never served as a final answer on a later run: judge.grading.engine). A reply
    asked again in its place is stored under the key; the old row stays under
    `<cache_key>#replaced-<uuid>`."""


class RunRow(_Row, table=Table(
        "runs", metadata,
        _str("run_id", primary_key=True),
        _str("status"),  # running | finished | failed | interrupted
        _str("suite", nullable=True),
        _json("config"),
        _json("summary"),
        _when("started_at"),
        _when("finished_at", nullable=True))):
    pass


class VerdictRow(_Row, table=Table(
        "verdicts", metadata,
        _serial(),
        _str("run_id", ForeignKey("runs.run_id")),
        _str("item_id"),  # indexed with created_at (migration 0002)
        _str("rubric", nullable=True),
        _str("prompt_version", nullable=True),
        _str("prompt_hash", nullable=True),
        _str("model", nullable=True),
        _str("label"),
        _str("violated_key", nullable=True),
        _int("evidence_event", nullable=True),
        Column("confidence", Float, nullable=True),
        Column("calibrated_confidence", Float, nullable=True),
        _str("rationale", nullable=True),
        _str("reason", nullable=True),
        _bool("overruled"),
        _str("route", nullable=True),  # veto | review | auto_accept
        _str("route_reason", nullable=True),
        _str("raw_completion", nullable=True),
        _json("meta"),
        _when("created_at"),
        UniqueConstraint("run_id", "item_id", name="uq_verdicts_run_item"),
        Index("ix_verdicts_rubric_prompt_model", "rubric", "prompt_version", "model"))):
    """One verdict of one run; (run_id, item_id) is unique so a resumed run never duplicates."""


class LabelRow(_Row, table=Table(
        "labels", metadata,
        _serial(),
        _str("item_id"),
        _str("label"),  # pass | fail | unsure
        _str("violated_key", nullable=True),
        _int("evidence_event", nullable=True),
        _str("annotator", index=True),
        _when("created_at"),
        _str("note", nullable=True),
        _json("meta"),
        _str("fingerprint", unique=True),
        _str("import_key", nullable=True),  # migration 0006
        Index("ix_labels_item_annotator", "item_id", "annotator"),
        Index("ux_labels_import_key", "import_key", unique=True))):
    """Append-only: a newer label by the same annotator on the same item supersedes the older,
    and both stay. `fingerprint` (the label's content and time) and, for a file line that
    gave no `created_at`, `import_key` (its content and occurrence) make imports idempotent
    (judge.labels.importing)."""


class QueueRow(_Row, table=Table(
        "review_queue", metadata,
        _str("item_id", primary_key=True),
        _str("rubric", nullable=True),
        _str("run_id", nullable=True),
        _int("verdict_id", nullable=True),
        _str("reason"),  # invalid verdict | uncalibrated | low confidence | audit
        _bool("safety_critical"),
        Column("confidence", Float, nullable=True),  # calibrated, else raw; None if unscored
        Column("sort_confidence", Float, nullable=False),  # lowest first; unscored sorts as 0
        _str("state"),  # open | claimed | done
        _int("required"),
        _int("n_labelled"),
        _str("claimed_by", nullable=True),
        _when("lease_expires_at", nullable=True),
        _when("created_at"),
        _when("done_at", nullable=True))):
    """One item waiting for people. `required` distinct annotators must label it (2 when it
    was picked for double labelling); a claim is a lease that expires. The claim-order index
    (state, safety_critical DESC, sort_confidence, item_id) and the partial lease index (claimed
    entries only) are made by the migrations."""


class CalibrationRow(_Row, table=Table(
        "calibrations", metadata,
        _serial(),
        _str("rubric"),
        _str("prompt_version", nullable=True),
        _str("prompt_hash"),
        _str("model"),
        Column("threshold", Float, nullable=True),
        _json("record"),
        _when("created_at"),
        Index("ix_calibrations_lookup", "rubric", "prompt_hash", "model"))):
    pass


ALL_TABLES: list[type[_Row]] = [AppliedMigration, TraceRow, ScenarioRow, ItemRow, PromptRow,
                                CallRow, RunRow, VerdictRow, LabelRow, QueueRow, CalibrationRow]


class WorkRow(_Row, table=Table(
        "grading_work", metadata,
        _serial(),
        _str("run_id", index=True),
        _str("item_id"),
        _str("rubric"),
        _str("state"),  # queued | leased | done
        _bool("vetoed"),
        _str("lease_owner", nullable=True),
        _when("lease_expires_at", nullable=True),
        _int("attempts"),
        _when("updated_at"),
        UniqueConstraint("run_id", "item_id", name="uq_grading_work_run_item"),
        Index("ix_grading_work_claim", "state", "lease_expires_at", "id"))):
    """Grading work of a distributed run, leased by `judge worker` processes (migration 0003)."""


class MemoRow(_Row, table=Table(
        "render_memo", metadata,
        _str("memo_key", primary_key=True),
        _str("cache_key"))):
    """Render memo (migration 0005): an item's digest → the call already made for it, so a
    cached rerun finds its answer without rendering the prompt again."""


class TokenRow(_Row, table=Table(
        "annotator_tokens", metadata,
        _str("token_hash", primary_key=True),  # sha256 hex of the token; never the token
        _str("annotator", index=True),
        _when("created_at"),
        _when("revoked_at", nullable=True))):
    """An annotator's sign-in token for `judge serve` (migration 0008)."""


class RevealRow(_Row, table=Table(
        "label_reveals", metadata,
        _serial(),
        _str("item_id"),
        _str("annotator"),
        _int("verdict_id", nullable=True),
        _when("created_at"),
        Index("ix_label_reveals_item_annotator", "item_id", "annotator"))):
    """A person looked at the judge's verdict of an item after labelling it (migration 0008)."""


class SessionRow(_Row, table=Table(
        "serve_sessions", metadata,
        _str("session_hash", primary_key=True),  # sha256 hex of the cookie's secret
        _str("token_hash"),  # the token it was started with (its revocation ends it)
        _str("annotator"),
        _when("created_at"),
        _when("expires_at"),
        _when("ended_at", nullable=True),
        Index("ix_serve_sessions_expires_at", "expires_at"))):
    """A signed-in browser of `judge serve`, until it signs out or expires (migration 0009)."""


class CanaryStageRow(_Row, table=Table(
        "canary_stages", metadata,
        _serial(),
        _str("rollout"),
        _int("look"),  # 1, 2, ... per rollout
        _str("stage"),  # the stage's name (5%, canary-1, ...)
        Column("share", Float, nullable=True),  # its traffic share, when given
        _str("metric"),  # pass-rate | hard-failure-rate | baseline-diff
        Column("threshold", Float, nullable=False),
        _str("decision"),  # promote | hold | rollback
        _int("n_tasks"),  # tasks so far (every look of the rollout)
        _int("n_success"),
        _json("record"),  # the decision as printed, with this look's own task outcomes
        _when("created_at"),
        UniqueConstraint("rollout", "look", name="uq_canary_stages_rollout_look"))):
    """One look of `judge canary` at a staged rollout (migration 0010)."""
