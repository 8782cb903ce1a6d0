"""A rubric name is one directory under a prompts directory, never a path (issue 21:
`probe --rubric ''` read the prompts README as a prompt; `../../../etc` was taken as a
path)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import ConfigError
from judge.prompts import load_prompt
from judge.prompts.files import is_rubric_name, rubric_versions

HOSTILE = ["", ".", "..", "../../../etc", "scope_fidelity/../scope_fidelity", "/etc",
           "a/b", "a\\b", "x\x00y", " scope_fidelity", "scope_fidelity\n", "a" * 101]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_path_is_not_a_rubric(name: str) -> None:
    assert not is_rubric_name(name)
    assert rubric_versions(name) == []
    with pytest.raises(ConfigError, match="is not a rubric name"):
        load_prompt(name)


@pytest.mark.parametrize("name", ["scope_fidelity", "reply_fidelity", "my-rubric.v2", "R2"])
def test_names_of_rubrics_are_rubric_names(name: str) -> None:
    assert is_rubric_name(name)


@pytest.mark.parametrize("args", [["probe", "--rubric"], ["prompts", "show"],
                                  ["prompts", "diff"]])
@pytest.mark.parametrize("name", ["", "../../../etc"])
def test_commands_refuse_a_path_as_a_rubric(args: list[str], name: str) -> None:
    result = CliRunner().invoke(app, [*args, name] + (["v1", "v2"] if args[-1] == "diff"
                                                      else []))
    assert result.exit_code == 2, result.output
    assert "is not a rubric name" in result.stderr and "README" not in result.stderr
