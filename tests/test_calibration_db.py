"""`judge calibrate fit` on the database: re-grading through the call cache, records in files and
the database, routing from committed records, `check` with database label counts, and
`compare` of two prompt versions' stored verdicts."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from db_calibration_data import (
    RUBRIC,
    T0,
    airline_items,
    human,
    judge_answer,
    label_for,
    scripted_judge,
    seed_database,
)
from typer.testing import CliRunner

from judge.calibration import TooFewLabelsError, build_record, load_records
from judge.calibration.files import file_record
from judge.calibration.lookup import find_calibration
from judge.calibration.regrade import calibrate_rubric, calibration_run_id
from judge.cli.main import app
from judge.formats import Verdict
from judge.pipeline.route import route_and_save
from judge.prompts import load_prompt
from judge.prompts.files import BUILTIN_PROMPTS_DIR
from judge.providers.scripted import ScriptedProvider
from judge.routing import RoutingPolicy
from judge.settings import Settings
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer

REPO_PROMPTS = BUILTIN_PROMPTS_DIR


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    seed_database(url)
    return url


@pytest.fixture()
def any_db(store_url: str) -> str:
    """SQLite and a throwaway PostgreSQL server (conftest_store), seeded the same way."""
    seed_database(store_url)
    return store_url


def _calibrate(url: str, provider: ScriptedProvider, **kw: object):  # type: ignore[no-untyped-def]
    with open_store(url) as store:
        return calibrate_rubric(store, RUBRIC, provider, Settings.load(), **kw)  # type: ignore[arg-type]


def test_calibrate_regrades_labelled_items_writes_and_stores_record(any_db: str,
                                                                  tmp_path: Path) -> None:
    db = any_db
    provider = ScriptedProvider(default=scripted_judge(), spec="scripted")
    result = _calibrate(db, provider)
    items = airline_items()
    assert len(provider.requests) == len(items) == result.stats.provider_calls
    rec = result.record
    prompt = load_prompt(RUBRIC)
    assert (rec.rubric, rec.prompt_version, rec.prompt_hash, rec.model) == (
        RUBRIC, prompt.version, prompt.hash, "scripted")
    fails = sum(human(it) == "fail" for it in items)
    assert rec.n == rec.n_labelled == len(items)
    assert rec.n_per_class == {"pass": len(items) - fails, "fail": fails}
    # the agreement the record measured is the scripted judge's, item by item
    expected = np.mean([judge_answer(it)["label"] == human(it) for it in items])
    assert rec.metrics.agreement == pytest.approx(expected)
    assert rec.threshold is not None and 0 < rec.expected_review_share < 1
    # the file under ./calibration and the database hold the same record
    assert result.path == Path("calibration") / RUBRIC / f"{prompt.version}__scripted.json"
    (on_disk,) = load_records(tmp_path / "calibration")
    with open_store(db) as store:
        stored = find_calibration(store, RUBRIC, prompt.hash, "scripted")
        kept = store.verdicts_for(RUBRIC, prompt.version, "scripted",
                                  run_id=calibration_run_id(RUBRIC, prompt.version, "scripted"))
    assert on_disk == rec and stored is not None and stored.threshold == rec.threshold
    assert len(kept) == len(items) and all(v.route is None for v in kept)


def test_second_calibrate_makes_zero_provider_calls(any_db: str) -> None:
    db = any_db
    first = _calibrate(db, ScriptedProvider(default=scripted_judge(), spec="scripted"))
    again = ScriptedProvider(default=None, spec="scripted")  # any call would fail the item
    second = _calibrate(db, again)
    assert again.requests == [] and second.stats.provider_calls == 0
    assert second.stats.cache_hits == len(airline_items()) and second.stats.unscored == 0
    assert second.record.threshold == first.record.threshold
    assert second.record.label_set_hash == first.record.label_set_hash


def test_too_few_labels_refused_before_any_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    items = airline_items()
    fails = [it for it in items if human(it) == "fail"][:24]
    passes = [it for it in items if human(it) == "pass"][:100]
    seed_database(url, items=tuple(passes + fails))
    provider = ScriptedProvider(default=scripted_judge(), spec="scripted")
    with pytest.raises(TooFewLabelsError) as err:
        _calibrate(url, provider)
    assert "24 human-fail (need 6 more)" in err.value.message
    assert provider.requests == []
    code, out, errtext = run("calibrate", "fit", "--rubric", RUBRIC, "--model", "scripted",
                             "--db", url)
    assert code == 2 and out == "" and len(errtext.strip().splitlines()) == 1
    assert "need 6 more" in errtext and not Path("calibration").exists()


def test_cli_database_mode_prints_record_and_caches(db: str, tmp_path: Path) -> None:
    code, out, err = run("calibrate", "fit", "--rubric", RUBRIC, "--model", "scripted", "--db", db,
                         "-o", str(tmp_path / "records"), "--target", "0.9")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["rubric"] == RUBRIC and rec["model"] == "scripted" and rec["target"] == 0.9
    assert rec["n"] == len(airline_items())
    assert f"{len(airline_items())} provider calls" in err
    assert (tmp_path / "records" / RUBRIC / f"{rec['prompt_version']}__scripted.json").is_file()
    code, out2, err2 = run("calibrate", "fit", "--rubric", RUBRIC, "--model", "scripted",
                           "--db", db, "--format", "text", "--target", "0.9")
    assert code == 0 and "0 provider calls" in err2 and "threshold" in out2
    assert Path("calibration", RUBRIC, f"{rec['prompt_version']}__scripted.json").is_file()
    code, _, err3 = run("calibrate", "fit", "--rubric", "no_such_rubric", "--db", db)
    assert code == 2 and "unknown rubric" in err3


def test_cli_through_fake_server_second_run_reaches_no_server(db: str) -> None:
    with FakeProviderServer() as srv:
        args = ("calibrate", "fit", "--rubric", RUBRIC, "--model", "openai:fake-judge",
                "--base-url", srv.openai_base_url, "--db", db, "--min-per-class", "30")
        code, out, err = run(*args)
        assert code == 0, err
        n = srv.generation_count
        assert n == len(airline_items())
        code, _, err2 = run(*args)
        assert code == 0, err2
        assert srv.generation_count == n and "0 provider calls" in err2
    assert json.loads(out)["model"] == "openai:fake-judge"


# -- routing reads records committed to git --------------------------------------------------
def _record(model: str = "scripted", prompt_hash: str | None = None):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    conf = 1.0 - 0.5 * rng.uniform(size=1000) ** 3
    agreed = rng.uniform(size=1000) < conf
    human_fail = rng.uniform(size=1000) < 0.4
    return build_record(conf, agreed, human_fail, rubric=RUBRIC, prompt_version="v1",
                        prompt_hash=prompt_hash or load_prompt(RUBRIC).hash, model=model,
                        label_set_hash="sha256:x", target=0.9)


def _verdicts(conf: float, model: str = "scripted") -> list[Verdict]:
    prompt = load_prompt(RUBRIC)
    return [Verdict(item_id=it.item_id, label="pass", evidence_event=it.seq, confidence=conf,
                    rubric=RUBRIC, prompt_version=prompt.version, prompt_hash=prompt.hash,
                    model=model) for it in airline_items()[:20]]


def test_routing_uses_committed_record_when_database_has_none(tmp_path: Path) -> None:
    rec = _record()
    assert rec.threshold is not None and rec.calibrate(0.99) >= rec.threshold
    assert rec.calibrate(0.5) < rec.threshold
    rec.save(tmp_path / "calibration")  # ./calibration, as committed with the code
    policy = RoutingPolicy(audit_share=0.0)
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as store:
        assert store.calibrations() == []
        high = route_and_save(store, _verdicts(0.99), "run-1", policy=policy)
        low = route_and_save(store, _verdicts(0.5), "run-2", policy=policy)
        other = route_and_save(store, _verdicts(0.99, model="heuristic"), "run-3",
                               policy=policy)
    assert {(v.route, v.route_reason) for v in high} == {
        ("auto_accept", "calibrated confidence at or above threshold")}
    assert all(v.calibrated_confidence == pytest.approx(rec.calibrate(0.99)) for v in high)
    assert {(v.route, v.route_reason) for v in low} == {("review", "low confidence")}
    assert {(v.route, v.route_reason) for v in other} == {("review", "uncalibrated")}


def test_missing_record_routes_uncalibrated_and_env_dir_overrides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = RoutingPolicy(audit_share=0.0)
    elsewhere = tmp_path / "elsewhere"
    _record().save(elsewhere)
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as store:
        routed = route_and_save(store, _verdicts(0.99), "run-1", policy=policy)
        assert {(v.route, v.route_reason) for v in routed} == {("review", "uncalibrated")}
        monkeypatch.setenv("JUDGE_CALIBRATION_DIR", str(elsewhere))
        routed = route_and_save(store, _verdicts(0.99), "run-2", policy=policy)
        assert {v.route for v in routed} == {"auto_accept"}
        # a record for another prompt hash does not calibrate this prompt
        shutil.rmtree(elsewhere)
        _record(prompt_hash="sha256:other").save(elsewhere)
        routed = route_and_save(store, _verdicts(0.99), "run-3", policy=policy)
        assert {v.route_reason for v in routed} == {"uncalibrated"}


def test_database_record_wins_over_file(tmp_path: Path) -> None:
    file_rec = _record()
    file_rec.save(tmp_path / "calibration")
    db_rec = file_rec.model_copy(update={"threshold": None})  # every verdict to review
    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as store:
        store.save_calibration(db_rec)
        routed = route_and_save(store, _verdicts(0.99), "run-1",
                                policy=RoutingPolicy(audit_share=0.0))
    assert {v.route_reason for v in routed} == {"low confidence"}
    found = file_record(RUBRIC, file_rec.prompt_hash, "scripted")
    assert found is not None and found.threshold == file_rec.threshold


def test_corrupt_committed_record_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = _record().save(tmp_path / "calibration")
    path.write_text("{not json", encoding="utf-8")
    from judge.errors import InputError

    with open_store(f"sqlite:///{tmp_path / 'judge.db'}") as store, \
            pytest.raises(InputError) as err:
        find_calibration(store, RUBRIC, load_prompt(RUBRIC).hash, "scripted")
    assert str(path.name) in err.value.message or str(path) in str(err.value)


# -- --check with the database's label counts ------------------------------------------------
def test_check_counts_database_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO_PROMPTS / RUBRIC, prompts / RUBRIC)
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(prompts))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    items = airline_items()
    seed_database(url, n_labelled=200)
    check = ("calibrate", "check", "--model", "scripted", "--db", url)
    code, out, _ = run(*check)
    assert code == 1 and "no calibration for prompt" in out
    _calibrate(url, ScriptedProvider(default=scripted_judge(), spec="scripted"))
    code, out, err = run(*check)
    assert code == 0, out + err
    # the record in the database alone is enough (no files)
    shutil.rmtree("calibration")
    code, out, _ = run(*check)
    assert code == 0, out
    # 30 more labels (+15%) is within the share; 60 (+30%) is past it
    with open_store(url) as store:
        store.add_labels([label_for(it, at=T0 + timedelta(days=1)) for it in items[200:230]])
    assert run(*check)[0] == 0
    with open_store(url) as store:
        store.add_labels([label_for(it, at=T0 + timedelta(days=1)) for it in items[230:260]])
    code, out, _ = run(*check)
    assert code == 1 and "labels grew from 200 to 260" in out
    # without a database file there is nothing to count and no stored record
    code, out, _ = run("calibrate", "check", "--model", "scripted",
                       "--db", f"sqlite:///{tmp_path / 'none.db'}")
    assert code == 1 and "no calibration" in out and not (tmp_path / "none.db").exists()


# -- --compare OLD NEW on the database -------------------------------------------------------
def _store_version(url: str, version: str, salt: str) -> list[Verdict]:
    out = []
    for it in airline_items():
        ans = judge_answer(it, salt)
        out.append(Verdict(item_id=it.item_id, rubric=RUBRIC, prompt_version=version,
                           prompt_hash=f"sha256:{version}", model="scripted",
                           **ans))  # type: ignore[arg-type]
    with open_store(url) as store:
        store.save_verdicts(out, f"run-{version}")
    return out


def test_compare_two_prompt_versions_from_database(db: str) -> None:
    old = _store_version(db, "v1", "agree")
    new = _store_version(db, "v2", "second")
    flips = {o.item_id: (o, n) for o, n in zip(old, new, strict=True) if o.label != n.label}
    truth = {it.item_id: human(it) for it in airline_items()}
    fixed = sum(truth[i] == n.label for i, (_, n) in flips.items())
    code, out, err = run("calibrate", "compare", "v1", "v2", "--rubric", RUBRIC, "--db", db)
    assert code == 0, err
    result = json.loads(out)
    assert result["old"]["prompt_version"] == "v1" and result["new"]["prompt_version"] == "v2"
    assert result["n_common"] == len(airline_items())
    assert result["n_flipped"] == len(flips) > 0
    assert result["n_fixed"] == fixed and result["n_broke"] == len(flips) - fixed
    for f in result["flipped"]:
        o, n = flips[f["item_id"]]
        assert f["old"]["label"] == o.label and f["new"]["label"] == n.label
        assert f["new"]["evidence_event"] == n.evidence_event
        assert f["human"] == truth[f["item_id"]]
    old_acc = np.mean([truth[v.item_id] == v.label for v in old])
    assert result["old"]["accuracy"] == pytest.approx(old_acc)
    code, text, _ = run("calibrate", "compare", "v1", "v2", "--rubric", RUBRIC, "--db", db,
                        "--format", "text")
    assert code == 0 and f"flipped {len(flips)} of {len(old)}" in text
    code, _, err = run("calibrate", "compare", "v1", "v9", "--rubric", RUBRIC, "--db", db)
    assert code == 2 and "prompt version 'v9'" in err and len(err.strip().splitlines()) == 1


def test_prompt_change_makes_check_stale_and_recalibration_compares(
        db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO_PROMPTS / RUBRIC, prompts / RUBRIC)
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(prompts))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    v1 = load_prompt(RUBRIC)
    first = _calibrate(db, ScriptedProvider(default=scripted_judge(), spec="scripted"))
    check = ("calibrate", "check", "--rubric", RUBRIC, "--model", "scripted", "--db", db)
    assert run(*check)[0] == 0
    text = (prompts / RUBRIC / f"{v1.version}.md").read_text(encoding="utf-8")
    new_version = "v99"
    (prompts / RUBRIC / f"{new_version}.md").write_text(
        text.replace(f"version: {v1.version}", f"version: {new_version}")
        .replace("You are a careful reviewer", "You are a very careful reviewer"),
        encoding="utf-8")
    v2 = load_prompt(RUBRIC)
    assert v2.version == new_version and v2.hash != v1.hash
    code, out, _ = run(*check)
    assert code == 1 and f"no calibration for prompt {new_version}" in out
    assert f"records exist for prompt {v1.version}" in out
    # the new prompt is new work for the judge: every item is graded again, once
    provider = ScriptedProvider(default=scripted_judge("second"), spec="scripted")
    second = _calibrate(db, provider)
    assert len(provider.requests) == len(airline_items())
    assert second.record.prompt_version == new_version
    assert second.record.prompt_hash == v2.hash != first.record.prompt_hash
    assert run(*check)[0] == 0
    code, out, err = run("calibrate", "compare", v1.version, new_version, "--rubric", RUBRIC,
                         "--db", db)
    assert code == 0, err
    result = json.loads(out)
    flips = sum(judge_answer(it)["label"] != judge_answer(it, "second")["label"]
                for it in airline_items())
    assert result["n_common"] == len(airline_items()) and result["n_flipped"] == flips


def test_progress_bar_option_does_not_disturb_output(db: str) -> None:
    code, out, err = run("calibrate", "fit", "--rubric", RUBRIC, "--model", "scripted", "--db", db,
                         "--progress")
    assert code == 0, err
    assert json.loads(out)["n"] == len(airline_items())


def test_labels_on_items_not_stored_are_left_out_and_counted(db: str) -> None:
    from judge.formats import HumanLabel

    ghost = f"ghost/0#3:{RUBRIC}"
    with open_store(db) as store:
        store.add_labels([HumanLabel(item_id=ghost, label="fail", violated_key="x",
                                     evidence_event=3, annotator="asha", created_at=T0)])
        assert set(store.get_items([ghost, airline_items()[0].item_id])) == {
            airline_items()[0].item_id}
    result = _calibrate(db, ScriptedProvider(default=scripted_judge(), spec="scripted"))
    assert result.n_missing_items == 1 and result.record.n == len(airline_items())
    assert result.record.n_labelled == len(airline_items()) + 1
    code, _, err = run("calibrate", "fit", "--rubric", RUBRIC, "--model", "scripted", "--db", db)
    assert code == 0 and "1 labelled item(s) of scope_fidelity are not stored" in err


def test_old_database_forms_still_run(db: str) -> None:
    code, out, err = run("calibrate", "--rubric", RUBRIC, "--model", "scripted", "--db", db)
    assert code == 0 and json.loads(out)["n"] == len(airline_items())
    assert "running 'judge calibrate fit --rubric" in err.splitlines()[0]
    _store_version(db, "v1", "agree")
    _store_version(db, "v2", "second")
    code, out, err = run("calibrate", "--compare", "v1", "v2", "--rubric", RUBRIC, "--db", db)
    assert code == 0 and "running 'judge calibrate compare v1 v2" in err
    assert out == run("calibrate", "compare", "v1", "v2", "--rubric", RUBRIC, "--db", db)[1]
