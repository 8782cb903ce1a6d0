"""`judge calibrate files`, refusals, bad input, `check`, `compare` of verdict files, and the
old option-only forms mapped onto the subcommands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from calibration_data import MODEL, synth, write_files, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.calibration import load_records
from judge.cli.main import app
from judge.prompts.files import BUILTIN_PROMPTS_DIR

REPO_PROMPTS = BUILTIN_PROMPTS_DIR


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_file_mode_prints_and_writes_record(tmp_path: Path) -> None:
    labels, verdicts = write_files(tmp_path, 400)
    code, out, err = run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
                         "-o", str(tmp_path / "cal"))
    assert code == 0, err
    rec = json.loads(out)  # a single record: one JSON object
    assert rec["rubric"] == "scope_fidelity" and rec["model"] == MODEL
    assert rec["n"] == 400 and rec["prompt_hash"] == "sha256:abc"
    assert rec["label_set_hash"].startswith("sha256:")
    assert rec["method"] in ("isotonic", "platt")
    assert 0 < rec["expected_review_share"] < 1 and rec["threshold"] is not None
    path = tmp_path / "cal" / "scope_fidelity" / "v2__openai-gpt-4.1-mini.json"
    assert json.loads(path.read_text()) == rec
    assert load_records(tmp_path / "cal")[0].threshold == rec["threshold"]


def test_text_format_and_target(tmp_path: Path) -> None:
    labels, verdicts = write_files(tmp_path, 400)
    code, out, _ = run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
                       "--format", "text", "--target", "0.9")
    assert code == 0
    assert "threshold" in out and "expected review share" in out and "target 0.9" in out
    _, strict, _ = run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
                       "--target", "0.97")
    _, lax, _ = run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
                    "--target", "0.9")
    strict_share = json.loads(strict)["expected_review_share"]
    assert json.loads(lax)["expected_review_share"] < strict_share


def test_one_record_per_prompt_version(tmp_path: Path) -> None:
    labels, v1 = synth(300, prompt_version="v1", prompt_hash="h1", seed=1)
    _, v2 = synth(300, prompt_version="v2", prompt_hash="h2", seed=1)
    write_jsonl(tmp_path / "l.jsonl", labels)
    write_jsonl(tmp_path / "v.jsonl", v1 + v2)
    code, out, err = run("calibrate", "files", "--labels", str(tmp_path / "l.jsonl"),
                         "--verdicts", str(tmp_path / "v.jsonl"))
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["prompt_version"] for r in records] == ["v1", "v2"]
    code, out, _ = run("calibrate", "files", "--labels", str(tmp_path / "l.jsonl"),
                       "--verdicts", str(tmp_path / "v.jsonl"), "--rubric", "other")
    assert code == 2


def test_too_few_labels_refused_with_how_many_more(tmp_path: Path) -> None:
    labels, verdicts = write_files(tmp_path, 200, n_fail=25)
    code, out, err = run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts))
    assert code == 2 and out == ""
    assert "25 human-fail (need 5 more)" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("case", ["bad_label", "no_shared", "duplicate", "missing_file"])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, case: str) -> None:
    labels, verdicts = synth(100)
    if case == "bad_label":
        labels[7]["label"] = "maybe"
    elif case == "no_shared":
        for v in verdicts:
            v["item_id"] = v["item_id"].replace("t", "x", 1)
    elif case == "duplicate":
        verdicts.append(dict(verdicts[3]))
    lpath = write_jsonl(tmp_path / "l.jsonl", labels)
    vpath = write_jsonl(tmp_path / "v.jsonl", verdicts)
    if case == "missing_file":
        lpath = tmp_path / "absent.jsonl"
    code, _, err = run("calibrate", "files", "--labels", str(lpath), "--verdicts", str(vpath))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    expect = {"bad_label": "l.jsonl:8", "no_shared": "share no item",
              "duplicate": "v.jsonl:101", "missing_file": "absent.jsonl"}[case]
    assert expect in err


def test_check_lists_stale_rubrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = tmp_path / "prompts"
    (prompts / "scope_fidelity").mkdir(parents=True)
    shutil.copy(REPO_PROMPTS / "scope_fidelity" / "v1.md", prompts / "scope_fidelity" / "v1.md")
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(prompts))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    from judge.prompts.files import load_prompt

    current = load_prompt("scope_fidelity")
    cal = tmp_path / "cal"
    # nothing calibrated yet: stale
    code, out, _ = run("calibrate", "check", "--records", str(cal), "--model", MODEL)
    assert code == 1 and "scope_fidelity" in out
    labels, verdicts = write_files(tmp_path, 300, prompt_version=current.version,
                                   prompt_hash=current.hash)
    assert run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
               "-o", str(cal))[0] == 0
    code, out, _ = run("calibrate", "check", "--records", str(cal), "--model", MODEL,
                       "--labels", str(labels))
    assert code == 0, out
    # the model from settings (JUDGE_MODEL) when --model is absent
    monkeypatch.setenv("JUDGE_MODEL", "anthropic:claude-haiku-4-5")
    code, out, _ = run("calibrate", "check", "--records", str(cal))
    assert code == 1 and "anthropic:claude-haiku-4-5" in out
    # labels grew by more than 20%
    more, _ = synth(400, prompt_version=current.version, prompt_hash=current.hash)
    write_jsonl(tmp_path / "more.jsonl", more)
    code, out, _ = run("calibrate", "check", "--records", str(cal), "--model", MODEL,
                       "--labels", str(tmp_path / "more.jsonl"))
    assert code == 1 and "300 to 400" in out
    # a new prompt version: stale until recalibrated
    text = (prompts / "scope_fidelity" / "v1.md").read_text()
    (prompts / "scope_fidelity" / "v2.md").write_text(
        text.replace("version: v1", "version: v2") + "\nBe strict.\n")
    code, out, _ = run("calibrate", "check", "--records", str(cal), "--model", MODEL)
    assert code == 1 and "prompt v2" in out


def test_compare_lists_flips_with_evidence(tmp_path: Path) -> None:
    labels, old = synth(200, prompt_version="v1", prompt_hash="h1")
    _, new = synth(200, prompt_version="v2", prompt_hash="h2")
    human = {lab["item_id"]: lab["label"] for lab in labels}
    changed = []
    for v in new[:20]:
        target = human[v["item_id"]]  # v2 now agrees with the human on the first 20 items
        if v["label"] != target:
            changed.append(v["item_id"])
        v.update(label=target, violated_key="budget" if target == "fail" else None,
                 evidence_event=5 if target == "fail" else None)
    for v, o in zip(new[20:], old[20:], strict=True):
        v.update(label=o["label"], violated_key=o["violated_key"],
                 evidence_event=o["evidence_event"])
    flips = [v["item_id"] for v, o in zip(new, old, strict=True) if v["label"] != o["label"]]
    lp = write_jsonl(tmp_path / "l.jsonl", labels)
    op = write_jsonl(tmp_path / "old.jsonl", old)
    np_ = write_jsonl(tmp_path / "new.jsonl", new)
    code, out, err = run("calibrate", "compare", str(op), str(np_), "--labels", str(lp))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["old"]["prompt_version"] == "v1" and doc["new"]["prompt_version"] == "v2"
    assert [f["item_id"] for f in doc["flipped"]] == sorted(flips)
    assert doc["n_fixed"] == len(changed) and doc["n_broke"] == 0
    assert doc["new"]["accuracy"] > doc["old"]["accuracy"]
    fail_flip = next(f for f in doc["flipped"] if f["new"]["label"] == "fail")
    assert fail_flip["new"]["evidence_event"] == 5 and fail_flip["new"]["violated_key"] == "budget"
    code, out, _ = run("calibrate", "compare", str(op), str(np_), "--labels", str(lp),
                       "--format", "text")
    assert code == 0 and f"flipped {len(flips)} of 200" in out


# -- the old option-only forms ---------------------------------------------------------------
@pytest.mark.parametrize(("old", "new", "ignored"), [
    (["--rubric", "r", "--model", "m", "--progress", "-o", "d"],
     ["fit", "--rubric", "r", "--model", "m", "--progress", "-o", "d"], []),
    (["--labels", "l", "--verdicts", "v", "--rubric", "r", "--target=0.9", "--db", "x"],
     ["files", "--labels", "l", "--verdicts", "v", "--rubric", "r", "--target=0.9"], ["--db"]),
    (["--rubric", "r", "--check", "-o", "d", "--format", "text", "--grow-share", "0.5"],
     ["check", "--rubric", "r", "-o", "d", "--grow-share", "0.5"], ["--format"]),
    (["--compare", "a.jsonl", "b.jsonl", "--labels", "l", "--rubric", "r", "--model", "m"],
     ["compare", "a.jsonl", "b.jsonl", "--labels", "l"], ["--model", "--rubric"]),
    (["--format", "text", "--compare", "v1", "v2", "--rubric", "r", "--db", "x"],
     ["compare", "v1", "v2", "--format", "text", "--rubric", "r", "--db", "x"], []),
])
def test_legacy_args_map_onto_subcommands(old: list[str], new: list[str],
                                          ignored: list[str]) -> None:
    from judge.cli.calibrate import legacy_args

    mapped = legacy_args(old)
    assert mapped is not None
    args, note = mapped
    assert args == new
    assert note.startswith(f"deprecated form: running 'judge calibrate {new[0]}")
    assert all(name in note for name in ignored) and ("ignored" in note) == bool(ignored)


@pytest.mark.parametrize("args", [["fit", "--rubric", "r"], ["--help"], []])
def test_subcommand_forms_are_left_alone(args: list[str]) -> None:
    from judge.cli.calibrate import legacy_args

    assert legacy_args(args) is None


def _without_time(out: str) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "created_at"}
            for line in out.splitlines()]


def test_old_forms_still_run_with_a_deprecation_note(tmp_path: Path) -> None:
    labels, verdicts = write_files(tmp_path, 300)
    files = ["--labels", str(labels), "--verdicts", str(verdicts), "--target", "0.9"]
    code, old_out, old_err = run("calibrate", *files, "-o", str(tmp_path / "old"))
    assert code == 0, old_err
    code, new_out, new_err = run("calibrate", "files", *files, "-o", str(tmp_path / "new"))
    assert code == 0 and new_err == ""
    assert _without_time(old_out) == _without_time(new_out)
    assert old_err.strip() == (f"judge: deprecated form: running 'judge calibrate files "
                               f"{' '.join(files)} -o {tmp_path / 'old'}'")
    # --check: exit 1 when stale, 0 when current, the same lines as `check`
    code, out, err = run("calibrate", "--check", "-o", str(tmp_path / "old"), "--model", MODEL,
                         "--format", "json")
    assert code == 1 and out.startswith("stale: ")
    assert "running 'judge calibrate check" in err and "(ignored: --format)" in err
    assert (code, out) == run("calibrate", "check", "-o", str(tmp_path / "old"),
                              "--model", MODEL)[:2]
    # --compare of two verdict files
    _, other = synth(300, prompt_version="v3", prompt_hash="h3", seed=5)
    np_ = write_jsonl(tmp_path / "new.jsonl", other)
    code, out, err = run("calibrate", "--compare", str(verdicts), str(np_), "--labels",
                         str(labels))
    assert code == 0 and "running 'judge calibrate compare" in err
    assert out == run("calibrate", "compare", str(verdicts), str(np_), "--labels",
                      str(labels))[1]
    # too few labels is still exit 2 with how many more are needed
    few_l, few_v = write_files(tmp_path, 200, n_fail=25)
    code, out, err = run("calibrate", "--labels", str(few_l), "--verdicts", str(few_v))
    assert code == 2 and out == "" and "25 human-fail (need 5 more)" in err
    code, _, err = run("calibrate", "--target", "0.9")
    assert code == 2 and "needs a subcommand" in err


def test_compare_needs_exactly_one_source(tmp_path: Path) -> None:
    labels, verdicts = write_files(tmp_path, 50)
    code, _, err = run("calibrate", "compare", str(verdicts), str(verdicts))
    assert code == 2 and "needs --labels" in err
    code, _, err = run("calibrate", "compare", str(verdicts), str(verdicts), "--labels",
                       str(labels), "--rubric", "r")
    assert code == 2 and "not both" in err
    code, _, err = run("calibrate", "compare", str(verdicts), str(verdicts), "--labels",
                       str(labels), "--model", "m")
    assert code == 2 and "--rubric" in err


_OLD_TOKENS = st.sampled_from([
    "--labels", "--verdicts", "--target", "--format", "--rubric", "-o", "--output", "--model",
    "--base-url", "--db", "--grow-share", "--seed", "--min-per-class", "--compare", "--check",
    "--progress", "--no-progress", "--target=0.9", "--bogus", "x", "v1", "a b", "-", "--"])


@given(st.lists(_OLD_TOKENS, max_size=12))
@settings(max_examples=300, deadline=None)
def test_legacy_mapping_is_total_and_keeps_order(args: list[str]) -> None:
    """Any old command line maps to a subcommand (or exits 2 with one line): the tokens kept
    are the given ones in their order, and a mapped line is not mapped again."""
    from judge.cli.calibrate import legacy_args

    try:
        mapped = legacy_args(args)
    except typer.Exit as exc:
        assert exc.exit_code == 2
        return
    if mapped is None:
        assert not args or not args[0].startswith("-") or args[0] == "--help"
        return
    new, note = mapped
    assert new[0] in {"fit", "files", "check", "compare"} and "\n" not in note
    rest = new[3:] if new[0] == "compare" else new[1:]
    it = iter(args)
    assert all(any(t == a for a in it) for t in rest)  # a subsequence of the old line
    assert legacy_args(new) is None
