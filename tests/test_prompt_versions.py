"""Released prompt versions never change; new texts are new versions, and calibration records
made with an older version are reported stale by `judge calibrate check`."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibration_data import MODEL, write_files
from typer.testing import CliRunner

from judge.cli.main import app
from judge.prompts import load_prompt
from judge.prompts.files import list_prompts

#: every released version's identity; a change here means a released prompt was edited
RELEASED = {
    ("scope_fidelity", "v1"):
        "sha256:da74fe81c26ee5c447892224fff02669251bf6859698d1d7b391d2262cba57fc",
    ("scope_fidelity", "v2"):
        "sha256:65b519c8e869e9d3c13fde8db7b433982d01970a40a7ea6423d31ac32b194774",
    ("summary_fidelity", "v1"):
        "sha256:f35454245033a2122bf666db90bed6389a5470e10633ead4bd44080a9edc4f13",
    ("summary_fidelity", "v2"):
        "sha256:4fc584efbbc0bb3f5c15ac9d7e8667337ab6fd104bfc74495ad90d6bc3bf9f95",
    # released before issue 27 added v2 of each (the foreign facts as data)
    ("reply_fidelity", "v1"):
        "sha256:7a8a2016f7513c62661ddd40eed093cf3b9fcf637c0f0c393b8c9d64414445d9",
    ("memory_fidelity", "v1"):
        "sha256:fd161f75d4d66c7f5fbdd50e1560f6d1a5eae88ac95a02859d5cd46f01949916",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_released_versions_are_unchanged_and_the_latest_are_new() -> None:
    have = {(p.rubric, p.version): p.hash for p in list_prompts()}
    for key, digest in RELEASED.items():
        assert have[key] == digest, f"released prompt {key} was edited: make a new version"
    assert load_prompt("scope_fidelity").version == "v3"
    assert load_prompt("summary_fidelity").version == "v3"
    assert load_prompt("reply_fidelity").version == "v2"
    assert load_prompt("memory_fidelity").version == "v2"
    for rubric in ("scope_fidelity", "summary_fidelity", "reply_fidelity", "memory_fidelity"):
        assert "ledger_as_of" in load_prompt(rubric).variables
    for rubric in ("reply_fidelity", "memory_fidelity"):
        assert {"foreign", "leak_key"} <= load_prompt(rubric).variables
        assert "foreign" not in load_prompt(rubric, "v1").variables


@pytest.mark.parametrize("rubric", ["scope_fidelity", "summary_fidelity"])
def test_calibration_of_v2_is_stale_once_v3_is_current(tmp_path: Path, rubric: str) -> None:
    v2 = load_prompt(rubric, "v2")
    v3 = load_prompt(rubric)
    cal = tmp_path / "cal"
    labels, verdicts = write_files(tmp_path, 300, rubric=rubric, prompt_version="v2",
                                   prompt_hash=v2.hash)
    code, _, err = run("calibrate", "files", "--labels", str(labels), "--verdicts",
                       str(verdicts), "-o", str(cal))
    assert code == 0, err
    assert (cal / rubric / f"v2__{MODEL.replace(':', '-')}.json").exists()
    code, out, _ = run("calibrate", "check", "--records", str(cal), "--model", MODEL)
    assert code == 1
    (line,) = [x for x in out.splitlines() if x.startswith(f"stale: {rubric}: ")]
    assert f"no calibration for prompt v3 ({v3.hash})" in line
    assert "(records exist for prompt v2)" in line
    # the deprecated option form says the same
    code, legacy, _ = run("calibrate", "--check", "-o", str(cal), "--model", MODEL)
    assert code == 1 and f"{rubric}: no calibration for prompt v3" in legacy
