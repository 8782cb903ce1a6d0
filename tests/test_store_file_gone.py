"""The store refuses to work on when its database goes away under it: a SQLite file deleted
or replaced while open fails every read and write with one StoreError (SQLite would go on
writing into the deleted file, lost at exit, and a new connection would make a fresh empty
file); a PostgreSQL database dropped while open fails the same way. Opened without
`create`, a missing or empty database is refused instead of made."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from judge.errors import StoreError
from judge.formats import HumanLabel
from judge.store import open_store
from judge.store.db import MissingDatabase


def _label(n: int) -> HumanLabel:
    return HumanLabel(item_id=f"t/{n}#1:r", annotator="asha", label="pass")


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_a_deleted_sqlite_file_fails_every_write_and_makes_no_new_file(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    store = open_store(f"sqlite:///{db}")
    try:
        assert store.add_label(_label(1))
        os.remove(db)
        with pytest.raises(StoreError, match="deleted while open"):
            store.add_label(_label(2))
        with pytest.raises(StoreError, match="deleted while open"):
            store.count_labels()  # reads too: the deleted file's contents are not served
        store.engine.dispose()  # a new connection must not make a new file either
        with pytest.raises(StoreError, match="deleted while open"):
            store.add_label(_label(3))
        assert not db.exists()
    finally:
        store.close()
    assert "judge.db" not in _files(tmp_path)


def test_a_replaced_sqlite_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    store = open_store(f"sqlite:///{db}")
    try:
        store.add_label(_label(1))
        shutil.copy(db, tmp_path / "copy.db")
        os.replace(tmp_path / "copy.db", db)  # same name, another file
        with pytest.raises(StoreError, match="replaced by another"):
            store.add_label(_label(2))
    finally:
        store.close()
    with open_store(f"sqlite:///{db}") as again:  # opened anew, the new file is the store
        assert again.add_label(_label(3))


def test_a_relative_path_stays_the_file_it_named(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///judge.db")
    try:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        store.engine.dispose()  # the next connection is opened from the new directory
        assert store.add_label(_label(1))
        assert _files(elsewhere) == []
    finally:
        store.close()
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as same:
        assert same.count_labels() == 1


def test_without_create_a_missing_or_empty_sqlite_database_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MissingDatabase, match="no database at"):
        open_store(f"sqlite:///{tmp_path / 'judge.db'}", create=False)
    assert _files(tmp_path) == []
    (tmp_path / "empty.db").touch()
    with pytest.raises(MissingDatabase, match="holds no judge tables"):
        open_store(f"sqlite:///{tmp_path / 'empty.db'}", create=False)
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as made:  # create is the default
        made.add_label(_label(1))
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}", create=False) as existing:
        assert existing.count_labels() == 1


def _drop(pg_server, url: str) -> str:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user={pg_server.user} "
                         "dbname=postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    return name


def test_a_dropped_postgres_database_fails_every_write(pg_server, pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        assert store.add_label(_label(1))
        _drop(pg_server, pg_url)
        for _ in range(3):  # the broken pooled connection, then new ones: each refused
            with pytest.raises(StoreError):
                store.add_label(_label(2))
    finally:
        store.close()
    with pytest.raises(StoreError, match="does not exist"):
        open_store(pg_url, create=False)


def test_without_create_an_empty_postgres_database_is_refused(pg_url: str) -> None:
    with pytest.raises(MissingDatabase, match="holds no judge tables"):
        open_store(pg_url, create=False)
    with open_store(pg_url) as made:
        made.add_label(_label(1))
    with open_store(pg_url, create=False) as existing:
        assert existing.count_labels() == 1
