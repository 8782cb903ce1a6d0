"""`judge align` against a hostile review: a reused version name never mixes two prompts in
one stored run, trace text reaches the version file escaped, the prompts directory is checked
(and never created beyond its last part) before any database or model work, `--seed` is
range-checked by name, and the report counts tied labels. The heuristic judge, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from align_sim import seed_database
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel
from judge.prompts import load_prompt
from judge.store import open_store

TASKS = [str(t) for t in range(40)]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def align(*extra: str) -> tuple[int, dict, str]:
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                         "--format", "json", *extra)
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    seed_database(url, tasks=TASKS)
    monkeypatch.setenv("JUDGE_DATABASE_URL", url)
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    monkeypatch.setenv("JUDGE_CALIBRATION_DIR", str(tmp_path / "calibration"))
    return url


def test_a_reused_version_name_is_another_run_never_a_mix(db: str, tmp_path: Path) -> None:
    code, first, err = align()
    assert code == 0, err
    Path(first["candidate"]["path"]).unlink()  # the draft deleted, align run again: v4 again
    code, second, err = align("--budget", "1500")
    assert code == 0, err
    assert first["candidate"]["version"] == second["candidate"]["version"] == "v4"
    assert first["candidate"]["hash"] != second["candidate"]["hash"]
    assert first["run_id"] != second["run_id"]
    with open_store(db) as store:
        for report in (first, second):
            run_id, cand = report["run_id"], report["candidate"]
            assert cand["hash"] in run_id
            stored = store.get_run(run_id)
            assert stored is not None
            assert stored["config"]["candidate_hash"] == cand["hash"]
            assert stored["summary"]["candidate"]["hash"] == cand["hash"]
            verdicts = store.run_verdicts(run_id)
            assert len(verdicts) == report["held_out"]["n_items"]
            assert {v.prompt_hash for v in verdicts} == {cand["hash"]}
            parent = store.run_verdicts(f"{run_id}/parent")
            assert {v.prompt_hash for v in parent} == {report["parent"]["hash"]}
    code, out, err = run("calibrate", "compare", "v3", "v4", "--rubric", "scope_fidelity",
                         "--format", "json")
    assert code == 0, err
    assert json.loads(out)["new"]["prompt_hash"] == second["candidate"]["hash"]


HOSTILE = "title \x1b]0;PWNED\x07 clear \x1b[2J csi \x9b1m bidi \u202e zw \u200b del \x7f"


def test_trace_text_is_written_escaped_into_the_version_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.align.candidate import propose

    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    parent = load_prompt("scope_fidelity")
    addition = f"Worked examples:\n\n\tan example: {HOSTILE}\n\n1. a rule: {HOSTILE}"
    record = {"parent": parent.version, "parent_hash": parent.hash, "model": "heuristic",
              "method": "fewshot", "split": {"seed": 0}, "train_items": ["a"],
              "examples": ["a"]}
    prompt, written = propose(parent, addition, record)
    assert written
    raw = prompt.path.read_bytes()
    for bad in (b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode(), "\u200b".encode(),
                b"\x7f"):
        assert bad not in raw, bad
    text = raw.decode("utf-8")
    assert r"\x1b]0;PWNED\x07" in text and r"\x1b[2J" in text and r"\u202e" in text
    assert "\n\tan example:" in text  # line breaks and tabs stay as they are
    # the same proposal again reuses the draft (what is compared is what was written)
    again, written = propose(parent, addition, record)
    assert not written and again.path == prompt.path and again.hash == prompt.hash


@pytest.mark.parametrize("make", [
    lambda base: base / "missing" / "prompts",          # parent missing
    lambda base: base / "pd" / ".." / "pd2" / ".." / "pd3",  # would create pd and pd2
])
def test_a_prompts_dir_whose_parent_is_missing_is_refused_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object) -> None:
    base = tmp_path / "base"
    base.mkdir()
    target = make(base)  # type: ignore[operator]
    dbfile = tmp_path / "never.db"
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(target))
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                         "--db", f"sqlite:///{dbfile}")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "JUDGE_PROMPTS_DIR" in err and "does not exist" in err
    assert not dbfile.exists()  # refused before the database was opened
    assert sorted(p.name for p in base.iterdir()) == []  # nothing created


def test_a_prompts_dir_that_is_a_file_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "file"))
    code, _, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                       "--db", f"sqlite:///{tmp_path / 'never.db'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a directory" in err
    assert not (tmp_path / "never.db").exists()


def test_only_the_last_directory_is_created(db: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "new"))
    code, report, err = align()
    assert code == 0, err
    assert Path(report["candidate"]["path"]) == tmp_path / "new" / "scope_fidelity" / "v4.md"


@pytest.mark.parametrize("seed", ["-1", "4294967296", "nope"])
def test_the_seed_is_range_checked_by_name(seed: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic",
                         "--seed", seed, "--db", f"sqlite:///{tmp_path / 'never.db'}")
    assert code == 2 and out == ""
    assert "--seed" in err and "internal error" not in err and "Traceback" not in err
    assert not (tmp_path / "never.db").exists()


def test_the_largest_seed_is_accepted() -> None:
    from judge.cli.numbers import integer

    assert integer(0, 2**32 - 1)("4294967295") == 2**32 - 1
    assert integer(0, 2**32 - 1)(" 0 ") == 0


def test_the_report_counts_tied_labels(db: str) -> None:
    with open_store(db) as store:
        gold = sorted(store.labels_for(rubric="scope_fidelity"), key=lambda lab: lab.item_id)[0]
        other = "pass" if gold.label == "fail" else "fail"
        assert gold.annotator != "second-reviewer"
        store.add_labels([HumanLabel(item_id=gold.item_id, label=other,
                                     annotator="second-reviewer")])  # one each way: a tie
    code, report, err = align()
    assert code == 0, err
    assert report["labels"]["n_tied"] == 1
    with open_store(db) as store:
        assert store.get_run(report["run_id"])["summary"]["labels"]["n_tied"] == 1
    code, out, err = run("align", "--rubric", "scope_fidelity", "--model", "heuristic")
    assert code == 0, err
    assert "1 tied" in out


def test_traces_grouped_by_a_shared_customer_through_task_id_never_straddle() -> None:
    """What the README says to do: a customer's id as `metadata.task_id` keeps every item of
    that customer, whatever its task, on one side."""
    from judge.align.split import group_of, split_items

    labels, groups, customer = {}, {}, {}
    for n in range(120):
        item_id = f"t{n}#1:scope_fidelity"
        cust = f"cust{n % 30}"
        labels[item_id] = "fail" if n % 3 else "pass"
        groups[item_id] = group_of(f"tau/{n}", {"task_id": cust})
        customer[item_id] = cust
    split = split_items(labels, groups, rubric="scope_fidelity", seed=3, min_per_class=5)
    train = {customer[i] for i in split.train}
    held = {customer[i] for i in split.held_out}
    assert train and held and not train & held
