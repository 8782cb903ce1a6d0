"""Every command that opens the database checks its URL first (judge.cli.database): a --db
or JUDGE_DATABASE_URL that is neither a database URL nor a SQLite path is one line and exit
2, and no file of that name is made (`--db 'not a url'` used to create one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    ["agreement", "--rubric", "scope_fidelity"],
    ["report", "agreement", "--rubric", "scope_fidelity"],
    ["calibrate", "compare", "v1", "v2", "--rubric", "scope_fidelity"],
    ["review", "stats"],
    ["runs", "list"],
    ["label", "--annotator", "asha"],
    ["probe", "--rubric", "scope_fidelity", "--model", "heuristic"],
]


def judge(args: list[str], cwd: Path, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "JUDGE_DATABASE_URL"} | (env or {})
    return subprocess.run([sys.executable, "-m", "judge.cli.main", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_db_that_is_no_url_is_one_line_and_makes_no_file(args: list[str],
                                                            tmp_path: Path) -> None:
    proc = judge([*args, "--db", "not a url"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("judge: error: --db 'not a url': not a database URL"), line
    assert list(tmp_path.iterdir()) == []


def test_the_environment_variable_is_named_when_it_is_the_source(tmp_path: Path) -> None:
    proc = judge(["review", "stats"], tmp_path, {"JUDGE_DATABASE_URL": "oops"})
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "environment variable JUDGE_DATABASE_URL 'oops'" in line
    assert list(tmp_path.iterdir()) == []
