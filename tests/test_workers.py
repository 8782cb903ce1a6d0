"""Scale-out: `judge worker` processes share one PostgreSQL database; a killed worker's
lease expires and the others finish its items, with no verdict lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, text

from judge.testing.fakeserver import FakeProviderServer

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"


def _scalar(url: str, sql: str) -> int:
    eng = create_engine(url)
    try:
        with eng.connect() as conn:
            return int(conn.execute(text(sql)).scalar_one())
    except Exception:
        return 0
    finally:
        eng.dispose()


@pytest.mark.postgres
def test_four_workers_one_killed_finish_every_item_once(tmp_path: Path, pg_url: str) -> None:
    records = json.loads(TAU.read_text())[:40]
    (tmp_path / "tau.json").write_text(json.dumps(records))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(ROOT / "examples" / "scenarios" / "tau-airline"),
                       "traces": [{"path": str(tmp_path / "tau.json"), "format": "tau-bench"}]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}))
    with FakeProviderServer(latency=0.2) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url,
               "JUDGE_DATABASE_URL": pg_url}
        cmd = [sys.executable, "-m", "judge.cli.main"]
        coordinator = subprocess.Popen(
            [*cmd, "run", str(suite), "--allow-outside", "--model", "openai:fake-judge",
             "--distributed",
             "--no-local-worker", "--format", "json", "--no-progress"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while _scalar(pg_url, "SELECT count(*) FROM grading_work") == 0:
            assert coordinator.poll() is None, coordinator.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        workers = [subprocess.Popen(
            [*cmd, "worker", "--concurrency", "3", "--lease", "2", "--idle-exit", "4"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
            for _ in range(4)]
        deadline = time.monotonic() + 120
        while _scalar(pg_url, "SELECT count(*) FROM verdicts") < 5:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        workers[0].send_signal(signal.SIGKILL)
        out, err = coordinator.communicate(timeout=180)
        assert coordinator.returncode in (0, 1), err
        for w in workers[1:]:
            w.communicate(timeout=60)
            assert w.returncode == 0
        workers[0].wait()
    summary = json.loads(out)
    n_items = _scalar(pg_url, "SELECT count(*) FROM items")
    assert n_items > 20
    assert summary["judge"]["items"] == n_items
    assert _scalar(pg_url, "SELECT count(*) FROM verdicts") == n_items
    assert _scalar(pg_url, "SELECT count(DISTINCT item_id) FROM verdicts") == n_items
    assert _scalar(pg_url, "SELECT count(*) FROM grading_work WHERE state <> 'done'") == 0
    assert _scalar(pg_url, "SELECT count(DISTINCT lease_owner) FROM grading_work") >= 3
