"""`judge run`: suites, the release gate, bad input before any call, uncalibrated verdicts,
fault tolerance, batch mode and resume after SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from judge.cli.main import app
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import flaky

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "scenarios"
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"


def write_suite(path: Path, scenarios: list[dict[str, Any]], *,
                rubrics: tuple[str, ...] = ("scope_fidelity", "summary_fidelity"),
                release: dict[str, Any] | None = None) -> Path:
    """A one-suite manifest at `path`. Example scenarios named by their repository path are
    copied next to it first: a manifest's paths must stay under its directory."""
    scenarios = [_beside(path.parent, s) for s in scenarios]
    doc = {"suites": {"nightly": {"rubrics": list(rubrics), "scenarios": scenarios,
                                  "release": release or {"max_review_share": 1.0,
                                                         "min_scenario_pass_rate": 0.0}}}}
    path.write_text(yaml.safe_dump(doc))
    return path


def _beside(base: Path, value: Any) -> Any:
    """`value` with every path into examples/scenarios pointing at a copy under `base`."""
    if isinstance(value, str) and value.startswith(str(SCEN) + os.sep):
        rel = Path(value).relative_to(SCEN)
        copy = base / "scenarios" / rel.parts[0]
        if not copy.exists():
            shutil.copytree(SCEN / rel.parts[0], copy)
        return str(base / "scenarios" / rel)
    if isinstance(value, dict):
        return {k: _beside(base, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_beside(base, v) for v in value]
    return value


def tau_subset(tmp: Path, n: int) -> Path:
    out = tmp / f"tau-{n}.json"
    out.write_text(json.dumps(json.loads(TAU.read_text())[:n]))
    return out


def run_cli(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["run", *map(str, args)], env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


def test_pull_request_suite_reports_repetitions_and_judge(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/*.json")],
         "repetitions": 3}])
    code, out, _err = run_cli(suite, "--format", "json", "--db",
                             f"sqlite:///{tmp_path / 'j.db'}")
    summary = json.loads(out)
    # no trace names a task: the three are trials of the scenario's one task, which fails
    # (one trial of three passed) and is flaky; a scenario's pass rate is over its tasks
    assert summary["scenarios"]["refund-once"] == {"passed": 0, "total": 1, "text": "0/1"}
    rep = summary["repetitions"]["refund-once"]
    assert (rep["passed"], rep["total"], rep["tasks"], rep["flaky_tasks"]) == (
        1, 3, 1, ["refund-once"])
    assert summary["tasks"]["refund-once"]["refund-once"]["status"] == "flaky"
    assert summary["judge"]["name"] == "heuristic baseline (no LLM)"
    assert summary["gate"]["safety_critical"] >= 2  # two vetoed failing traces
    assert not summary["gate"]["passed"] and code == 1
    # failures are clustered by signature, each with its minimal slice, never averaged away
    sigs = {c["signature"] for c in summary["clusters"]}
    assert any(s.startswith("forbidden:refundOnce") for s in sigs)
    assert all(c["slice"] for c in summary["clusters"])
    # nothing is calibrated: every scored verdict that was not overruled went to review
    j = summary["judge"]
    assert j["uncalibrated"] == j["items"] - j["overruled"] - j["unscored"]
    assert summary["uncalibrated_note"]


def test_text_summary_reads_like_a_diagnosis(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/*.json")]}])
    code, out, _ = run_cli(suite, "--db", f"sqlite:///{tmp_path / 'j.db'}")
    assert code == 1
    assert "refund-once" in out and "0/1 task(s)  1 of 3 trial(s) passed" in out
    assert "release gate: FAILED" in out
    assert "heuristic baseline (no LLM)" in out


def test_passing_suite_exits_0(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/pass.json")]}])
    code, out, err = run_cli(suite, "--db", f"sqlite:///{tmp_path / 'j.db'}")
    assert code == 0, out + err
    assert "release gate: PASSED" in out


def test_require_calibrated_fails_the_gate(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/pass.json")]}])
    code, out, _ = run_cli(suite, "--require-calibrated", "--db",
                           f"sqlite:///{tmp_path / 'j.db'}")
    assert code == 1
    assert "uncalibrated" in out


@pytest.mark.parametrize("case", ["missing-trace", "missing-scenario", "unknown-rubric",
                                  "typo-field"])
def test_bad_suite_fails_before_any_provider_call(tmp_path: Path, server: FakeProviderServer,
                                                  case: str) -> None:
    scen: dict[str, Any] = {"scenario": str(SCEN / "refund-once"),
                            "traces": [str(SCEN / "refund-once/pass.json")]}
    rubrics: tuple[str, ...] = ("scope_fidelity",)
    if case == "missing-trace":
        scen["traces"] = [str(tmp_path / "nope.json")]
    elif case == "missing-scenario":
        scen["scenario"] = str(tmp_path / "nowhere")
    elif case == "unknown-rubric":
        rubrics = ("scope_fidelity", "vibes")
    else:
        scen["tracez"] = scen.pop("traces")
    suite = write_suite(tmp_path / "s.yaml", [scen], rubrics=rubrics)
    env = {"OPENAI_BASE_URL": server.openai_base_url}
    code, _out, err = run_cli(suite, "--model", "openai:fake-judge", "--db",
                             f"sqlite:///{tmp_path / 'j.db'}", env=env)
    assert code == 2
    assert err.count("\n") == 1 and str(suite) in err and "Traceback" not in err
    assert server.generation_count == 0


def test_provider_failing_20_percent_loses_no_item(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"), "traces": [
            {"path": str(tau_subset(tmp_path, 30)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))
    db = f"sqlite:///{tmp_path / 'j.db'}"
    with FakeProviderServer(responder=flaky(0.2, timeout_hold=3.0, seed=7)) as srv:
        env = {"OPENAI_BASE_URL": srv.openai_base_url, "JUDGE_TIMEOUT": "1",
               "JUDGE_RETRIES": "2"}
        code, out, err = run_cli(suite, "--model", "openai:fake-judge", "--concurrency", "8",
                                 "--format", "json", "--db", db, env=env)
        assert code in (0, 1), err
        summary = json.loads(out)
    with open_store(db) as store:
        verdicts = store.run_verdicts(summary["run_id"])
    n_items = _count(tmp_path / "j.db", "SELECT count(*) FROM items")
    assert len(verdicts) == summary["judge"]["items"] == n_items > 20
    assert len({v.item_id for v in verdicts}) == len(verdicts)
    for v in verdicts:
        assert v.label in ("pass", "fail", "unscored")
        if v.label == "unscored":
            assert v.reason
    assert any(v.label != "unscored" for v in verdicts)


def test_batch_mode_grades_through_the_batch_api(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"), "traces": [
            {"path": str(tau_subset(tmp_path, 10)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))
    db = f"sqlite:///{tmp_path / 'j.db'}"
    with FakeProviderServer() as srv:
        env = {"OPENAI_BASE_URL": srv.openai_base_url}
        code, out, err = run_cli(suite, "--model", "openai:fake-judge", "--batch",
                                 "--batch-poll", "0", "--format", "json", "--db", db,
                                 env=env)
        assert code in (0, 1), err
        summary = json.loads(out)
        assert srv.count("chat") == 0  # every verdict came from the batch
        assert srv.count("batches") >= 1
        assert srv.count("batch_lines") == summary["judge"]["items"]
    assert summary["judge"]["items"] > 0
    assert summary["judge"]["unscored"] == 0


def _count(db_path: Path, sql: str) -> int:
    import sqlite3

    con = sqlite3.connect(db_path, timeout=30)
    try:
        return int(con.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_resume_after_sigkill_repeats_no_call_and_duplicates_nothing(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"), "traces": [
            {"path": str(tau_subset(tmp_path, 40)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))
    db_path = tmp_path / "j.db"
    with FakeProviderServer(latency=0.15) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url,
               "JUDGE_DATABASE_URL": f"sqlite:///{db_path}"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "judge.cli.main", "run", str(suite), "--model",
             "openai:fake-judge", "--concurrency", "4", "--no-progress"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while _count(db_path, "SELECT count(*) FROM verdicts") < 10:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = _count_run(db_path)
        calls_before = _count(db_path, "SELECT count(*) FROM provider_calls")
        sent_before = srv.generation_count
        # What a SIGKILL may lose: each of the 4 grading workers holds its item until the
        # call it made is stored (judge.grading.writebehind.wait_stored), so at most one
        # request per worker reached the server without being stored: the one in flight or
        # waiting for its commit. The bound follows from the design, whatever the timing
        # (tests/test_writebehind.py checks it against a store 20x slower than the judge).
        assert sent_before - calls_before <= 4
        verdicts_before = _count(db_path, "SELECT count(*) FROM verdicts")
        assert verdicts_before >= 10
        done = subprocess.run(
            [sys.executable, "-m", "judge.cli.main", "run", "--resume", run_id,
             "--concurrency", "4", "--format", "json", "--no-progress"],
            env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        summary = json.loads(done.stdout)
        calls_after = _count(db_path, "SELECT count(*) FROM provider_calls")
        # every request of the resumed run was a new call: none repeated a stored result
        assert srv.generation_count - sent_before == calls_after - calls_before
    n_items = _count(db_path, "SELECT count(*) FROM items")
    assert summary["judge"]["items"] == n_items
    assert _count(db_path, "SELECT count(*) FROM verdicts") == n_items
    assert _count(db_path, "SELECT count(DISTINCT item_id) FROM verdicts") == n_items


def _count_run(db_path: Path) -> str:
    import sqlite3

    con = sqlite3.connect(db_path)
    try:
        return str(con.execute("SELECT run_id FROM runs").fetchone()[0])
    finally:
        con.close()


def test_report_run_renders_a_stored_run_and_rejects_an_unknown_one(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/*.json")]}])
    db = f"sqlite:///{tmp_path / 'j.db'}"
    _, out, _ = run_cli(suite, "--format", "json", "--db", db)
    run_id = json.loads(out)["run_id"]
    runner = CliRunner()
    md = runner.invoke(app, ["report", "run", run_id, "--format", "md", "--db", db])
    assert md.exit_code == 0
    assert "**Release gate: FAILED**" in md.stdout and "| refund-once | 1/3 |" in md.stdout
    html_out = tmp_path / "run.html"
    done = runner.invoke(app, ["report", "run", run_id, "--format", "html", "-o",
                               str(html_out), "--db", db])
    assert done.exit_code == 0 and "<h1>" in html_out.read_text()
    missing = runner.invoke(app, ["report", "run", "run-nope", "--db", db])
    assert missing.exit_code == 2
    assert missing.stderr.count("\n") == 1 and "run-nope" in missing.stderr


def test_ctrl_c_exits_130_and_the_run_resumes(tmp_path: Path) -> None:
    """SIGINT to the whole process group (what Ctrl-C does): one line, exit 130, the run is
    marked interrupted, no process of the run is left behind, and --resume finishes it."""
    suite = write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"), "traces": [
            {"path": str(tau_subset(tmp_path, 40)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))
    db_path = tmp_path / "j.db"
    with FakeProviderServer(latency=0.3) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url,
               "JUDGE_DATABASE_URL": f"sqlite:///{db_path}"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "judge.cli.main", "run", str(suite), "--model",
             "openai:fake-judge", "--concurrency", "4", "--no-progress"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while _count(db_path, "SELECT count(*) FROM verdicts") < 5:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert err.count("\n") == 1 and "judge run --resume" in err and "Traceback" not in err
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # the checking child is gone too
        run_id = _count_run(db_path)
        con = sqlite3.connect(db_path)
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
        con.close()
        done = subprocess.run(
            [sys.executable, "-m", "judge.cli.main", "run", "--resume", run_id,
             "--concurrency", "4", "--format", "json", "--no-progress"],
            env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert done.returncode in (0, 1), done.stderr
    n_items = _count(db_path, "SELECT count(*) FROM items")
    assert json.loads(done.stdout)["judge"]["items"] == n_items > 20
    assert _count(db_path, "SELECT count(DISTINCT item_id) FROM verdicts") == n_items
    assert _count(db_path, "SELECT count(*) FROM verdicts") == n_items
