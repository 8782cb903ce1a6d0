"""The schema moves only through named migrations (simonw/llm's tests/test_migrate.py is the
model): a blank database, and a database stopped before each migration, migrate to exactly the
schema written out below, on SQLite and PostgreSQL; judge/store/tables.py, which the code
queries, must agree with it; opening again applies nothing."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest_store import BACKENDS
from schema_catalog import schema
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from judge.store import open_store, tables
from judge.store.db import make_engine
from judge.store.migrations import MIGRATIONS, migrate

#: Every migration, in order. A new migration is added here and to EXPECTED / ADDED_BY.
NAMES = ["0001_initial_schema", "0002_verdicts_item_run_index", "0003_grading_work",
         "0004_drop_redundant_indexes", "0005_render_memo", "0006_label_import_key",
         "0007_provider_call_validity",
         "0008_annotator_tokens_and_reveals", "0009_serve_sessions", "0010_canary_stages"]

#: The schema after the last migration. Column types are the words of TYPES; "serial" is an
#: autoincrement integer id. `unique` maps PostgreSQL's constraint name to its columns (SQLite
#: keeps no name); `indexes` are all other indexes: columns in order, DESC keys, WHERE.
EXPECTED: dict[str, dict[str, Any]] = {
    "judge_migrations": {
        "columns": {"name": "text NOT NULL", "applied_at": "time NOT NULL"},
        "primary_key": "name",
    },
    "traces": {
        "columns": {
            "trace_id": "text NOT NULL",
            "scenario": "text",
            "candidate": "json NOT NULL",
            "meta": "json NOT NULL",
            "n_events": "int NOT NULL",
            "content_hash": "text NOT NULL",
            "body": "json NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "trace_id",
    },
    "scenarios": {
        "columns": {
            "content_hash": "text NOT NULL",
            "scenario_id": "text NOT NULL",
            "path": "text",
            "text": "text NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "content_hash",
        "indexes": {"ix_scenarios_scenario_id": "scenario_id"},
    },
    "items": {
        "columns": {
            "item_id": "text NOT NULL",
            "trace_id": "text NOT NULL",
            "seq": "int NOT NULL",
            "turn": "int NOT NULL",
            "rubric": "text NOT NULL",
            "kind": "text NOT NULL",
            "safety_critical": "bool NOT NULL",
            "data": "json NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "item_id",
        "indexes": {"ix_items_trace_id": "trace_id", "ix_items_rubric": "rubric"},
    },
    "prompt_versions": {
        "columns": {
            "prompt_hash": "text NOT NULL",
            "rubric": "text NOT NULL",
            "version": "text NOT NULL",
            "description": "text",
            "template": "text NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "prompt_hash",
        "indexes": {"ix_prompt_versions_rubric": "rubric"},
    },
    "provider_calls": {
        "columns": {
            "cache_key": "text NOT NULL",
            "item_id": "text NOT NULL",
            "prompt_hash": "text NOT NULL",
            "model": "text NOT NULL",
            "params": "json NOT NULL",
            "request": "json NOT NULL",
            "response_text": "text NOT NULL",
            "usage": "json NOT NULL",
            "latency_s": "float NOT NULL",
            "raw": "json NOT NULL",
            "created_at": "time NOT NULL",
            "invalid_reason": "text",
        },
        "primary_key": "cache_key",
        "indexes": {"ix_provider_calls_item_id": "item_id"},
    },
    "runs": {
        "columns": {
            "run_id": "text NOT NULL",
            "status": "text NOT NULL",
            "suite": "text",
            "config": "json NOT NULL",
            "summary": "json NOT NULL",
            "started_at": "time NOT NULL",
            "finished_at": "time",
        },
        "primary_key": "run_id",
    },
    "verdicts": {
        "columns": {
            "id": "serial NOT NULL",
            "run_id": "text NOT NULL",
            "item_id": "text NOT NULL",
            "rubric": "text",
            "prompt_version": "text",
            "prompt_hash": "text",
            "model": "text",
            "label": "text NOT NULL",
            "violated_key": "text",
            "evidence_event": "int",
            "confidence": "float",
            "calibrated_confidence": "float",
            "rationale": "text",
            "reason": "text",
            "overruled": "bool NOT NULL",
            "route": "text",
            "route_reason": "text",
            "raw_completion": "text",
            "meta": "json NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "id",
        "unique": {"uq_verdicts_run_item": "run_id, item_id"},
        "foreign_keys": ["run_id -> runs (run_id)"],
        "indexes": {
            "ix_verdicts_rubric_prompt_model": "rubric, prompt_version, model",
            "ix_verdicts_item_created": "item_id, created_at",
        },
    },
    "labels": {
        "columns": {
            "id": "serial NOT NULL",
            "item_id": "text NOT NULL",
            "label": "text NOT NULL",
            "violated_key": "text",
            "evidence_event": "int",
            "annotator": "text NOT NULL",
            "created_at": "time NOT NULL",
            "note": "text",
            "meta": "json NOT NULL",
            "fingerprint": "text NOT NULL",
            "import_key": "text",
        },
        "primary_key": "id",
        "unique": {"labels_fingerprint_key": "fingerprint"},
        "indexes": {"ix_labels_item_annotator": "item_id, annotator",
                    "ix_labels_annotator": "annotator",
                    "ux_labels_import_key": "UNIQUE import_key"},
    },
    "review_queue": {
        "columns": {
            "item_id": "text NOT NULL",
            "rubric": "text",
            "run_id": "text",
            "verdict_id": "int",
            "reason": "text NOT NULL",
            "safety_critical": "bool NOT NULL",
            "confidence": "float",
            "sort_confidence": "float NOT NULL",
            "state": "text NOT NULL",
            "required": "int NOT NULL",
            "n_labelled": "int NOT NULL",
            "claimed_by": "text",
            "lease_expires_at": "time",
            "created_at": "time NOT NULL",
            "done_at": "time",
        },
        "primary_key": "item_id",
        "indexes": {
            "ix_queue_claim_order": "state, safety_critical DESC, sort_confidence, item_id",
            "ix_queue_lease_claimed": "lease_expires_at WHERE {state = 'claimed'}",
        },
    },
    "calibrations": {
        "columns": {
            "id": "serial NOT NULL",
            "rubric": "text NOT NULL",
            "prompt_version": "text",
            "prompt_hash": "text NOT NULL",
            "model": "text NOT NULL",
            "threshold": "float",
            "record": "json NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "id",
        "indexes": {"ix_calibrations_lookup": "rubric, prompt_hash, model"},
    },
    "grading_work": {
        "columns": {
            "id": "serial NOT NULL",
            "run_id": "text NOT NULL",
            "item_id": "text NOT NULL",
            "rubric": "text NOT NULL",
            "state": "text NOT NULL",
            "vetoed": "bool NOT NULL",
            "lease_owner": "text",
            "lease_expires_at": "time",
            "attempts": "int NOT NULL",
            "updated_at": "time NOT NULL",
        },
        "primary_key": "id",
        "unique": {"uq_grading_work_run_item": "run_id, item_id"},
        "indexes": {"ix_grading_work_claim": "state, lease_expires_at, id",
                    "ix_grading_work_run_id": "run_id"},
    },
    "render_memo": {
        "columns": {"memo_key": "text NOT NULL", "cache_key": "text NOT NULL"},
        "primary_key": "memo_key",
    },
    "annotator_tokens": {
        "columns": {
            "token_hash": "text NOT NULL",
            "annotator": "text NOT NULL",
            "created_at": "time NOT NULL",
            "revoked_at": "time",
        },
        "primary_key": "token_hash",
        "indexes": {"ix_annotator_tokens_annotator": "annotator"},
    },
    "label_reveals": {
        "columns": {
            "id": "serial NOT NULL",
            "item_id": "text NOT NULL",
            "annotator": "text NOT NULL",
            "verdict_id": "int",
            "created_at": "time NOT NULL",
        },
        "primary_key": "id",
        "indexes": {"ix_label_reveals_item_annotator": "item_id, annotator"},
    },
    "serve_sessions": {
        "columns": {
            "session_hash": "text NOT NULL",
            "token_hash": "text NOT NULL",
            "annotator": "text NOT NULL",
            "created_at": "time NOT NULL",
            "expires_at": "time NOT NULL",
            "ended_at": "time",
        },
        "primary_key": "session_hash",
        "indexes": {"ix_serve_sessions_expires_at": "expires_at"},
    },
    "canary_stages": {
        "columns": {
            "id": "serial NOT NULL",
            "rollout": "text NOT NULL",
            "look": "int NOT NULL",
            "stage": "text NOT NULL",
            "share": "float",
            "metric": "text NOT NULL",
            "threshold": "float NOT NULL",
            "decision": "text NOT NULL",
            "n_tasks": "int NOT NULL",
            "n_success": "int NOT NULL",
            "record": "json NOT NULL",
            "created_at": "time NOT NULL",
        },
        "primary_key": "id",
        "unique": {"uq_canary_stages_rollout_look": "rollout, look"},
    },
}

#: The words of EXPECTED as each database reports them.
TYPES = {
    "sqlite": {"text": "VARCHAR", "int": "INTEGER", "bool": "BOOLEAN", "float": "FLOAT",
               "json": "JSON", "time": "DATETIME", "serial": "INTEGER"},
    "postgresql": {"text": "character varying", "int": "integer", "bool": "boolean",
                   "float": "double precision", "json": "json",
                   "time": "timestamp with time zone", "serial": "integer"},
}
SERIAL_DEFAULT = {"sqlite": "", "postgresql": " DEFAULT nextval('{table}_id_seq'::regclass)"}
PREDICATES = {"sqlite": {"state = 'claimed'": "state = 'claimed'"},
              "postgresql": {"state = 'claimed'": "state::text = 'claimed'::text"}}

#: What each migration after the first added (0001 made every other table and index):
#: (table, None) a table, (table, index) an index, (table, "column:NAME") a column.
ADDED_BY = {
    "0002_verdicts_item_run_index": [("verdicts", "ix_verdicts_item_created")],
    "0003_grading_work": [("grading_work", None)],
    "0004_drop_redundant_indexes": [("review_queue", "ix_queue_lease_claimed")],
    "0005_render_memo": [("render_memo", None)],
    "0006_label_import_key": [("labels", "column:import_key"),
                              ("labels", "ux_labels_import_key")],
    "0007_provider_call_validity": [("provider_calls", "column:invalid_reason")],
    "0008_annotator_tokens_and_reveals": [("annotator_tokens", None),
                                          ("label_reveals", None)],
    "0009_serve_sessions": [("serve_sessions", None)],
    "0010_canary_stages": [("canary_stages", None)],
}

#: Indexes that the released 0001 made while tables.py still declared them; 0004 drops them.
RELEASED_0001_EXTRA = [
    "CREATE INDEX ix_verdicts_item_id ON verdicts (item_id)",
    "CREATE INDEX ix_review_queue_rubric ON review_queue (rubric)",
    "CREATE INDEX ix_queue_lease ON review_queue (state, lease_expires_at)",
]


def expected(dialect: str, stop_before: str | None = None) -> dict[str, dict[str, Any]]:
    """EXPECTED in `dialect`'s words; with `stop_before`, as it was before that migration."""
    want = copy.deepcopy(EXPECTED)
    if stop_before is not None:
        for name in NAMES[NAMES.index(stop_before):]:
            for table, index in ADDED_BY[name]:
                if index is None:
                    del want[table]
                elif index.startswith("column:"):
                    del want[table]["columns"][index.removeprefix("column:")]
                else:
                    del want[table]["indexes"][index]
    words = TYPES[dialect]
    out: dict[str, dict[str, Any]] = {}
    for table, spec in want.items():
        columns = {}
        for col, decl in spec["columns"].items():
            word, _, rest = decl.partition(" ")
            columns[col] = " ".join(filter(None, [words[word], rest]))
            if word == "serial":
                columns[col] += SERIAL_DEFAULT[dialect].format(table=table)
        unique = spec.get("unique", {})
        indexes = {}
        for index, definition in spec.get("indexes", {}).items():
            for abstract, said in PREDICATES[dialect].items():
                definition = definition.replace("{" + abstract + "}", said)
            indexes[index] = definition
        out[table] = {
            "columns": columns,
            "primary_key": spec["primary_key"],
            "unique": unique if dialect == "postgresql" else {v: v for v in unique.values()},
            "foreign_keys": spec.get("foreign_keys", []),
            "indexes": indexes,
        }
    return out


@pytest.fixture(params=BACKENDS)
def new_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes URLs of fresh, empty databases of one backend."""
    count = iter(range(100))
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        return lambda: str(server.create_database())
    return lambda: f"sqlite:///{tmp_path / f'db{next(count)}.db'}"


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    e = make_engine(store_url)
    yield e
    e.dispose()


def read_schema(e: Engine) -> dict[str, dict[str, Any]]:
    with e.connect() as conn:
        return schema(conn)


def applied_names(e: Engine) -> list[str]:
    with e.connect() as conn:
        return [r[0] for r in conn.exec_driver_sql(
            "SELECT name FROM judge_migrations ORDER BY name")]


def test_names_are_the_migrations_in_order() -> None:
    assert [name for name, _ in MIGRATIONS] == NAMES == sorted(NAMES)
    assert set(ADDED_BY) == set(NAMES[1:])


def test_migrate_blank(engine: Engine) -> None:
    assert migrate(engine) == NAMES
    assert read_schema(engine) == expected(engine.dialect.name)
    assert applied_names(engine) == NAMES
    assert migrate(engine) == []  # nothing left to apply


# -- from every older version ------------------------------------------------------------

VALUES: dict[str, Any] = {"text": "x", "int": 7, "bool": True, "float": 0.5, "json": "{}",
                          "time": datetime(2024, 5, 1, 12, 0, tzinfo=UTC)}


def fill(e: Engine, stop_before: str) -> dict[str, tuple[Any, ...]]:
    """One row in every table the database has before `stop_before` (ids left to the
    database; run_id 'x' everywhere, so the verdict's foreign key holds)."""
    rows: dict[str, tuple[Any, ...]] = {}
    have = expected("sqlite", stop_before)
    with e.begin() as conn:
        for table in ["runs", *sorted(set(have) - {"runs", "judge_migrations"})]:
            cols = [c for c, d in EXPECTED[table]["columns"].items()
                    if not d.startswith("serial") and c in have[table]["columns"]]
            params = {c: VALUES[EXPECTED[table]["columns"][c].split()[0]] for c in cols}
            if conn.dialect.name == "sqlite":
                params = {c: v.replace(tzinfo=None) if isinstance(v, datetime) else v
                          for c, v in params.items()}
            conn.execute(text(f"INSERT INTO {table} ({', '.join(cols)}) "
                              f"VALUES ({', '.join(':' + c for c in cols)})"), params)
            rows[table] = tuple(params.values())
    return rows


def read_rows(e: Engine, wanted: dict[str, tuple[Any, ...]],
              stop_before: str | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of the tables of `wanted`, in the columns they had before `stop_before`."""
    have = expected("sqlite", stop_before)
    got = {}
    with e.connect() as conn:
        for table in wanted:
            cols = [c for c, d in EXPECTED[table]["columns"].items()
                    if not d.startswith("serial") and c in have[table]["columns"]]
            got[table] = [tuple(r) for r in conn.exec_driver_sql(
                f"SELECT {', '.join(cols)} FROM {table}")]
    return got


@pytest.mark.parametrize("stop_before", NAMES[1:])
def test_migrate_from_every_older_version(engine: Engine, stop_before: str) -> None:
    older = NAMES[:NAMES.index(stop_before)]
    assert migrate(engine, stop_before=stop_before) == older
    assert applied_names(engine) == older
    assert read_schema(engine) == expected(engine.dialect.name, stop_before)
    rows = fill(engine, stop_before)
    before = read_rows(engine, rows, stop_before)

    assert migrate(engine) == NAMES[len(older):]
    assert read_schema(engine) == expected(engine.dialect.name)
    assert applied_names(engine) == NAMES
    assert read_rows(engine, rows, stop_before) == before  # every row kept as it was
    assert all(len(v) == 1 for v in before.values()) and len(before) >= 10


@pytest.mark.parametrize("stop_before", ["0003_grading_work", "0004_drop_redundant_indexes"])
def test_migrate_from_released_first_schema(engine: Engine, stop_before: str) -> None:
    """Databases made before 0004 existed also carry the three indexes 0001 then made."""
    migrate(engine, stop_before=stop_before)
    with engine.begin() as conn:
        for ddl in RELEASED_0001_EXTRA:
            conn.exec_driver_sql(ddl)
    old = read_schema(engine)
    assert {"ix_verdicts_item_id"} <= set(old["verdicts"]["indexes"])
    assert {"ix_queue_lease", "ix_review_queue_rubric"} <= set(old["review_queue"]["indexes"])
    rows = fill(engine, stop_before)
    before = read_rows(engine, rows, stop_before)
    store = open_store(engine.url.render_as_string(hide_password=False))
    try:
        assert read_schema(store.engine) == expected(engine.dialect.name)
        assert read_rows(store.engine, rows, stop_before) == before
        assert store.get_run("x") is not None  # the store reads what was there
    finally:
        store.close()


def test_stop_before_must_name_a_migration(engine: Engine) -> None:
    with pytest.raises(ValueError, match="no migration named"):
        migrate(engine, stop_before="0099_nothing")
    assert read_schema(engine) == {}


# -- the code's tables agree with the database ------------------------------------------

#: Indexes only the migrations make (DESC keys and a partial index are written as DDL there).
MIGRATION_ONLY_INDEXES = {("review_queue", "ix_queue_claim_order"),
                          ("review_queue", "ix_queue_lease_claimed"),
                          ("verdicts", "ix_verdicts_item_created")}


def test_tables_agree_with_migrated_schema(new_url: Callable[[], str]) -> None:
    """What judge/store/tables.py declares (and the code queries) is what the migrations make:
    the same tables, columns, types, nullability, keys and indexes."""
    declared_engine, migrated_engine = make_engine(new_url()), make_engine(new_url())
    try:
        with declared_engine.begin() as conn:
            tables.metadata.create_all(conn)
        migrate(migrated_engine)
        declared, migrated = read_schema(declared_engine), read_schema(migrated_engine)
    finally:
        declared_engine.dispose()
        migrated_engine.dispose()
    for table, index in MIGRATION_ONLY_INDEXES:
        del migrated[table]["indexes"][index]
    assert declared == migrated
    assert set(declared) == set(EXPECTED)


# -- opening a store -----------------------------------------------------------------------

def test_opening_a_migrated_store_only_reads(store_url: str) -> None:
    """Every open but the first reads the applied names and writes nothing: no SQLite write
    lock, no PostgreSQL advisory lock."""
    open_store(store_url).close()
    e = make_engine(store_url)
    seen: list[str] = []
    event.listen(e, "before_cursor_execute",
                 lambda _c, _cur, sql, *_rest: seen.append(sql.strip().upper()))
    try:
        assert migrate(e) == []
    finally:
        e.dispose()
    assert any("FROM JUDGE_MIGRATIONS" in s for s in seen)
    for word in ("CREATE", "INSERT", "DROP", "ALTER", "ADVISORY", "BEGIN IMMEDIATE"):
        assert not [s for s in seen if word in s], word


def test_concurrent_first_opens_migrate_once(store_url: str) -> None:
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            open_store(store_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    e = make_engine(store_url)
    try:
        assert applied_names(e) == NAMES  # each recorded once (name is the primary key)
        assert read_schema(e) == expected(e.dialect.name)
    finally:
        e.dispose()


def test_reopening_keeps_data(store_url: str) -> None:
    s1 = open_store(store_url)
    run = s1.save_run("run-a", suite="nightly")
    s1.close()
    s2 = open_store(store_url)
    got = s2.get_run(run)
    assert got is not None and got["suite"] == "nightly" and got["status"] == "running"
    s2.close()


def test_default_is_judge_db_in_working_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = open_store()
    s.save_run("r")
    s.close()
    assert (tmp_path / "judge.db").exists()


def test_env_url_is_used(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("JUDGE_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    from judge.settings import Settings

    s = open_store(Settings.load().database_url)  # callers take the URL from Settings
    s.close()
    assert (tmp_path / "other.db").exists() and not (tmp_path / "judge.db").exists()


def test_missing_postgres_skips_or_fails_loudly(monkeypatch) -> None:
    from conftest_store import start_or_skip

    def missing():
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")

    monkeypatch.delenv("JUDGE_REQUIRE_POSTGRES", raising=False)
    with pytest.raises(pytest.skip.Exception):
        start_or_skip(missing)
    monkeypatch.setenv("JUDGE_REQUIRE_POSTGRES", "1")
    with pytest.raises(pytest.fail.Exception, match="JUDGE_REQUIRE_POSTGRES=1"):
        start_or_skip(missing)


def test_label_rubric_filter_is_exact(store) -> None:
    from judge.formats import HumanLabel

    store.add_labels([HumanLabel(item_id="t#1:scope_fidelity", label="pass", annotator="a"),
                      HumanLabel(item_id="t#1:scopeXfidelity", label="pass", annotator="a")])
    assert [lb.item_id for lb in store.labels_for(rubric="scope_fidelity")] == \
        ["t#1:scope_fidelity"]
