"""`judge align` end to end: the real openai SDK against the fake server, whose judge errs on
what its prompt does not mention (tests/align_sim.py), over the tau-bench airline items and
their gold-action labels.

What it must show (issue 23): a new version file (new hash, the parent untouched) and a
report with both versions' held-out agreement, the flipped items and the probe rates; no
held-out item's text in the new prompt; `--accept` refusing when the gain's interval
includes 0; `calibrate check` flagging an accepted version until `calibrate fit` runs. And:
the split is leak-free, examples come only from train items, the report's numbers equal a
direct computation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from align_sim import SimJudge, seed_database, target_text, world
from sklearn.metrics import accuracy_score, cohen_kappa_score
from typer.testing import CliRunner

from judge.align.examples import template_safe
from judge.cli.main import app
from judge.prompts import load_prompt
from judge.prompts.files import BUILTIN_PROMPTS_DIR
from judge.reports.run import prompt_states
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer

MODEL = "openai:sim-judge"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database with every airline item and its gold label (copied per test)."""
    path = tmp_path_factory.mktemp("align") / "seed.db"
    seed_database(f"sqlite:///{path}")
    return path


@pytest.fixture
def db(seeded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    target = tmp_path / "judge.db"
    target.write_bytes(seeded.read_bytes())
    url = f"sqlite:///{target}"
    monkeypatch.setenv("JUDGE_DATABASE_URL", url)
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    monkeypatch.setenv("JUDGE_CALIBRATION_DIR", str(tmp_path / "calibration"))
    monkeypatch.setenv("JUDGE_CONCURRENCY", "4")
    return url


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeProviderServer, SimJudge]]:
    judge = SimJudge()
    with FakeProviderServer(responder=judge) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv, judge


def align(*extra: str) -> tuple[int, dict, str]:
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", MODEL,
                         "--budget", "8000", "--format", "json", *extra)
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def texts_of(item_id: str) -> list[str]:
    """Text of an item that no other task's item shows: its target block as rendered, and
    the longer user messages of its slice that occur in one task only."""
    traces, items, _ = world()
    item = next(it for it in items if it.item_id == item_id)
    tasks: dict[str, set[str]] = {}
    for t in traces:
        for e in t.events:
            if e.kind == "user":
                tasks.setdefault(e.text, set()).add(str(t.metadata["task_id"]))
    own = [str(e["text"]) for e in item.events if e.get("kind") == "user"
           and len(str(e.get("text"))) > 40 and len(tasks.get(str(e["text"]), ())) == 1]
    return [target_text(item), *own]


def test_align_accepts_a_better_prompt_and_calibration_goes_stale(
        db: str, sim: tuple[FakeProviderServer, SimJudge], tmp_path: Path) -> None:
    parent_file = BUILTIN_PROMPTS_DIR / "scope_fidelity" / "v3.md"
    parent_bytes = parent_file.read_bytes()
    parent = load_prompt("scope_fidelity")
    code, report, err = align("--accept")
    assert code == 0, err
    cand = report["candidate"]
    assert cand["version"] == "v4" and cand["written"] and cand["status"] == "accepted"
    path = Path(cand["path"])
    assert path == tmp_path / "prompts" / "scope_fidelity" / "v4.md"
    assert parent_file.read_bytes() == parent_bytes  # the parent untouched
    assert cand["hash"] != parent.hash and report["parent"]["hash"] == parent.hash
    new = load_prompt("scope_fidelity")  # the default now
    assert new.version == "v4" and new.hash == cand["hash"] and not new.is_draft

    # the split: leak-free, recorded in the front matter
    split = report["split"]
    record = new.aligned
    assert record is not None and record["parent"] == "v3" and record["parent_hash"] == parent.hash
    assert record["split"]["seed"] == 0 and record["method"] == "fewshot"
    train = set(record["train_items"])
    _, items, rows = world()
    labelled = {r["item_id"] for r in rows}
    held = labelled - train
    assert split["train"]["n"] == len(train) and split["held_out"]["n"] == len(held)
    task = {it.item_id: it.trace_id.split("/")[1] for it in items}
    assert not {task[i] for i in train} & {task[i] for i in held}  # no task on both sides

    # examples only from train disagreements; no held-out item's text in the new prompt
    text = path.read_text(encoding="utf-8")
    examples = [e["item_id"] for e in report["proposal"]["examples"]]
    assert examples and set(examples) <= train and record["examples"] == examples
    for item_id in held:
        assert item_id not in text
        for s in texts_of(item_id):
            assert s not in text and template_safe(s) not in text, (item_id, s)
    for item_id in examples:
        assert template_safe(texts_of(item_id)[0]) in text

    # the report's numbers equal a direct computation on the stored held-out verdicts
    refs = {r["item_id"]: r["label"] for r in rows}
    with open_store(db) as store:
        run_id = report["run_id"]
        cand_v = {v.item_id: v for v in store.run_verdicts(run_id)}
        par_v = {v.item_id: v for v in store.run_verdicts(f"{run_id}/parent")}
    assert set(cand_v) == set(par_v) == held
    for side, verdicts in (("parent", par_v), ("candidate", cand_v)):
        scored = sorted(i for i, v in verdicts.items() if v.label != "unscored")
        y = [refs[i] for i in scored]
        p = [verdicts[i].label for i in scored]
        figures = report["held_out"][side]
        assert figures["accuracy"] == pytest.approx(accuracy_score(y, p))
        assert figures["cohen_kappa"] == pytest.approx(cohen_kappa_score(y, p))
    both = sorted(i for i in held if "unscored" not in (par_v[i].label, cand_v[i].label))
    fixed = sum(cand_v[i].label == refs[i] != par_v[i].label for i in both)
    broke = sum(par_v[i].label == refs[i] != cand_v[i].label for i in both)
    gain = report["held_out"]["gain"]
    assert (gain["fixed"], gain["broke"], gain["n"]) == (fixed, broke, len(both))
    assert gain["estimate"] == pytest.approx((fixed - broke) / len(both), abs=1e-6)
    assert gain["ci"][0] > 0 and fixed > 0
    flipped = {f["item_id"] for f in report["held_out"]["flipped"]}
    assert flipped == {i for i in held if par_v[i].label != cand_v[i].label}

    # probes of both versions on the held-out items
    rates = report["probes"]["rates"]
    assert {r["family"] for r in rates} == {"invariant", "sensitive"}
    assert report["probes"]["parent"]["n_items"] == len(held)
    assert not any(r["worse"] for r in rates)
    assert report["decision"]["accepted"] and report["decision"]["default_version"] == "v4"

    # uncalibrated until fitted: calibrate check fails, a run report says why
    code, out, _ = run("calibrate", "check", "--rubric", "scope_fidelity", "--model", MODEL)
    assert code == 1 and "no calibration for prompt v4" in out and "aligned from v3" in out
    with open_store(db) as store:
        (state,) = prompt_states(store, list(cand_v.values()))
    assert state.version == "v4" and state.state == "none"
    assert "aligned from v3 by judge align" in state.why
    assert state.command == "judge calibrate fit --rubric scope_fidelity"
    code, _, err = run("calibrate", "fit", "--rubric", "scope_fidelity", "--model", MODEL,
                       "--no-progress")
    assert code == 0, err
    code, out, _ = run("calibrate", "check", "--rubric", "scope_fidelity", "--model", MODEL)
    assert code == 0, out

    # aligning v3 again finds the version it wrote (accepted since): no v5, no new call
    calls = sim[0].count("chat")
    code, again, err = align("--from", "v3", "--accept")
    assert code == 0, err
    assert again["candidate"]["version"] == "v4" and not again["candidate"]["written"]
    assert again["candidate"]["status"] == "accepted" and again["decision"]["accepted"]
    assert sim[0].count("chat") == calls
    assert not (tmp_path / "prompts" / "scope_fidelity" / "v5.md").exists()


def test_accept_refuses_when_the_gain_interval_includes_zero(
        db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a judge whose mistakes no prompt changes: blind spots it keeps whatever it is shown
    judge = SimJudge(blind=())
    judge.noise = 0.15
    with FakeProviderServer(responder=judge) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, report, err = align("--accept")
    assert code == 1, err
    gain = report["held_out"]["gain"]
    assert gain["estimate"] == 0 and gain["ci"][0] <= 0 <= gain["ci"][1]
    assert any("includes 0" in r for r in report["decision"]["reasons"])
    assert not report["decision"]["accepted"] and report["candidate"]["status"] == "draft"
    draft = load_prompt("scope_fidelity", "v4")
    assert draft.is_draft and load_prompt("scope_fidelity").version == "v3"
    code, out, _ = run("calibrate", "check", "--rubric", "scope_fidelity", "--model", MODEL)
    assert "v4" not in out  # a draft is not graded: nothing to calibrate


def test_accept_refuses_a_prompt_that_made_a_probe_rate_worse(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    judge = SimJudge(fragile=True)  # better agreement, but thrown by an irrelevant remark
    with FakeProviderServer(responder=judge) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, report, _ = align("--accept")
    assert code == 1
    assert report["held_out"]["gain"]["ci"][0] > 0
    worse = [r for r in report["probes"]["rates"] if r["worse"]]
    assert {r["kind"] for r in worse} >= {"irrelevant_remark"}
    assert any("irrelevant_remark got worse beyond its interval" in r
               for r in report["decision"]["reasons"])
    assert load_prompt("scope_fidelity").version == "v3"


def test_guidelines_rules_cite_train_items_and_a_rerun_asks_nothing(
        db: str, sim: tuple[FakeProviderServer, SimJudge]) -> None:
    srv, judge = sim
    code, report, err = align("--method", "guidelines")
    assert code == 0, err
    rules = report["proposal"]["rules"]
    assert rules and judge.asked_rules == len(report["train"]["clusters"])
    prompt = load_prompt("scope_fidelity", report["candidate"]["version"])
    record = prompt.aligned
    assert record is not None and record["method"] == "guidelines"
    train = set(record["train_items"])
    for rule in record["guidelines"]:
        assert rule["cites"] and set(rule["cites"]) <= train
    assert record["guidelines_prompt"]["version"] == "v1"
    assert "Rules from reviewed disagreements" in prompt.system
    assert report["held_out"]["gain"]["ci"][0] > 0  # the rules name the blind tools
    calls = srv.count("chat")
    code, again, _ = align("--method", "guidelines")
    assert code == 0 and srv.count("chat") == calls  # everything cached
    assert again["candidate"]["version"] == report["candidate"]["version"]
    assert not again["candidate"]["written"]  # the same draft, not a v5


def test_both_methods_write_examples_and_rules_from_train_only(
        db: str, sim: tuple[FakeProviderServer, SimJudge]) -> None:
    code, report, err = align("--method", "both")
    assert code == 0, err
    prompt = load_prompt("scope_fidelity", report["candidate"]["version"])
    record = prompt.aligned
    assert record is not None and record["method"] == "both" and prompt.is_draft
    train = set(record["train_items"])
    examples = [e["item_id"] for e in report["proposal"]["examples"]]
    assert examples and set(examples) <= train and record["examples"] == examples
    assert record["guidelines"] and all(set(r["cites"]) <= train for r in record["guidelines"])
    assert "Worked examples." in prompt.system
    assert "Rules from reviewed disagreements" in prompt.system
    held = {r["item_id"] for r in world()[2]} - train
    assert len(held) == report["split"]["held_out"]["n"]
    text = Path(report["candidate"]["path"]).read_text(encoding="utf-8")
    assert not any(i in text for i in held)
    assert load_prompt("scope_fidelity").version == "v3"  # no --accept: still a draft


def test_too_few_labels_is_refused_naming_how_many_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'few.db'}"
    items = seed_database(url, tasks=[str(t) for t in range(20)],
                          labelled=[str(t) for t in range(12)])
    monkeypatch.setenv("JUDGE_DATABASE_URL", url)
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic")
    assert code == 2 and out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert "24 human-pass (need 6 more)" in line and "hold 6 more passes" in line
    assert "judge labels plan --rubric scope_fidelity" in line
    assert not (tmp_path / "prompts").exists()
    # with verdicts stored, the refusal carries what the label plan asks for
    from judge.grading.engine import grade_items_sync
    from judge.providers.heuristic import HeuristicProvider
    from judge.request import ModelParams

    with open_store(url) as store:
        verdicts = grade_items_sync(items, load_prompt("scope_fidelity"), HeuristicProvider(),
                                    store.calls, params=ModelParams(), concurrency=4,
                                    rpm=None, retries=0)
        store.save_verdicts(verdicts, store.save_run(config={"kind": "test"}))
    code, _, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--target-width 0.1 --queue asks" in err and "human fails and" in err


def test_refusals_before_any_work(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                       "--method", "guidelines")
    assert code == 2 and "cannot write rules" in err
    code, _, err = run("align", "--rubric", "nope", "--model", "heuristic")
    assert code == 2 and "unknown rubric" in err
    code, _, err = run("align", "--rubric", "scope_fidelity", "--from", "v9")
    assert code == 2 and "no prompt version 'v9'" in err
    monkeypatch.delenv("JUDGE_PROMPTS_DIR")
    code, _, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic")
    assert code == 2 and "JUDGE_PROMPTS_DIR" in err and "Traceback" not in err


def test_on_sqlite_and_postgresql(store_url: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole command on both databases (heuristic judge): tasks found through the stored
    traces, the report stored as its run's summary, the held-out verdicts under it."""
    seed_database(store_url, tasks=[str(t) for t in range(40)])
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                         "--db", store_url, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["split"]["grouped_by"] == "task"
    with open_store(store_url) as store:
        stored = store.get_run(report["run_id"])
        assert stored is not None and stored["config"]["kind"] == "align"
        assert stored["summary"]["decision"] == report["decision"]
        assert len(store.run_verdicts(report["run_id"])) == report["held_out"]["n_items"]
        meta = store.trace_metadata(["tau-airline/3/1", "nope"])
    assert list(meta) == ["tau-airline/3/1"] and meta["tau-airline/3/1"]["task_id"] == "3"
