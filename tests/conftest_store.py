"""Store fixtures: a throwaway PostgreSQL server per session, and a fresh store per test,
parametrized over SQLite and PostgreSQL (`store_url`, `store`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pg import PgServer, start_server

from judge.store import Store, open_store

BACKENDS = ["sqlite", "postgres"]


def _require_postgres() -> bool:
    return os.environ.get("JUDGE_REQUIRE_POSTGRES") == "1"


def start_or_skip(start: Callable[[], PgServer] = start_server) -> PgServer:
    """Start PostgreSQL; skip when impossible, or fail loudly under JUDGE_REQUIRE_POSTGRES=1."""
    try:
        return start()
    except (FileNotFoundError, RuntimeError) as exc:
        if _require_postgres():
            pytest.fail(f"JUDGE_REQUIRE_POSTGRES=1 but PostgreSQL cannot start: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = start_or_skip()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh empty PostgreSQL database."""
    return pg_server.create_database()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'judge.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()
