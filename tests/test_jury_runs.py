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
        with_jury = store.save_run(config={"model": "openai:judge-a", "jury": {
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


def test_batch_with_a_jury_is_refused_before_a_run_is_started(
        server: FakeProviderServer, suite: Path) -> None:
    code, _, err = run_cli(suite, "--jury", JURY, "--batch", "--base-url",
                           server.openai_base_url, "--no-progress")
    assert code == 2 and "--batch cannot grade with a jury" in err
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
