"""The Store: one object over the database for the engine, the runner, the CLI and reports.

Every public write runs in one transaction: a failure leaves nothing half-written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection, Engine, RowMapping

from judge.errors import InputError, StoreError
from judge.formats import HumanLabel, Verdict, parse_item_id
from judge.store import review_queue, tables
from judge.store.annotators import Annotators
from judge.store.calls import DbCallCache
from judge.store.db import (
    DEFAULT_BUSY_TIMEOUT_MS,
    JsonText,
    MissingDatabase,
    as_utc,
    bulk_insert,
    database_url,
    display_url,
    insert_ignore,
    insert_sql,
    make_engine,
    store_errors,
    time_param,
    utcnow,
)
from judge.store.migrations import migrate
from judge.store.records import ReviewRequest
from judge.store.review_queue import ReviewQueue
from judge.store.rollouts import Rollouts
from judge.store.rows import (
    VERDICT_COLUMNS,
    canonical_hash,
    canonical_json,
    label_row,
    row_label,
    row_verdict,
    text_hash,
    verdict_params,
)
from judge.store.work_queue import WorkQueue

T_TRACE: Any = tables.TraceRow.__table__
T_SCEN: Any = tables.ScenarioRow.__table__
T_ITEM: Any = tables.ItemRow.__table__
T_PROMPT: Any = tables.PromptRow.__table__
T_RUN: Any = tables.RunRow.__table__
T_VERDICT: Any = tables.VerdictRow.__table__
T_LABEL: Any = tables.LabelRow.__table__
T_CAL: Any = tables.CalibrationRow.__table__
T_QUEUE: Any = tables.QueueRow.__table__

#: what `Store.add_handed_label` did
HandedLabel = Literal["added", "replayed", "not handed", "held"]

_CHUNK = 500


def open_store(url: str | None = None, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
               create: bool = True) -> Store:
    """Open (and migrate) the database at `url` (default: ./judge.db). Callers take both
    values from Settings (`database_url`, `db_busy_timeout_ms`). Without `create`, only a
    database that already holds judge's tables is opened (an older schema is still
    migrated): a missing SQLite file or an empty database is a MissingDatabase."""
    resolved = database_url(url)
    engine = make_engine(resolved, busy_timeout_ms=busy_timeout_ms, create=create)
    try:
        with store_errors(resolved):
            if not create and not _has_schema(engine):
                raise MissingDatabase(f"database {display_url(resolved)} holds no judge "
                                      "tables")
            migrate(engine)
    except StoreError:
        engine.dispose()
        raise
    return Store(engine, resolved, busy_timeout_ms=busy_timeout_ms)


def _has_schema(engine: Engine) -> bool:
    with engine.connect().execution_options(judge_read=True) as conn, conn.begin():
        return bool(conn.dialect.has_table(conn, "judge_migrations"))


class Store:
    def __init__(self, engine: Engine, url: str, *,
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.engine = engine
        self.url = url
        self.busy_timeout_ms = busy_timeout_ms
        self.calls = DbCallCache(engine, url)
        self.queue = ReviewQueue(engine, url)
        """The review queue (judge.store.review_queue)."""
        self.work = WorkQueue(engine, url)
        """The grading work of distributed runs (judge.store.work_queue)."""
        self.annotators = Annotators(engine, url)
        """`judge serve`'s sign-in tokens and recorded reveals (judge.store.annotators)."""
        self.rollouts = Rollouts(engine, url)
        """`judge canary`'s looks at staged rollouts (judge.store.rollouts)."""

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def where(self) -> str:
        return display_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _read(self) -> Connection:
        return self.engine.connect().execution_options(judge_read=True)

    # -- runs ---------------------------------------------------------------------------
    def save_run(self, run_id: str | None = None, *, suite: str | None = None,
                 config: dict[str, Any] | None = None) -> str:
        """Start a run (or keep an existing one, for --resume) and return its id."""
        rid = run_id or f"run-{utcnow():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
        row = {"run_id": rid, "status": "running", "suite": suite, "config": config or {},
               "summary": {}, "started_at": utcnow(), "finished_at": None}
        with store_errors(self.url), self.engine.begin() as conn:
            conn.execute(insert_ignore(T_RUN, self.dialect), [row])
        return rid

    def finish_run(self, run_id: str, *, status: str = "finished",
                   summary: dict[str, Any] | None = None) -> None:
        values: dict[str, Any] = {"status": status, "finished_at": utcnow()}
        if summary is not None:
            values["summary"] = summary
        with store_errors(self.url), self.engine.begin() as conn:
            conn.execute(update(T_RUN).where(T_RUN.c.run_id == run_id).values(**values))

    def batch_ids(self, run_id: str) -> dict[str, str]:
        """The provider batch submitted for each rubric of a run (`judge run --batch`)."""
        run = self.get_run(run_id)
        return dict(((run or {}).get("config") or {}).get("batches", {}))

    def save_batch_id(self, run_id: str, rubric: str, batch_id: str) -> None:
        """Remember a submitted batch on its run, so a killed run polls it again on resume."""
        with store_errors(self.url), self.engine.begin() as conn:
            cfg = dict(conn.execute(select(T_RUN.c.config).where(T_RUN.c.run_id == run_id))
                       .scalar_one() or {})
            cfg["batches"] = {**cfg.get("batches", {}), rubric: batch_id}
            conn.execute(update(T_RUN).where(T_RUN.c.run_id == run_id).values(config=cfg))

    def suite_runs(self, suite: str, *, manifest: str | None = None,
                   before: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Finished runs of `suite` (optionally only those of `manifest`), newest first, at
        most `limit`; with `before` (a run id), only runs started before that run. Each as
        `get_run` returns it, summary included (the run report's changes and trends)."""
        stmt = (select(T_RUN).where(T_RUN.c.suite == suite, T_RUN.c.status == "finished")
                .order_by(T_RUN.c.started_at.desc(), T_RUN.c.run_id.desc()))
        with store_errors(self.url), self._read() as conn:
            if before is not None:
                start = conn.execute(select(T_RUN.c.started_at)
                                     .where(T_RUN.c.run_id == before)).scalar()
                if start is not None:
                    stmt = stmt.where(T_RUN.c.started_at < start)
            if manifest is None:
                rows = conn.execute(stmt.limit(limit)).mappings().all()
            else:  # the manifest is inside the JSON config: filtered here
                rows = []
                for row in conn.execute(stmt).mappings():
                    if (row["config"] or {}).get("manifest") == manifest:
                        rows.append(row)
                        if len(rows) >= limit:
                            break
        return [_run_dict(row) for row in rows]

    def list_runs(self, *, suite: str | None = None, status: str | None = None,
                  limit: int | None = 20) -> list[dict[str, Any]]:
        """Runs newest first (by start), optionally of one suite and/or one status, at most
        `limit` (None: all). Each as `get_run` returns it plus `verdicts`: how many verdicts
        it has stored (a run still `running` after its process was killed shows how far it
        got). `judge runs list`."""
        counts = (select(T_VERDICT.c.run_id, func.count().label("n"))
                  .group_by(T_VERDICT.c.run_id).subquery())
        stmt = (select(T_RUN, func.coalesce(counts.c.n, 0).label("verdicts"))
                .select_from(T_RUN.outerjoin(counts, counts.c.run_id == T_RUN.c.run_id))
                .order_by(T_RUN.c.started_at.desc(), T_RUN.c.run_id.desc()))
        if suite is not None:
            stmt = stmt.where(T_RUN.c.suite == suite)
        if status is not None:
            stmt = stmt.where(T_RUN.c.status == status)
        if limit is not None:
            stmt = stmt.limit(limit)
        with store_errors(self.url), self._read() as conn:
            rows = conn.execute(stmt).mappings().all()
        out = [_run_dict(row) for row in rows]
        for run in out:
            run["verdicts"] = int(run["verdicts"])
        return out

    def last_unfinished_run(self, *, suite: str | None = None) -> dict[str, Any] | None:
        """The newest run (of `suite`, if given) that did not finish: `running` (killed, or
        still going), `interrupted` or `failed`; None if there is none. `--resume last`."""
        stmt = select(T_RUN).where(T_RUN.c.status.in_(("running", "interrupted", "failed")))
        if suite is not None:
            stmt = stmt.where(T_RUN.c.suite == suite)
        stmt = stmt.order_by(T_RUN.c.started_at.desc(), T_RUN.c.run_id.desc()).limit(1)
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(stmt).mappings().first()
        return None if row is None else _run_dict(row)

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(select(T_RUN).where(T_RUN.c.run_id == run_id)).mappings().first()
        return None if row is None else _run_dict(row)

    def previous_finished_run(self, run_id: str, *, suite: str, manifest: str
                              ) -> dict[str, Any] | None:
        """The newest *finished* run of the same suite (`suite`) from the same manifest
        (`config.manifest` equal to `manifest`) that started before run `run_id` (or any, if
        `run_id` is not stored), `run_id` itself excluded; None if there is none. Returned
        as `get_run` returns a run (its stored summary included)."""
        with store_errors(self.url), self._read() as conn:
            started = conn.execute(select(T_RUN.c.started_at).where(
                T_RUN.c.run_id == run_id)).scalar_one_or_none()
            stmt = select(T_RUN).where(T_RUN.c.suite == suite, T_RUN.c.status == "finished",
                                       T_RUN.c.run_id != run_id)
            if started is not None:
                stmt = stmt.where(T_RUN.c.started_at <= started)
            stmt = stmt.order_by(T_RUN.c.started_at.desc(), T_RUN.c.finished_at.desc(),
                                 T_RUN.c.run_id.desc())
            for row in conn.execute(stmt).mappings():
                if (row["config"] or {}).get("manifest") == manifest:
                    return _run_dict(row)
        return None

    def suite_run_history(self, suite: str, *, statuses: Sequence[str] = ("finished",),
                          include: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The runs of `suite` with one of `statuses` (and the runs named in `include`,
        whatever their status), oldest first: run_id, status, started_at, finished_at,
        config and summary."""
        cond = T_RUN.c.status.in_(list(statuses))
        if include:
            cond = cond | T_RUN.c.run_id.in_(list(include))
        stmt = (select(T_RUN).where(T_RUN.c.suite == suite, cond)
                .order_by(T_RUN.c.started_at, T_RUN.c.run_id))
        with store_errors(self.url), self._read() as conn:
            return [_run_dict(r) for r in conn.execute(stmt).mappings()]

    # -- inputs -------------------------------------------------------------------------
    def save_trace(self, trace: Any) -> str:
        """Store a trace (judge.trace.Trace or its dict); an already stored id is kept."""
        return self.save_traces([trace])[0]

    def save_traces(self, traces: Sequence[Any]) -> list[str]:
        """Store traces (judge.trace.Trace or dicts) in one transaction; stored ids are kept.
        Returns their ids."""
        now = utcnow()
        rows = []
        for trace in traces:
            body = trace.model_dump(mode="json", exclude_none=True) if hasattr(
                trace, "model_dump") else dict(trace)
            text = canonical_json(body)  # encoded once: the content hash and the column
            rows.append({
                "trace_id": body["trace_id"], "scenario": body.get("scenario"),
                "candidate": body.get("candidate") or {}, "meta": body.get("metadata") or {},
                "n_events": len(body.get("events") or []), "content_hash": text_hash(text),
                "body": JsonText(text), "created_at": now})
        if rows:
            with store_errors(self.url), self.engine.begin() as conn:
                bulk_insert(conn, T_TRACE, rows)
        return [str(r["trace_id"]) for r in rows]

    def save_scenario(self, scenario_id: str, text: str, path: str | None = None) -> str:
        """Store a scenario's reviewed text under its content hash; returns the hash."""
        digest = canonical_hash(text)
        row = {"content_hash": digest, "scenario_id": scenario_id, "path": path, "text": text,
               "created_at": utcnow()}
        with store_errors(self.url), self.engine.begin() as conn:
            conn.execute(insert_ignore(T_SCEN, self.dialect), [row])
        return digest

    def save_prompt(self, prompt: Any) -> None:
        """Store a prompt version (judge.prompts.Prompt) under its hash."""
        row = {"prompt_hash": prompt.hash, "rubric": prompt.rubric, "version": prompt.version,
               "description": getattr(prompt, "description", None),
               "template": getattr(prompt, "template", ""), "created_at": utcnow()}
        with store_errors(self.url), self.engine.begin() as conn:
            conn.execute(insert_ignore(T_PROMPT, self.dialect), [row])

    def save_items(self, items: Iterable[Any]) -> int:
        """Store judge items (judge.items.Item or their dicts); existing ids are kept."""
        now = utcnow()
        rows = []
        for it in items:
            d = it.to_dict() if hasattr(it, "to_dict") else dict(it)
            rows.append({"item_id": d["item_id"], "trace_id": d["trace_id"], "seq": d["seq"],
                         "turn": d.get("turn", 0), "rubric": d["rubric"], "kind": d["kind"],
                         "safety_critical": bool(d.get("safety_critical", False)),
                         "data": d, "created_at": now})
        with store_errors(self.url), self.engine.begin() as conn:
            bulk_insert(conn, T_ITEM, rows)
        return len(rows)

    def get_item(self, item_id: str) -> dict[str, Any] | None:
        """The stored item dict (goal, ledger snapshot, events slice, target), or None."""
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(select(T_ITEM.c.data).where(T_ITEM.c.item_id == item_id)).first()
        return dict(row[0]) if row is not None else None

    # -- verdicts -----------------------------------------------------------------------
    def save_verdicts(self, verdicts: Sequence[Verdict], run_id: str, *,
                      queue: Sequence[ReviewRequest] = ()) -> None:
        """Store a run's verdicts as given (their route fields already set by the router, or
        none) and the given review-queue entries, in one transaction. A verdict already
        stored for (run_id, item_id) is kept, and so is an item already queued."""
        now = utcnow()
        created = time_param(self.dialect)(now)
        params = [verdict_params(v, run_id, created) for v in verdicts]
        with store_errors(self.url), self.engine.begin() as conn:
            if conn.execute(select(T_RUN.c.run_id).where(T_RUN.c.run_id == run_id)).first() \
                    is None:
                conn.execute(insert_ignore(T_RUN, self.dialect), [{
                    "run_id": run_id, "status": "running", "suite": None, "config": {},
                    "summary": {}, "started_at": now, "finished_at": None}])
            if params:
                conn.exec_driver_sql(insert_sql(self.dialect, T_VERDICT, VERDICT_COLUMNS),
                                     params)
            if queue:
                review_queue.enqueue(conn, queue, run_id=run_id, now=now)

    def safety_critical_items(self, item_ids: Iterable[str]) -> set[str]:
        """Which of these stored items are safety-critical. Many ids are answered from the
        (few) safety-critical items of their rubrics, few ids by their keys."""
        ids = list(dict.fromkeys(item_ids))
        out: set[str] = set()
        with store_errors(self.url), self._read() as conn:
            rubrics = _rubrics_of(ids) if len(ids) > _CHUNK * 4 else None
            if rubrics is not None:
                critical = {r[0] for r in conn.execute(select(T_ITEM.c.item_id).where(
                    T_ITEM.c.safety_critical.is_(True), T_ITEM.c.rubric.in_(rubrics)))}
                return critical.intersection(ids)
            for i in range(0, len(ids), _CHUNK):
                out.update(r[0] for r in conn.execute(select(T_ITEM.c.item_id).where(
                    T_ITEM.c.item_id.in_(ids[i:i + _CHUNK]),
                    T_ITEM.c.safety_critical.is_(True))))
        return out

    def verdicts_for(self, rubric: str | None, prompt_version: str | None = None,
                     model: str | None = None, *, run_id: str | None = None) -> list[Verdict]:
        """The newest stored verdict per item matching the filters (rubric None = all)."""
        stmt = select(T_VERDICT)
        if rubric:
            stmt = stmt.where(T_VERDICT.c.rubric == rubric)
        if prompt_version:
            stmt = stmt.where(T_VERDICT.c.prompt_version == prompt_version)
        if model:
            stmt = stmt.where(T_VERDICT.c.model == model)
        if run_id:
            stmt = stmt.where(T_VERDICT.c.run_id == run_id)
        stmt = stmt.order_by(T_VERDICT.c.id)
        newest: dict[str, Verdict] = {}
        with store_errors(self.url), self._read() as conn:
            for row in conn.execute(stmt).mappings():
                newest[row["item_id"]] = row_verdict(row)
        return list(newest.values())

    def verdict_for_item(self, item_id: str) -> Verdict | None:
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(select(T_VERDICT).where(T_VERDICT.c.item_id == item_id)
                               .order_by(T_VERDICT.c.id.desc()).limit(1)).mappings().first()
        return row_verdict(row) if row is not None else None

    def stored_item_ids(self, run_id: str) -> set[str]:
        """Items that already have a verdict in this run (what a resumed run skips)."""
        with store_errors(self.url), self._read() as conn:
            return {r[0] for r in conn.execute(
                select(T_VERDICT.c.item_id).where(T_VERDICT.c.run_id == run_id))}

    def run_verdicts(self, run_id: str) -> list[Verdict]:
        """Every verdict stored for `run_id`, in item order."""
        with store_errors(self.url), self._read() as conn:
            rows = conn.execute(select(T_VERDICT).where(T_VERDICT.c.run_id == run_id)
                                .order_by(T_VERDICT.c.item_id)).mappings().all()
        return [row_verdict(r) for r in rows]

    def run_verdicts_of(self, run_id: str, item_ids: Iterable[str]) -> list[Verdict]:
        """The verdicts stored for `run_id` on the given items (e.g. the labelled ones), in
        item order: a run report's agreement over earlier runs without reading every verdict
        of every run."""
        ids = sorted(set(item_ids))
        out: list[Verdict] = []
        with store_errors(self.url), self._read() as conn:
            for i in range(0, len(ids), _CHUNK):
                stmt = select(T_VERDICT).where(T_VERDICT.c.run_id == run_id,
                                               T_VERDICT.c.item_id.in_(ids[i:i + _CHUNK]))
                out.extend(row_verdict(r) for r in conn.execute(stmt).mappings())
        return sorted(out, key=lambda v: v.item_id)

    def has_verdict(self, run_id: str, item_id: str) -> bool:
        with store_errors(self.url), self._read() as conn:
            return conn.execute(select(T_VERDICT.c.id).where(
                T_VERDICT.c.run_id == run_id, T_VERDICT.c.item_id == item_id)).first() \
                is not None

    def count_verdicts(self, run_id: str | None = None) -> int:
        stmt = select(func.count()).select_from(T_VERDICT)
        if run_id:
            stmt = stmt.where(T_VERDICT.c.run_id == run_id)
        with store_errors(self.url), self._read() as conn:
            return int(conn.execute(stmt).scalar_one())

    # -- labels -------------------------------------------------------------------------
    def add_label(self, label: HumanLabel) -> bool:
        """Append one label (a relabel supersedes, both stay) and update the queue.
        Returns False when this exact label was already stored."""
        return self.add_labels([label]) == 1

    def add_handed_label(self, label: HumanLabel, *, request_key: str | None = None,
                         direct: bool = False) -> HandedLabel:
        """Store a label of an item the review queue handed out (`judge serve`), in one
        transaction with the queue's update, and say what happened:

        - "added": the annotator holds the item's claim (with `direct`: the item may be any
          item nobody else holds, queued or not);
        - "replayed": a label with this `request_key` is stored already (the same form sent
          twice): nothing is added;
        - "not handed": the annotator does not hold the item's claim (it was never handed to
          them, they gave it back, or it went back to the queue when the lease expired);
        - "held": with `direct`, another annotator holds the item.

        `request_key` (one per form) is kept in the label's `import_key` column, whose
        unique index also turns two copies of the form sent at the same moment into one
        row."""
        row = label_row(label, request_key)
        who = label.annotator
        with store_errors(self.url), self.engine.begin() as conn:
            if request_key is not None and conn.execute(select(T_LABEL.c.id).where(
                    T_LABEL.c.import_key == request_key)).first() is not None:
                return "replayed"
            entry = conn.execute(select(T_QUEUE.c.state, T_QUEUE.c.claimed_by).where(
                T_QUEUE.c.item_id == label.item_id).with_for_update()).first()
            # again under the queue row's lock: a copy of this form sent at the same moment
            # may have waited for that lock while the first copy stored the label and freed
            # the claim (PostgreSQL reads committed rows afresh after the wait)
            if request_key is not None and entry is not None and conn.execute(
                    select(T_LABEL.c.id).where(T_LABEL.c.import_key == request_key)
            ).first() is not None:
                return "replayed"
            holder = entry.claimed_by if entry is not None and entry.state == "claimed" \
                else None
            if holder is not None and holder != who:
                return "held" if direct else "not handed"
            if holder is None and not direct:
                return "not handed"
            if conn.execute(insert_ignore(T_LABEL, self.dialect), row).rowcount == 0:
                return "replayed"  # the other copy of this form committed first
            review_queue.record_label(conn, label.item_id, who)
        return "added"

    def add_labels(self, labels: Sequence[HumanLabel], *,
                   import_keys: Sequence[str | None] | None = None) -> int:
        """Append labels in one transaction (all or nothing); a label already stored is
        skipped: the same fingerprint (content and time), or the same `import_keys` entry
        (a file line without a time: judge.labels.importing). Returns how many were added."""
        rows = _label_rows(labels, import_keys)
        added = 0
        seen_fp: set[str] = set()
        seen_ik: set[str] = set()
        with store_errors(self.url), self.engine.begin() as conn:
            for i in range(0, len(rows), _CHUNK):
                chunk = rows[i:i + _CHUNK]
                have_fp, have_ik = _stored_label_ids(conn, chunk)
                fresh = []
                for r in chunk:
                    fp, ik = r["fingerprint"], r["import_key"]
                    if fp in have_fp or fp in seen_fp or ik in have_ik or ik in seen_ik:
                        continue
                    seen_fp.add(fp)
                    if ik is not None:
                        seen_ik.add(ik)
                    fresh.append(r)
                if fresh:
                    conn.execute(insert_ignore(T_LABEL, self.dialect), fresh)
                    added += len(fresh)
                    for r in fresh:
                        review_queue.record_label(conn, r["item_id"], r["annotator"])
        return added

    def labels_stored(self, labels: Sequence[HumanLabel], *,
                      import_keys: Sequence[str | None] | None = None) -> list[bool]:
        """For each label, whether `add_labels` would skip it as already stored."""
        rows = _label_rows(labels, import_keys)
        out: list[bool] = []
        with store_errors(self.url), self._read() as conn:
            for i in range(0, len(rows), _CHUNK):
                chunk = rows[i:i + _CHUNK]
                have_fp, have_ik = _stored_label_ids(conn, chunk)
                out.extend(r["fingerprint"] in have_fp or r["import_key"] in have_ik
                           for r in chunk)
        return out

    def labels_for(self, item_ids: Iterable[str] | None = None, *, rubric: str | None = None,
                   annotator: str | None = None, newest_only: bool = False) -> list[HumanLabel]:
        """Stored labels, oldest first (the whole history unless `newest_only`: then each
        annotator's newest label per item)."""
        stmt = select(T_LABEL).order_by(T_LABEL.c.created_at, T_LABEL.c.id)
        if annotator:
            stmt = stmt.where(T_LABEL.c.annotator == annotator)
        if rubric:
            pattern = rubric.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            stmt = stmt.where(T_LABEL.c.item_id.like(f"%:{pattern}", escape="\\"))
        with store_errors(self.url), self._read() as conn:
            if item_ids is None:
                out = [row_label(r) for r in conn.execute(stmt).mappings()]
            else:
                ids = list(item_ids)
                out = []
                for i in range(0, len(ids), _CHUNK):
                    part = stmt.where(T_LABEL.c.item_id.in_(ids[i:i + _CHUNK]))
                    out.extend(row_label(r) for r in conn.execute(part).mappings())
                out.sort(key=lambda lb: lb.created_at)
        if newest_only:
            newest = {(lb.item_id, lb.annotator): lb for lb in out}
            out = list(newest.values())
        return out

    def last_label(self, annotator: str) -> HumanLabel | None:
        """The newest label `annotator` made (what an undo goes back to), or None."""
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(select(T_LABEL).where(T_LABEL.c.annotator == annotator)
                               .order_by(T_LABEL.c.id.desc()).limit(1)).mappings().first()
        return row_label(row) if row is not None else None

    def multi_annotator_items(self) -> list[str]:
        """Items labelled by two or more distinct annotators (for human–human agreement)."""
        stmt = (select(T_LABEL.c.item_id).group_by(T_LABEL.c.item_id)
                .having(func.count(func.distinct(T_LABEL.c.annotator)) > 1))
        with store_errors(self.url), self._read() as conn:
            return [r[0] for r in conn.execute(stmt)]

    def has_labelled(self, item_id: str, annotator: str) -> bool:
        with store_errors(self.url), self._read() as conn:
            return conn.execute(select(T_LABEL.c.id).where(
                T_LABEL.c.item_id == item_id, T_LABEL.c.annotator == annotator).limit(1)
            ).first() is not None

    def newest_verdict_id(self, item_id: str) -> int | None:
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(select(T_VERDICT.c.id).where(T_VERDICT.c.item_id == item_id)
                               .order_by(T_VERDICT.c.id.desc()).limit(1)).first()
        return int(row[0]) if row is not None else None

    def verdict_rubrics(self) -> list[str]:
        """The rubrics that have stored verdicts, sorted."""
        with store_errors(self.url), self._read() as conn:
            return sorted(r[0] for r in conn.execute(
                select(T_VERDICT.c.rubric).where(T_VERDICT.c.rubric.is_not(None)).distinct()))

    def runs(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest runs (id, status, suite, started/finished), newest first."""
        stmt = (select(T_RUN.c.run_id, T_RUN.c.status, T_RUN.c.suite, T_RUN.c.started_at,
                       T_RUN.c.finished_at).order_by(T_RUN.c.started_at.desc()).limit(limit))
        with store_errors(self.url), self._read() as conn:
            return [{**dict(r), "started_at": as_utc(r["started_at"]),
                     "finished_at": as_utc(r["finished_at"])}
                    for r in conn.execute(stmt).mappings()]

    def count_labels(self) -> int:
        with store_errors(self.url), self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(T_LABEL)).scalar_one())

    # -- calibration --------------------------------------------------------------------
    def save_calibration(self, record: Any) -> None:
        """Store a calibration record (judge.calibration CalibrationRecord, or its dict)."""
        data = record.model_dump(mode="json") if hasattr(record, "model_dump") else dict(record)
        for k in ("rubric", "prompt_hash", "model"):
            if not data.get(k):
                raise InputError("calibration record lacks a value", field=k)
        row = {"rubric": data["rubric"], "prompt_version": data.get("prompt_version"),
               "prompt_hash": data["prompt_hash"], "model": data["model"],
               "threshold": data.get("threshold"), "record": data, "created_at": utcnow()}
        with store_errors(self.url), self.engine.begin() as conn:
            conn.execute(T_CAL.insert(), [row])

    def stored_calibration(self, rubric: str, prompt_hash: str,
                           model: str) -> dict[str, Any] | None:
        """The newest stored calibration record (its dict) for (rubric, prompt hash, model),
        or None. judge.calibration.lookup.find_calibration adds the committed files."""
        with store_errors(self.url), self._read() as conn:
            row = conn.execute(
                select(T_CAL.c.record).where(T_CAL.c.rubric == rubric,
                                             T_CAL.c.prompt_hash == prompt_hash,
                                             T_CAL.c.model == model)
                .order_by(T_CAL.c.id.desc()).limit(1)).first()
        return dict(row[0]) if row is not None else None

    def calibrations(self) -> list[dict[str, Any]]:
        with store_errors(self.url), self._read() as conn:
            return [dict(r[0]) for r in conn.execute(
                select(T_CAL.c.record).order_by(T_CAL.c.id))]

    def get_items(self, item_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored item dicts of these ids (absent ids are left out), in chunked reads."""
        ids = list(dict.fromkeys(item_ids))
        out: dict[str, dict[str, Any]] = {}
        with store_errors(self.url), self._read() as conn:
            for i in range(0, len(ids), _CHUNK):
                for iid, data in conn.execute(select(T_ITEM.c.item_id, T_ITEM.c.data).where(
                        T_ITEM.c.item_id.in_(ids[i:i + _CHUNK]))):
                    out[iid] = dict(data)
        return out

    def trace_bodies(self, trace_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored trace documents (formats §1) of these ids (absent ids are left out), in
        chunked reads: what `judge compare` and `judge canary` diff a stored run's traces on."""
        ids = list(dict.fromkeys(trace_ids))
        out: dict[str, dict[str, Any]] = {}
        with store_errors(self.url), self._read() as conn:
            for i in range(0, len(ids), _CHUNK):
                for tid, body in conn.execute(select(T_TRACE.c.trace_id, T_TRACE.c.body).where(
                        T_TRACE.c.trace_id.in_(ids[i:i + _CHUNK]))):
                    out[tid] = dict(body)
        return out


def _label_rows(labels: Sequence[HumanLabel],
                import_keys: Sequence[str | None] | None) -> list[dict[str, Any]]:
    keys = list(import_keys) if import_keys is not None else [None] * len(labels)
    if len(keys) != len(labels):
        raise ValueError("one import key (or None) per label")
    return [label_row(lb, k) for lb, k in zip(labels, keys, strict=True)]


def _stored_label_ids(conn: Connection,
                      rows: Sequence[dict[str, Any]]) -> tuple[set[str], set[str | None]]:
    """The fingerprints and import keys of `rows` that are already stored."""
    have_fp = {r[0] for r in conn.execute(select(T_LABEL.c.fingerprint).where(
        T_LABEL.c.fingerprint.in_([r["fingerprint"] for r in rows])))}
    wanted = [r["import_key"] for r in rows if r["import_key"] is not None]
    have_ik: set[str | None] = {r[0] for r in conn.execute(select(T_LABEL.c.import_key).where(
        T_LABEL.c.import_key.in_(wanted)))} if wanted else set()
    return have_fp, have_ik


def _rubrics_of(item_ids: list[str]) -> set[str] | None:
    """The rubrics of these item ids (None if one is not an item id)."""
    try:
        return {parse_item_id(i)[2] for i in item_ids}
    except ValueError:
        return None


def _run_dict(row: RowMapping) -> dict[str, Any]:
    """A runs-table row as the run methods return it: its times as aware UTC datetimes."""
    out = dict(row)
    out["started_at"] = as_utc(out["started_at"])
    out["finished_at"] = as_utc(out["finished_at"])
    return out
