"""The schema moves only through named migrations; a blank database migrates to exactly the
tables in judge/store/tables.py, and opening again applies nothing."""

from __future__ import annotations

from sqlalchemy import inspect

from judge.store import open_store
from judge.store.migrations import MIGRATIONS, migrate
from judge.store.tables import ALL_TABLES


def test_blank_database_gets_every_table_and_column(store_url: str) -> None:
    store = open_store(store_url)
    insp = inspect(store.engine)
    for model in ALL_TABLES:
        table = model.__table__  # type: ignore[attr-defined]
        got = {c["name"] for c in insp.get_columns(table.name)}
        assert got == {c.name for c in table.columns}, table.name
    indexes = {ix["name"] for ix in insp.get_indexes("review_queue")}
    assert "ix_queue_claim_order" in indexes
    with store.engine.connect() as conn:
        names = [r[0] for r in conn.exec_driver_sql("SELECT name FROM judge_migrations")]
    assert sorted(names) == sorted(n for n, _ in MIGRATIONS)
    assert migrate(store.engine) == []  # nothing left to apply
    store.close()


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
    s = open_store()
    s.close()
    assert (tmp_path / "other.db").exists() and not (tmp_path / "judge.db").exists()
