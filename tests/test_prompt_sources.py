"""Where prompts come from: the package's built-in prompts, a user directory laid over them."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.checks.validate import _user_prompt_dirs, known_rubrics
from judge.cli.prompts import app
from judge.prompts.files import (
    BUILTIN,
    BUILTIN_PROMPTS_DIR,
    USER,
    list_prompts,
    load_prompt,
    prompt_dirs,
)
from judge.settings import Settings, prompts_dir

# The hash of every prompt as it was under the repository's prompts/ before the move into
# the package (commit 72bb706, `judge prompts list`): moving files changes no identity, so no
# calibration record or stored verdict goes stale.
HASHES_BEFORE_THE_MOVE = {
    ("memory_fidelity", "v1"):
        "sha256:fd161f75d4d66c7f5fbdd50e1560f6d1a5eae88ac95a02859d5cd46f01949916",
    ("reply_fidelity", "v1"):
        "sha256:7a8a2016f7513c62661ddd40eed093cf3b9fcf637c0f0c393b8c9d64414445d9",
    ("scope_fidelity", "v1"):
        "sha256:da74fe81c26ee5c447892224fff02669251bf6859698d1d7b391d2262cba57fc",
    ("scope_fidelity", "v2"):
        "sha256:65b519c8e869e9d3c13fde8db7b433982d01970a40a7ea6423d31ac32b194774",
    ("scope_fidelity", "v3"):
        "sha256:4325f406d0a03b820fa2d4e437fd22ea3ae8bb07602f2a7ef58b43f0caefafad",
    ("summary_fidelity", "v1"):
        "sha256:f35454245033a2122bf666db90bed6389a5470e10633ead4bd44080a9edc4f13",
    ("summary_fidelity", "v2"):
        "sha256:4fc584efbbc0bb3f5c15ac9d7e8667337ab6fd104bfc74495ad90d6bc3bf9f95",
    ("summary_fidelity", "v3"):
        "sha256:ce8b9c00d516b0538538b378cc9dfa66eb283c392f57c81c7b47d27ad106d5bb",
}

#: versions added since the move (each a new file: the ones above are unchanged)
ADDED_SINCE = {
    # issue 27: the foreign facts of the scenario's leakage block as data
    ("memory_fidelity", "v2"):
        "sha256:3da40bbe80b0f63d9f03b277e6fab95ca0dd1dee6116676fe767d1f237c02af7",
    ("reply_fidelity", "v2"):
        "sha256:41f9eddf82bf475707bfa1bac261b45906e631af3e224a32d7f631f30ddaf4b8",
}
SHIPPED = {**HASHES_BEFORE_THE_MOVE, **ADDED_SINCE}


@pytest.fixture(autouse=True)
def _no_user_prompts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("JUDGE_PROMPTS_DIR", "JUDGE_BUILTIN_PROMPTS", "JUDGE_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def test_shipped_prompts_keep_their_hashes_after_the_move() -> None:
    """The built-in prompts are the repository's top-level prompts/ (issue 22); moving them
    there from judge/data/prompts/ changed no prompt's hash."""
    root = Path(__file__).resolve().parents[1]
    assert prompt_dirs() == [(BUILTIN, BUILTIN_PROMPTS_DIR)]
    assert root / "prompts" == BUILTIN_PROMPTS_DIR
    shipped = {(p.rubric, p.version): p.hash for p in list_prompts()}
    assert shipped == SHIPPED
    assert {p.source for p in list_prompts()} == {BUILTIN}
    assert not list((root / "judge" / "data").rglob("*.md"))  # one copy, at the top level


def test_an_installed_package_reads_its_own_copy(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """A wheel carries the prompts in judge/data/prompts/ (setup.py maps them there); that
    copy wins over any prompts/ folder beside the package, and an empty one does not."""
    from judge.data import builtin

    packaged = tmp_path / "site" / "judge" / "data" / "prompts"
    packaged.mkdir(parents=True)
    monkeypatch.setattr(builtin, "PACKAGED", packaged)
    assert builtin.prompts_dir() == builtin.CHECKOUT  # an empty folder left behind
    (packaged / "scope_fidelity").mkdir()
    (packaged / "scope_fidelity" / "v1.md").write_text("x", encoding="utf-8")
    assert builtin.prompts_dir() == packaged


def _user_file(root: Path, rubric: str, version: str, extra: str = "") -> Path:
    source = (BUILTIN_PROMPTS_DIR / "scope_fidelity" / "v1.md").read_text(encoding="utf-8")
    text = source.replace("rubric: scope_fidelity", f"rubric: {rubric}")
    text = text.replace("version: v1", f"version: {version}") + extra
    path = root / rubric / f"{version}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_user_directory_replaces_same_version_and_adds_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "mine"
    same = _user_file(user, "scope_fidelity", "v1")                    # same text as built-in
    changed = _user_file(user, "summary_fidelity", "v1", "\nBe strict.\n")  # same version
    _user_file(user, "scope_fidelity", "v7")                           # a new version
    _user_file(user, "refund_policy", "v1")                            # a new rubric
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(user))
    by = {(p.rubric, p.version): p for p in list_prompts()}
    assert set(by) == set(SHIPPED) | {("scope_fidelity", "v7"), ("refund_policy", "v1")}
    s1 = by["scope_fidelity", "v1"]
    assert s1.path == same and s1.source == USER and s1.replaces == s1.hash
    m1 = by["summary_fidelity", "v1"]
    builtin = HASHES_BEFORE_THE_MOVE["summary_fidelity", "v1"]
    assert m1.path == changed and m1.replaces == builtin and m1.hash != builtin
    assert by["scope_fidelity", "v2"].source == BUILTIN
    assert load_prompt("scope_fidelity").version == "v7"  # the highest of either source
    assert load_prompt("refund_policy").source == USER
    assert "refund_policy" in known_rubrics()

    out = CliRunner().invoke(app, ["list"]).output.splitlines()
    line = {tuple(x.split()[:2]): x for x in out}
    assert "user, replaces built-in (same text)" in line["scope_fidelity", "v1"]
    assert f"text differs from built-in {builtin}" in line["summary_fidelity", "v1"]
    assert m1.hash in line["summary_fidelity", "v1"]
    assert line["scope_fidelity", "v2"].split()[3] == "built-in"
    assert line["scope_fidelity", "v7"].split()[3] == "user"
    shown = CliRunner().invoke(app, ["show", "summary_fidelity", "-v", "v1"]).output
    assert str(changed) in shown.splitlines()[0] and "Be strict." in shown


def test_builtin_prompts_off_leaves_the_user_directory_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "mine"
    _user_file(user, "scope_fidelity", "v1")
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(user))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    assert [(p.rubric, p.version, p.source) for p in list_prompts()] == [
        ("scope_fidelity", "v1", USER)]
    assert Settings.load().builtin_prompts is False


def test_judge_toml_prompts_dir_is_relative_to_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    _user_file(conf / "my-prompts", "refund_policy", "v2")
    (conf / "judge.toml").write_text('[judge]\nprompts_dir = "my-prompts"\n')
    env = {"JUDGE_CONFIG": str(conf / "judge.toml")}
    assert prompts_dir(env) == conf / "my-prompts"
    assert Settings.load(environ=env).prompts_dir == conf / "my-prompts"
    # the environment wins over the file
    assert prompts_dir({**env, "JUDGE_PROMPTS_DIR": "/elsewhere"}) == Path("/elsewhere")


def test_validate_reads_the_same_user_directory_as_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_file(tmp_path / "p", "refund_policy", "v1")
    (tmp_path / "judge.toml").write_text('[judge]\nprompts_dir = "p"\n')
    assert [d.resolve() for d in _user_prompt_dirs()] == [prompts_dir().resolve()]  # type: ignore[union-attr]
    assert "refund_policy" in known_rubrics()
    assert load_prompt("refund_policy").source == USER
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "q"))
    assert _user_prompt_dirs() == [prompts_dir()] == [tmp_path / "q"]
