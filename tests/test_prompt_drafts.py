"""Draft prompt versions (`status: draft`, what `judge align` writes): listed and loadable by
name, never the default; the status line is outside the hash, so accepting one keeps its
identity; the `aligned` record is checked like the rest of the front matter."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.align.candidate import accept, candidate_text, emit, quote
from judge.calibration.status import current_prompts
from judge.cli.main import app
from judge.errors import ConfigError
from judge.prompts.files import (
    BUILTIN_PROMPTS_DIR,
    load_prompt,
    next_version,
    parse_prompt,
    without_status,
)

V3 = BUILTIN_PROMPTS_DIR / "scope_fidelity" / "v3.md"
RECORD = {"parent": "v3", "parent_hash": "sha256:x", "model": "heuristic", "method": "fewshot",
          "split": {"seed": 0}, "train_items": ["t/1#3:scope_fidelity"]}


def draft(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str = "v4",
          extra: str = "Be careful.") -> Path:
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    parent = load_prompt("scope_fidelity", "v3")
    path = tmp_path / "prompts" / "scope_fidelity" / f"{version}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(candidate_text(parent, version, extra, RECORD), encoding="utf-8")
    return path


def test_a_draft_is_never_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = draft(tmp_path, monkeypatch)
    assert load_prompt("scope_fidelity").version == "v3"
    named = load_prompt("scope_fidelity", "v4")
    assert named.is_draft and named.path == path and named.aligned == RECORD
    assert next_version("scope_fidelity") == "v5"
    assert [c[1] for c in current_prompts("heuristic", "scope_fidelity")] == ["v3"]
    out = CliRunner().invoke(app, ["prompts", "list"]).stdout
    assert "draft" in next(line for line in out.splitlines() if " v4 " in line)


def test_accepting_keeps_the_hash_and_makes_it_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draft(tmp_path, monkeypatch)
    before = load_prompt("scope_fidelity", "v4")
    after = accept(before)
    assert not after.is_draft and after.hash == before.hash
    assert "status:" not in after.path.read_text()
    assert load_prompt("scope_fidelity").version == "v4"
    assert [c[1:3] for c in current_prompts("heuristic", "scope_fidelity")] == [
        ("v4", before.hash)]


def test_the_hash_leaves_out_only_the_status_line() -> None:
    text = V3.read_text()
    assert without_status(text) == text  # files without one hash as they always did
    with_status = text.replace("labels: [pass, fail]\n", "labels: [pass, fail]\nstatus: draft\n")
    assert without_status(with_status) == text
    assert parse_prompt(with_status, V3).hash == parse_prompt(text, V3).hash
    edited = with_status.replace("careful reviewer", "careless reviewer")
    assert parse_prompt(edited, V3).hash != parse_prompt(text, V3).hash


def test_accept_refuses_a_file_edited_in_the_status_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = draft(tmp_path, monkeypatch)
    prompt = load_prompt("scope_fidelity", "v4")
    path.write_text(path.read_text().replace("Be careful.", "Be lax."))
    with pytest.raises(ConfigError, match="edited since"):
        accept(prompt)


def test_only_drafts_is_no_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "p"))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    (tmp_path / "p" / "scope_fidelity").mkdir(parents=True)
    text = V3.read_text().replace("version: v3", "version: v1").replace(
        "labels: [pass, fail]\n", "labels: [pass, fail]\nstatus: draft\n")
    (tmp_path / "p" / "scope_fidelity" / "v1.md").write_text(text)
    with pytest.raises(ConfigError, match="only draft versions"):
        load_prompt("scope_fidelity")
    assert current_prompts("heuristic") == []


@pytest.mark.parametrize("front, field", [
    ("status: final", "status"),
    ("aligned: 3", "aligned"),
    ("aligned: {parent: v3}", "aligned.parent_hash"),
    ("aligned: {parent: v3, parent_hash: h, model: m, method: fewshot, split: {}, "
     "train_items: [1]}", "aligned.train_items"),
    ("aligned: {parent: v3, parent_hash: h, model: m, method: fewshot, split: {}, "
     "train_items: [], colour: red}", "aligned.colour"),
])
def test_bad_front_matter_names_the_field(front: str, field: str) -> None:
    text = V3.read_text().replace("labels: [pass, fail]\n", f"labels: [pass, fail]\n{front}\n")
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        parse_prompt(text, V3)


@given(st.text())
def test_quoted_strings_read_back_as_written(s: str) -> None:
    import yaml

    q = quote(s)
    assert "\n" not in q and q.isascii()
    assert yaml.safe_load(q) == s


@given(st.lists(st.text(), max_size=5), st.text())
def test_any_item_ids_make_a_front_matter_that_reads_back(ids: list[str], model: str) -> None:
    record = {**RECORD, "model": model, "train_items": ids,
              "guidelines": [{"rule": r, "cites": ids} for r in ids[:2]]}
    parent = parse_prompt(V3.read_text(), V3)
    text = candidate_text(parent, "v4", "Rules.", record)
    prompt = parse_prompt(text, V3.parent / "v4.md")
    assert prompt.aligned == record and prompt.is_draft
    assert prompt.system.endswith("Rules.") and prompt.user == parent.user
    assert "\n".join(emit(record)).count("\n---") == 0
