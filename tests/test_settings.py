from __future__ import annotations

from pathlib import Path

import pytest

from judge.errors import ConfigError
from judge.settings import Settings


def test_defaults_without_file_or_env(tmp_path: Path) -> None:
    s = Settings.load(environ={}, cwd=tmp_path)
    assert (s.temperature, s.seed, s.timeout, s.retries, s.concurrency, s.rpm) == (
        0.0, 0, 60.0, 4, 16, None)
    assert s.config_file is None
    assert s.model_params().to_dict() == {"temperature": 0.0, "seed": 0, "max_tokens": 1024}


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text(
        '[judge]\nmodel = "anthropic:claude-x"\ntimeout = 12\nretries = 2\nrpm = 300\n')
    s = Settings.load(environ={}, cwd=tmp_path)
    assert (s.model, s.timeout, s.retries, s.rpm) == ("anthropic:claude-x", 12.0, 2, 300.0)
    assert s.config_file == tmp_path / "judge.toml"
    env = {"JUDGE_TIMEOUT": "5", "JUDGE_MODEL": "openai:gpt-x", "JUDGE_RPM": "none"}
    s = Settings.load(environ=env, cwd=tmp_path)
    assert (s.model, s.timeout, s.retries, s.rpm) == ("openai:gpt-x", 5.0, 2, None)
    s = Settings.load(environ=env, cwd=tmp_path, timeout=1.5, model=None, concurrency=3)
    assert (s.model, s.timeout, s.concurrency) == ("openai:gpt-x", 1.5, 3)


def test_judge_config_names_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "elsewhere.toml"
    cfg.write_text("[judge]\nconcurrency = 7\n")
    s = Settings.load(environ={"JUDGE_CONFIG": str(cfg)}, cwd=tmp_path / "nope")
    assert s.concurrency == 7
    with pytest.raises(ConfigError, match=r"missing\.toml: config file not found"):
        Settings.load(environ={"JUDGE_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(("text", "pattern"), [
    ("[judge]\nconcurency = 3\n", r"judge.toml: \[judge\] field 'concurency': unknown setting"),
    ("[judge]\ntimeout = -1\n", r"judge.toml: \[judge\] field 'timeout': .*greater than 0"),
    ("[judge]\nretries = 'many'\n", r"field 'retries'"),
    ("[judge\n", r"judge.toml: invalid TOML: .*line 1"),
    ("judge = 3\n", r"field 'judge': expected a table"),
])
def test_bad_config_names_file_and_field(tmp_path: Path, text: str, pattern: str) -> None:
    (tmp_path / "judge.toml").write_text(text)
    with pytest.raises(ConfigError, match=pattern):
        Settings.load(environ={}, cwd=tmp_path)


def test_bad_env_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="environment variable JUDGE_CONCURRENCY"):
        Settings.load(environ={"JUDGE_CONCURRENCY": "lots"}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        Settings.load(environ={}, cwd=tmp_path, colour="red")


def test_keys_come_from_env_only_and_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text('[judge]\nopenai_api_key = "sk-x"\n')
    with pytest.raises(ConfigError, match="openai_api_key"):
        Settings.load(environ={}, cwd=tmp_path)
    s = Settings.load(environ={"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "http://h/v1"},
                      cwd=tmp_path / "x")
    assert s.openai_api_key == "sk-secret" and s.openai_base_url == "http://h/v1"
    assert "sk-secret" not in repr(s)


def test_reads_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_SEED", "7")
    monkeypatch.setenv("JUDGE_DATABASE_URL", "sqlite:///x.db")
    s = Settings.load()
    assert s.seed == 7 and s.database_url == "sqlite:///x.db"


def test_prompts_dir_is_read_through_settings(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.prompts import prompts_root
    from judge.settings import prompts_dir

    assert prompts_dir({}) is None and prompts_dir({"JUDGE_PROMPTS_DIR": ""}) is None
    assert prompts_dir({"JUDGE_PROMPTS_DIR": str(tmp_path)}) == tmp_path
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path))
    assert prompts_root() == tmp_path
    monkeypatch.delenv("JUDGE_PROMPTS_DIR")
    assert prompts_root().name == "prompts"


def test_settings_build_what_rendering_takes() -> None:
    from judge.request import Redaction

    s = Settings.load(environ={"JUDGE_IDENTITY_PATTERNS": "acme-bot, gpt-4o\\S*"})
    assert s.redaction() == Redaction(identity_patterns=("acme-bot", "gpt-4o\\S*"))


@pytest.mark.parametrize("var", ["JUDGE_TIMEOUT", "JUDGE_RPM", "JUDGE_TEMPERATURE",
                                 "JUDGE_LABEL_CLOCK_SKEW_S", "JUDGE_JURY_MIN_SHARE"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_float_setting_is_finite_in_the_environment(tmp_path: Path, var: str,
                                                      value: str) -> None:
    """Issue 21: NaN passed `le=2` checks as "should be ≤ 2", and an infinite timeout or
    rate reached the providers; every float setting is refused by name as not finite."""
    with pytest.raises(ConfigError, match=rf"environment variable {var}: .*finite number"):
        Settings.load(environ={var: value}, cwd=tmp_path)


@pytest.mark.parametrize("field", ["timeout", "rpm", "temperature", "jury_min_share"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_float_setting_is_finite_in_the_config_file(tmp_path: Path, field: str,
                                                      value: str) -> None:
    (tmp_path / "judge.toml").write_text(f"[judge]\n{field} = {value}\n")  # TOML has nan, inf
    with pytest.raises(ConfigError, match=rf"judge.toml: \[judge\] field '{field}': .*finite"):
        Settings.load(environ={}, cwd=tmp_path)
