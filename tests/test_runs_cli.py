"""`judge runs list|show` and `judge run --resume last`: a killed run's id is never lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from judge.cli.main import app
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer
from tests.test_suite_run import SCEN, _count, tau_subset, write_suite


def judge(*args: str | Path) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def test_list_newest_first_with_filters_and_show(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"),
         "traces": [str(SCEN / "refund-once" / "pass.json")]}])
    assert judge("run", suite, "--db", url, "--no-progress")[0] == 0
    with open_store(url) as store:  # a run that never finished, of another suite
        store.save_run("run-00000000-000000-killed", suite="other\x1b[31m", config={})
    code, out, _ = judge("runs", "list", "--db", url, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["status"] for r in rows] == ["running", "finished"]  # newest first
    finished = rows[1]
    assert finished["suite"] == "nightly" and finished["gate"] == "passed"
    assert finished["items"] > 0 and finished["traces"] == 1
    assert rows[0]["gate"] == "-" and rows[0]["items"] == 0
    # filters and limit
    assert [r["run_id"] for r in json.loads(judge("runs", "list", "--db", url, "--status",
                                                  "running", "--format", "json")[1])] == \
        ["run-00000000-000000-killed"]
    assert json.loads(judge("runs", "list", "--db", url, "--suite", "nightly", "--format",
                            "json")[1]) == [finished]
    assert len(json.loads(judge("runs", "list", "--db", url, "--limit", "1",
                                "--format", "json")[1])) == 1
    code, text, _ = judge("runs", "list", "--db", url)
    assert code == 0 and "\x1b" not in text and "other\\x1b[31m" in text
    assert text.splitlines()[0].split() == ["run_id", "suite", "status", "started", "(UTC)",
                                            "items", "gate"]
    code, shown, _ = judge("runs", "show", finished["run_id"], "--db", url)
    assert code == 0 and "gate: passed" in shown
    assert f"judge report run {finished['run_id']}" in shown and str(suite.resolve()) in shown
    code, shown, _ = judge("runs", "show", "run-00000000-000000-killed", "--db", url)
    assert code == 0 and "judge run --resume run-00000000-000000-killed" in shown
    code, _, err = judge("runs", "show", "nope", "--db", url)
    assert code == 2 and "no run 'nope'" in err and len(err.strip().splitlines()) == 1
    code, _, err = judge("runs", "list", "--db", url, "--status", "done")
    assert code == 2 and "unknown status 'done'" in err


def test_sigkilled_run_is_listed_running_and_resume_last_finishes_it(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"), "traces": [
            {"path": str(tau_subset(tmp_path, 20)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))
    db_path = tmp_path / "j.db"
    with FakeProviderServer(latency=0.15) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url,
               "JUDGE_DATABASE_URL": f"sqlite:///{db_path}"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "judge.cli.main", "run", str(suite), "--model",
             "openai:fake-judge", "--concurrency", "2", "--no-progress"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while _count(db_path, "SELECT count(*) FROM verdicts") < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        assert b"run-" not in out  # the killed process never printed its id

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "judge.cli.main", *args], env=env,
                                  capture_output=True, text=True, cwd=tmp_path, timeout=120)

        listed = cli("runs", "list", "--status", "running", "--format", "json")
        assert listed.returncode == 0, listed.stderr
        (row,) = json.loads(listed.stdout)
        assert row["items"] >= 3 and row["suite"] == "nightly"
        done = cli("run", "--resume", "last", "--suite", "nightly", "--format", "json",
                   "--no-progress")
        assert done.returncode in (0, 1), done.stderr
        assert f"resuming {row['run_id']} (running" in done.stderr
        assert json.loads(done.stdout)["run_id"] == row["run_id"]
    assert json.loads(cli("runs", "list", "--format", "json").stdout)[0]["status"] == "finished"
    again = cli("run", "--resume", "last")
    assert again.returncode == 2 and "no unfinished run to resume" in again.stderr


def test_an_unfinished_grade_run_says_how_to_finish_it(tmp_path: Path) -> None:
    """Issue 21: `judge report run` said "finish it with judge run --resume X" of a run that
    `judge grade` started, and that command answered "give a suite manifest or --resume
    RUN_ID". Every place that names the way on says: run the same judge grade again."""
    url = f"sqlite:///{tmp_path / 'j.db'}"
    with open_store(url) as store:  # as a killed `judge grade` leaves its run
        store.save_run("run-00000000-000000-graded", suite=None,
                       config={"command": "grade", "model": "heuristic"})
    for args in (["report", "run", "run-00000000-000000-graded"],
                 ["run", "--resume", "run-00000000-000000-graded"]):
        code, _, err = judge(*args, "--db", url)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "judge grade command again" in err and "--resume" not in err.split(";")[-1]
    code, shown, _ = judge("runs", "show", "run-00000000-000000-graded", "--db", url)
    assert code == 0 and "judge grade command again" in shown
    assert "judge run --resume" not in shown
