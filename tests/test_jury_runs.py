"""Juries in `judge run`: the summary says who sat and how often they split, the run keeps
its jury (a resume goes on with it and refuses another), and distributed workers grade with
the jury stored on the run, not their own settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.grading.jury import Jury
from judge.pipeline.worker import RunProviders
from judge.providers.scripted import default_verdict, find_seq
from judge.settings import Settings
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import FakeRequest
from tests.test_suite_run import SCEN, write_suite

JURY = "openai:judge-a,openai:judge-b"
NAME = "jury[vote_share]:openai:judge-a+openai:judge-b"


def run_cli(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["run", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    """judge-b says fail on every item, everyone else pass."""
    def answer(req: FakeRequest) -> dict[str, Any] | None:
        if req.model != "judge-b":
            return None
        reply = default_verdict(req.schema, seq=find_seq(req.text), label="fail",
                                confidence=0.8)
        reply["violated_key"] = "refundOnce"
        return reply

    with FakeProviderServer(responder=answer) as srv:
        yield srv


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "s.yaml", [
        {"scenario": str(SCEN / "refund-once"), "traces": [str(SCEN / "refund-once/pass.json")]},
    ], rubrics=("scope_fidelity",))


def test_a_run_with_a_jury_reports_its_seats_and_splits(
        server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    summary = json.loads(out)
    judge = summary["judge"]
    n = judge["items"]
    assert n >= 1 and judge["model"] == NAME and judge["name"].startswith("jury of 2")
    assert judge["jury"]["jurors"] == ["openai:judge-a", "openai:judge-b"]
    assert judge["jury"]["splits"] == n == judge["review"]
    assert judge["provider_calls"] == 2 * n == server.generation_count
    with open_store("sqlite:///judge.db") as store:
        config = store.get_run(summary["run_id"])["config"]  # type: ignore[index]
        assert config["jury"]["name"] == NAME
        assert all(v.model == NAME and v.route_reason == "jury split"
                   for v in store.run_verdicts(summary["run_id"]))
    text_code, text, _ = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                                 "--no-progress")
    assert text_code == code and server.generation_count == 2 * n  # all from the cache
    assert f"jury {NAME}: {n} split verdict(s) sent to review" in text


def test_a_resume_goes_on_with_the_runs_jury_and_refuses_another(
        server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    run_id = json.loads(out)["run_id"]
    code, out, err = run_cli("--resume", run_id, "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    assert json.loads(out)["judge"]["jury"]["name"] == NAME  # the stored jury, not none
    code, _, err = run_cli("--resume", run_id, "--jury", "openai:judge-a,openai:judge-c",
                           "--base-url", server.openai_base_url, "--no-progress")
    assert code == 2 and "resume it with the same jury" in err and "Traceback" not in err


def test_distributed_run_grades_with_the_jury(server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                             "--distributed", "--format", "json", "--no-progress")
    assert code in (0, 1), err
    judge = json.loads(out)["judge"]
    assert judge["jury"]["splits"] == judge["items"] >= 1
    assert server.generation_count == 2 * judge["items"]


def test_workers_take_the_jury_stored_on_the_run_not_their_own(
        server: FakeProviderServer, tmp_path: Path) -> None:
    settings = Settings.load(environ={"OPENAI_BASE_URL": server.openai_base_url,
                                      "JUDGE_JURY": "openai:x,openai:y"})
    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store:
        with_jury = store.save_run(config={"model": "openai:judge-a", "params": {
            "temperature": 0.7, "seed": 0, "max_tokens": 1024}, "jury": {
            "name": "jury[mean]:openai:judge-a+openai:judge-b*3", "min_share": 0.6,
            "rubrics": ["scope_fidelity"]}})
        plain = store.save_run(config={"model": "openai:judge-a"})
        providers = RunProviders(store, settings)
        jury = providers.jury(with_jury)
        assert isinstance(jury, Jury)
        assert jury.spec.name == "jury[mean]:openai:judge-a+openai:judge-b*3"
        assert jury.spec.min_share == 0.6 and not jury.spec.applies("summary_fidelity")
        assert providers(with_jury) is jury.providers["openai:judge-a"]
        assert providers.jury(plain) is None and providers(plain).spec == "openai:judge-a"


def test_calibrate_fits_a_jury_on_its_vote_share_and_routing_finds_it(tmp_path: Path) -> None:
    """Three scripted jurors, each right with probability equal to its confidence (the
    calibration tests' rule judge, with its own draws): the record is the jury's, fitted on
    vote shares, and its agreement is the majority's."""
    import numpy as np
    from db_calibration_data import RUBRIC, airline_items, human, scripted_judge, seed_database

    from judge.calibration.lookup import find_calibration
    from judge.calibration.regrade import calibrate_rubric
    from judge.grading.jury import JurySpec
    from judge.pipeline.route import Router
    from judge.providers.scripted import ScriptedProvider

    url = f"sqlite:///{tmp_path / 'judge.db'}"
    seed_database(url)
    spec = JurySpec(tuple((f"scripted:j{i}", 1) for i in range(3)))
    jury = Jury(spec, {f"scripted:j{i}": ScriptedProvider(
        default=scripted_judge(f"salt-{i}"), spec=f"scripted:j{i}") for i in range(3)})
    with open_store(url) as store:
        run = calibrate_rubric(store, RUBRIC, jury.providers["scripted:j0"], Settings.load(),
                               jury=jury, write_file=False)
        rec = run.record
        assert rec.model == spec.name
        assert {v.confidence for v in run.verdicts if v.label != "unscored"} <= {2 / 3, 1.0}
        truth = {it.item_id: human(it) for it in airline_items()}
        majority = np.mean([v.label == truth[v.item_id] for v in run.verdicts])
        assert rec.metrics.agreement == pytest.approx(majority)
        assert run.stats.juror_verdicts == 3 * len(truth) == run.stats.provider_calls
        found = find_calibration(store, RUBRIC, run.verdicts[0].prompt_hash or "", spec.name)
        assert found is not None
        unanimous = next(v for v in run.verdicts if not v.metadata["jury"]["split"])
        routed = unanimous.model_copy(deep=True)
        Router(store).route([routed])
        assert routed.route_reason != "uncalibrated" and routed.calibrated_confidence is not None


def test_the_run_report_says_how_often_the_jury_split(
        server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    summary = json.loads(out)
    n = summary["judge"]["items"]
    for fmt, expected in (("html", f"A jury of 2 seats graded {n} of them; {n} split"),
                          ("md", f"jury {NAME}: {n} split verdict")):
        res = CliRunner().invoke(app, ["report", "run", summary["run_id"], "--format", fmt])
        assert res.exit_code == 0, res.stderr
        text = res.stdout.replace("\\", "")  # Markdown escapes
        assert expected in text, text[:2000]


@pytest.mark.parametrize("args, seats", [
    (["--jury", JURY], 2),
    (["--model", "openai:judge-a", "--samples", "3", "--temperature", "0.7"], 3),
])
def test_batch_mode_grades_a_jury_with_one_batch_per_seat(
        server: FakeProviderServer, suite: Path, args: list[str], seats: int) -> None:
    code, out, err = run_cli(suite, *args, "--batch", "--batch-poll", "0", "--base-url",
                             server.openai_base_url, "--format", "json", "--no-progress")
    assert code in (0, 1), err
    judge = json.loads(out)["judge"]
    n = judge["items"]
    assert n >= 1 and judge["jury"]["seats"] == seats and judge["unscored"] == 0
    assert server.count("chat") == 0  # every juror's verdict came from a batch
    assert server.count("batch_lines") == seats * n
    with open_store("sqlite:///judge.db") as store:
        run = store.get_run(json.loads(out)["run_id"])
        assert run is not None and len(run["config"]["batches"]) == seats
        verdicts = store.run_verdicts(run["run_id"])
    assert all(len(v.metadata["jury"]["jurors"]) == seats for v in verdicts)
    if seats == 2:  # judge-a pass, judge-b fail: every item split, over the batch API too
        assert all(v.route_reason == "jury split" for v in verdicts)


def test_batch_with_a_juror_that_has_no_batch_api_is_refused_before_a_run_starts(
        server: FakeProviderServer, suite: Path) -> None:
    code, _, err = run_cli(suite, "--jury", "openai:judge-a,heuristic", "--batch",
                           "--base-url", server.openai_base_url, "--no-progress")
    assert code == 2 and "'heuristic' has no batch API" in err
    assert len(err.strip().splitlines()) == 1 and server.generation_count == 0
    if Path("judge.db").exists():
        with open_store("sqlite:///judge.db") as store:
            assert store.list_runs() == []


def test_a_suite_manifest_can_name_a_jury_as_its_model(
        server: FakeProviderServer, suite: Path) -> None:
    import yaml

    doc = yaml.safe_load(suite.read_text())
    doc["model"] = "jury[mean]:openai:judge-a+openai:judge-b+openai:judge-c"
    suite.write_text(yaml.safe_dump(doc))
    code, out, err = run_cli(suite, "--base-url", server.openai_base_url, "--format", "json",
                             "--no-progress")
    assert code in (0, 1), err
    judge = json.loads(out)["judge"]
    assert judge["model"] == doc["model"] and judge["jury"]["seats"] == 3
    # two of three say pass: a split at min_share 1.0; confidence: the jurors' mean P(pass)
    with open_store("sqlite:///judge.db") as store:
        verdicts = store.run_verdicts(json.loads(out)["run_id"])
    assert verdicts and all(v.label == "pass" and v.route_reason == "jury split"
                            for v in verdicts)
    for v in verdicts:
        jurors = v.metadata["jury"]["jurors"]
        p_pass = [j["confidence"] if j["label"] == "pass" else 1 - j["confidence"]
                  for j in jurors]
        assert v.metadata["jury"]["confidence"] == "mean"
        assert v.confidence == pytest.approx(sum(p_pass) / 3)


# ------------------------------------------------------------------ resumes and workers
# (found by a hostile review: a resume or a worker used to grade a jury's samples at the
# worker's temperature 0, and a resume could switch a single-judge run to a jury half-way)

def _forget_one_verdict(db: Path, run_id: str) -> None:
    """As if the run had been killed before its last item was asked: its verdict and its
    calls are gone."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        (last, item) = conn.execute(
            "SELECT id, item_id FROM verdicts WHERE run_id = ? ORDER BY id DESC LIMIT 1",
            (run_id,)).fetchone()
        conn.execute("DELETE FROM verdicts WHERE id = ?", (last,))
        conn.execute("DELETE FROM provider_calls WHERE item_id = ?", (item,))
        conn.execute("DELETE FROM render_memo")
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_id,))


def test_a_resume_asks_with_the_runs_temperature_not_the_default(
        server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--model", "openai:judge-a", "--samples", "3",
                             "--temperature", "0.7", "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    run_id = json.loads(out)["run_id"]
    _forget_one_verdict(Path("judge.db"), run_id)
    sent = server.generation_count
    code, _, err = run_cli("--resume", run_id, "--base-url", server.openai_base_url,
                           "--no-progress")
    assert code in (0, 1), err
    again = server.generations()[sent:]
    assert len(again) == 3  # the forgotten item's three samples, asked as the run began
    assert all(r.body["temperature"] == 0.7 for r in again)
    for other in ("0.2", "0"):  # 0 is also the default: an explicit 0 is still refused
        code, _, err = run_cli("--resume", run_id, "--temperature", other, "--base-url",
                               server.openai_base_url, "--no-progress")
        assert code == 2 and "temperature 0.7" in err, err


def test_a_single_judge_run_cannot_be_resumed_with_a_jury(
        server: FakeProviderServer, suite: Path) -> None:
    code, out, err = run_cli(suite, "--model", "openai:judge-a", "--base-url",
                             server.openai_base_url, "--format", "json", "--no-progress")
    assert code in (0, 1), err
    run_id = json.loads(out)["run_id"]
    _forget_one_verdict(Path("judge.db"), run_id)
    sent = server.generation_count
    for extra in (["--jury", JURY], ["--model", "jury[vote_share]:openai:a+openai:b"]):
        code, _, err = run_cli("--resume", run_id, *extra, "--base-url",
                               server.openai_base_url, "--no-progress")
        assert code == 2 and "graded by a single judge" in err, err
    assert server.generation_count == sent


def test_a_worker_grades_samples_at_the_runs_temperature(
        server: FakeProviderServer, suite: Path) -> None:
    from judge.pipeline.worker import work_loop

    settings = Settings.load(environ={"OPENAI_BASE_URL": server.openai_base_url,
                                      "OPENAI_API_KEY": "x"})  # the worker's own: T = 0
    with open_store("sqlite:///judge.db") as store:
        run_id = store.save_run(config={"model": "openai:judge-a",
                                        "params": {"temperature": 0.8, "seed": 5,
                                                   "max_tokens": 1024},
                                        "jury": {"name": "jury[vote_share]:openai:judge-a*3"}})
        from judge.ledger import load_scenario
        from judge.pipeline import Checker, Source
        from judge.trace import iter_traces

        loaded = load_scenario(SCEN / "refund-once")
        checked = Checker([Source(loaded, iter_traces(SCEN / "refund-once" / "pass.json", []),
                                  ["scope_fidelity"])], store).run()
        store.work.enqueue(run_id, [(it.item_id, it.rubric, False) for it in checked.items])
        work_loop(store, RunProviders(store, settings), settings, run_id=run_id,
                  stop_when_run_done=True, idle_exit_s=5)
        verdicts = store.run_verdicts(run_id)
    assert len(verdicts) == len(checked.items) >= 1
    asked = server.generations()
    assert len(asked) == 3 * len(verdicts)
    assert {r.body["temperature"] for r in asked} == {0.8}
    assert sorted({r.body["seed"] for r in asked}) == [5, 6, 7]


def test_a_worker_that_cannot_grade_a_run_gives_its_leases_back(tmp_path: Path) -> None:
    from judge.errors import ConfigError
    from judge.pipeline.worker import work_loop

    settings = Settings.load(environ={})
    with open_store(f"sqlite:///{tmp_path / 'w.db'}") as store:
        run_id = store.save_run(config={"model": "nonsense:model"})
        store.work.enqueue(run_id, [(f"t/{i}#1:scope_fidelity", "scope_fidelity", False)
                                    for i in range(3)])
        with pytest.raises(ConfigError, match="unknown model spec"):
            work_loop(store, RunProviders(store, settings), settings, run_id=run_id,
                      idle_exit_s=1)
        assert store.work.claim("another", 10, run_id=run_id) != []  # free at once


def test_an_internal_error_while_traces_are_checked_is_one_line(tmp_path: Path) -> None:
    """An error out of the grading loop used to leave the checker's trace stream open; the
    loop's shutdown then printed an 18-line asyncio traceback before the one-line error."""
    import subprocess
    import sys

    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\n"
        "import judge.pipeline.grade as g\n"
        "class Boom:\n"
        "    def __init__(self, *a, **k):\n"
        "        raise TypeError('simulated internal error')\n"
        "g.JuryGrader = Boom\n"
        "from judge.cli.main import main\n"
        "sys.argv = ['judge', *sys.argv[1:]]\n"
        "main()\n")
    traces = [str(p) for p in sorted((SCEN / "refund-once").glob("*.json"))] * 20
    done = subprocess.run(
        [sys.executable, str(script), "grade", str(SCEN / "refund-once"), *traces, "--model",
         "jury[vote_share]:heuristic+scripted", "--db", f"sqlite:///{tmp_path / 'b.db'}"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "judge: error: internal error: TypeError: simulated internal error (run with --debug "
        "for the traceback)"]


def test_calibrate_check_looks_for_the_jurys_record(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_JURY", "openai:judge-a,openai:judge-b")
    res = CliRunner().invoke(app, ["calibrate", "check", "--records", str(tmp_path / "none"),
                                   "--db", f"sqlite:///{tmp_path / 'c.db'}"])
    assert res.exit_code == 1, res.stderr  # no record anywhere: every rubric is stale
    assert "scope_fidelity: no calibration for prompt v3" in res.stdout
    assert all(line.endswith(f"with model {NAME}") for line in res.stdout.splitlines())
    # a jury of some rubrics: each rubric is checked against the model that grades it
    monkeypatch.setenv("JUDGE_JURY_RUBRICS", "scope_fidelity")
    res = CliRunner().invoke(app, ["calibrate", "check", "--records", str(tmp_path / "none"),
                                   "--db", f"sqlite:///{tmp_path / 'c.db'}"])
    assert res.exit_code == 1, res.stderr
    lines = res.stdout.splitlines()
    assert next(x for x in lines if x.startswith("stale: scope_fidelity")).endswith(NAME)
    assert next(x for x in lines if x.startswith("stale: summary_fidelity")).endswith(
        "with model heuristic")
    monkeypatch.setenv("JUDGE_JURY_RUBRICS", "scope_fidelty")  # a typo is refused
    res = CliRunner().invoke(app, ["calibrate", "check", "--records", str(tmp_path / "none"),
                                   "--db", f"sqlite:///{tmp_path / 'c.db'}"])
    assert res.exit_code == 2 and "'scope_fidelty' has no prompt" in res.stderr


def test_a_worker_leaves_a_run_it_cannot_grade_and_grades_the_others(
        server: FakeProviderServer, tmp_path: Path) -> None:
    from judge.pipeline.worker import work_loop

    settings = Settings.load(environ={"OPENAI_BASE_URL": server.openai_base_url,
                                      "OPENAI_API_KEY": "x"})
    problems: list[str] = []
    with open_store(f"sqlite:///{tmp_path / 'w.db'}") as store:
        from judge.ledger import load_scenario
        from judge.pipeline import Checker, Source
        from judge.trace import iter_traces

        loaded = load_scenario(SCEN / "refund-once")
        items = Checker([Source(loaded, iter_traces(SCEN / "refund-once" / "pass.json", []),
                                ["scope_fidelity"])], store).run().items
        bad = store.save_run(config={"model": "nonsense:model"})
        good = store.save_run(config={"model": "openai:judge-a"})
        for run in (bad, good):
            store.work.enqueue(run, [(it.item_id, it.rubric, False) for it in items])
        work_loop(store, RunProviders(store, settings), settings, idle_exit_s=0.5,
                  poll_s=0.05, on_problem=problems.append)
        assert len(store.run_verdicts(good)) == len(items) >= 1  # graded all the same
        assert store.run_verdicts(bad) == []
        assert store.work.outstanding(bad) == len(items)  # queued, not held by a lease
        assert len(store.work.claim("another", 100, run_id=bad)) == len(items)
    assert len(problems) == 1 and problems[0].startswith(f"run {bad}: unknown model spec")


def test_a_jurys_batches_are_all_submitted_before_any_is_waited_on(suite: Path) -> None:
    """Real batches take hours: a jury's seats wait side by side. The server here keeps
    every batch in progress; the run must have stored both seats' batch ids meanwhile."""
    import subprocess
    import sys
    import time

    with FakeProviderServer(batch_polls=10**6) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "judge.cli.main", "run", str(suite), "--jury", JURY,
             "--batch", "--batch-poll", "0.05", "--base-url", srv.openai_base_url,
             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            batches: dict[str, str] = {}
            while time.monotonic() < deadline and len(batches) < 2:
                time.sleep(0.2)
                if Path("judge.db").exists():
                    with open_store("sqlite:///judge.db") as store:
                        runs = store.list_runs()
                        if runs:
                            config = (store.get_run(runs[0]["run_id"]) or {})["config"]
                            batches = dict(config.get("batches") or {})
            assert proc.poll() is None  # still waiting on the batches
            assert sorted(batches) == ["scope_fidelity:openai:judge-a",
                                       "scope_fidelity:openai:judge-b"]
        finally:
            proc.kill()
            proc.communicate()


def test_batch_does_not_ask_a_batch_api_of_a_judge_that_grades_nothing(
        server: FakeProviderServer, suite: Path) -> None:
    # the jury grades every rubric: the heuristic single judge is never batched
    code, out, err = run_cli(suite, "--model", "heuristic", "--jury", JURY, "--batch",
                             "--batch-poll", "0", "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    assert json.loads(out)["judge"]["jury"]["splits"] >= 1 and server.count("chat") == 0


def test_a_resumed_batch_the_provider_lost_is_submitted_again(
        server: FakeProviderServer, tmp_path: Path) -> None:
    """A stored batch id the provider answers 404 for (expired, deleted) used to make the
    run unresumable: every resume failed polling it."""
    import asyncio

    from judge.ledger import load_scenario
    from judge.pipeline import Checker, Source
    from judge.pipeline.batch import prefill_by_batch
    from judge.prompts import load_prompt
    from judge.providers.registry import make_provider
    from judge.trace import iter_traces

    settings = Settings.load(environ={"OPENAI_BASE_URL": server.openai_base_url,
                                      "OPENAI_API_KEY": "x"})
    with open_store(f"sqlite:///{tmp_path / 'b.db'}") as store:
        loaded = load_scenario(SCEN / "refund-once")
        items = Checker([Source(loaded, iter_traces(SCEN / "refund-once" / "pass.json", []),
                                ["scope_fidelity"])], store).run().items
        run_id = store.save_run(config={"model": "openai:judge-a"})
        store.save_batch_id(run_id, "scope_fidelity", "batch_that_was_never_there")
        provider = make_provider("openai:judge-a", settings)
        seen: list[str] = []
        got = asyncio.run(prefill_by_batch(
            store, run_id, "scope_fidelity", load_prompt("scope_fidelity"), items, provider,
            settings.model_params(), poll_base_delay=0, on_status=seen.append))
        assert got == {"submitted": len(items), "succeeded": len(items), "failed": 0}
        assert any("is gone at the provider (HTTP 404)" in s for s in seen)
        assert store.batch_ids(run_id)["scope_fidelity"] != "batch_that_was_never_there"


def test_a_jury_run_resumed_with_another_model_is_refused(
        server: FakeProviderServer, suite: Path) -> None:
    """Issue 21: `--model` was silently ignored on a jury resume (the stored jury graded on,
    the given model graded nothing). An explicit model that is not the run's is refused;
    the run's own model, or none, resumes."""
    code, out, err = run_cli(suite, "--jury", JURY, "--base-url", server.openai_base_url,
                             "--format", "json", "--no-progress")
    assert code in (0, 1), err
    run_id = json.loads(out)["run_id"]
    _forget_one_verdict(Path("judge.db"), run_id)
    sent = server.generation_count
    code, _, err = run_cli("--resume", run_id, "--model", "openai:judge-c", "--base-url",
                           server.openai_base_url, "--no-progress")
    assert code == 2 and f"was graded by {NAME}" in err, err
    assert server.generation_count == sent  # refused before any call
    code, _, err = run_cli("--resume", run_id, "--base-url", server.openai_base_url,
                           "--no-progress")
    assert code in (0, 1), err
    assert server.generation_count == sent + 2  # the forgotten item, by both jurors


@pytest.mark.parametrize("given", ["", ",,,", " , "])
def test_a_jury_option_naming_no_model_is_refused(server: FakeProviderServer, suite: Path,
                                                  given: str) -> None:
    """`--jury ''` graded with one judge and exit 0: the opposite of what was asked."""
    code, _, err = run_cli(suite, "--jury", given, "--base-url", server.openai_base_url,
                           "--no-progress")
    assert code == 2 and "names no model" in err, err
    assert server.generation_count == 0
