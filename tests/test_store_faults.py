"""A corrupt or locked SQLite file, an unreachable PostgreSQL: one clear line, exit 2, no
traceback, nothing half-written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from pg import free_port
from sqlalchemy.exc import OperationalError

from judge.errors import StoreError
from judge.formats import HumanLabel
from judge.store import open_store

JUDGE = [sys.executable, "-m", "judge.cli.main"]


def judge(*args: str, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    return subprocess.run([*JUDGE, *args], capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=120, check=False)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def labels_file(tmp_path: Path, n: int = 3) -> Path:
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps({"item_id": f"t{i}#1:r", "label": "pass", "annotator": "a",
                                     "created_at": "2026-11-29T10:00:00Z"}) + "\n"
                         for i in range(n)))
    return p


def test_corrupt_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    db.write_bytes(b"this is not a database at all " * 200)
    before = db.read_bytes()
    proc = judge("labels", "import", str(labels_file(tmp_path)), cwd=tmp_path)
    line = one_line_error(proc)
    assert "judge.db" in line and "not a database" in line
    assert db.read_bytes() == before  # untouched


def test_locked_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    open_store(f"sqlite:///{db}").close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        proc = judge("labels", "import", str(labels_file(tmp_path)), cwd=tmp_path,
                     env={"JUDGE_DB_BUSY_TIMEOUT_MS": "300"})
        line = one_line_error(proc)
        assert "judge.db" in line and "locked" in line
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_store(f"sqlite:///{db}") as s:
        assert s.count_labels() == 0


def test_unreachable_postgres(tmp_path: Path) -> None:
    url = f"postgresql://judge:secret@127.0.0.1:{free_port()}/judge"
    proc = judge("review", "stats", cwd=tmp_path, env={"JUDGE_DATABASE_URL": url})
    line = one_line_error(proc)
    assert "127.0.0.1" in line and "secret" not in line  # names the server, hides the password
    assert "connection" in line.lower() or "connect" in line.lower()


def test_failure_mid_write_leaves_nothing(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(store_url)
    labels = [HumanLabel(item_id=f"t{i}#1:r", label="pass", annotator="a") for i in range(1200)]
    import judge.store.review_queue as q

    calls = {"n": 0}
    real = q.record_label

    def flaky(conn, item_id, annotator):  # fail after the first chunk has been inserted
        calls["n"] += 1
        if calls["n"] == 700:
            raise OperationalError("INSERT", {}, Exception("disk I/O error"))
        real(conn, item_id, annotator)

    monkeypatch.setattr(q, "record_label", flaky)
    with pytest.raises(StoreError, match="disk I/O error"):
        store.add_labels(labels)
    assert calls["n"] == 700
    assert store.count_labels() == 0
    monkeypatch.setattr(q, "record_label", real)
    assert store.add_labels(labels) == 1200
    store.close()


def test_bad_busy_timeout_setting_is_one_line(tmp_path: Path) -> None:
    proc = judge("review", "stats", cwd=tmp_path, env={"JUDGE_DB_BUSY_TIMEOUT_MS": "abc"})
    line = one_line_error(proc)
    assert "JUDGE_DB_BUSY_TIMEOUT_MS" in line
    assert not (tmp_path / "judge.db").exists()  # nothing was opened
