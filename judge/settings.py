"""Settings for judge: defaults, then a config file, then the environment, then CLI flags.

The config file is `judge.toml` in the working directory, or the file named by JUDGE_CONFIG;
its `[judge]` table takes the field names below (`model`, `base_url`, `timeout`, `retries`,
`concurrency`, `rpm`, `seed`, `temperature`, `max_tokens`, `database_url`,
`db_busy_timeout_ms`, `identity_patterns`, `label_clock_skew_s`). API keys are read
from the environment only (OPENAI_API_KEY, ANTHROPIC_API_KEY), never from a file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.errors import ConfigError
from judge.request import ModelParams, Redaction

CONFIG_FILE_NAME = "judge.toml"
#: the prompts directory, instead of the repository's `prompts/` (see `prompts_dir`)
PROMPTS_DIR_VAR = "JUDGE_PROMPTS_DIR"

#: environment variable -> settings field
ENV_VARS: dict[str, str] = {
    "JUDGE_MODEL": "model",
    "JUDGE_BASE_URL": "base_url",
    "OPENAI_BASE_URL": "openai_base_url",
    "JUDGE_TIMEOUT": "timeout",
    "JUDGE_RETRIES": "retries",
    "JUDGE_CONCURRENCY": "concurrency",
    "JUDGE_RPM": "rpm",
    "JUDGE_SEED": "seed",
    "JUDGE_TEMPERATURE": "temperature",
    "JUDGE_MAX_TOKENS": "max_tokens",
    "JUDGE_DATABASE_URL": "database_url",
    "JUDGE_DB_BUSY_TIMEOUT_MS": "db_busy_timeout_ms",
    "OPENAI_API_KEY": "openai_api_key",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "JUDGE_IDENTITY_PATTERNS": "identity_patterns",
    "JUDGE_LABEL_CLOCK_SKEW_S": "label_clock_skew_s",
}

#: fields a config file may set (keys stay in the environment)
FILE_FIELDS = frozenset({"model", "base_url", "openai_base_url", "timeout", "retries",
                         "concurrency", "rpm", "seed", "temperature", "max_tokens",
                         "database_url", "db_busy_timeout_ms", "identity_patterns",
                         "label_clock_skew_s"})


class Settings(BaseModel):
    """Resolved settings. Build with `Settings.load(**cli_overrides)`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    #: base URL for the chosen network provider (JUDGE_BASE_URL, config, --base-url)
    base_url: str | None = None
    #: OPENAI_BASE_URL: applies to openai:<model> only (OpenAI-compatible servers)
    openai_base_url: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    retries: int = Field(default=4, ge=0, le=100)
    concurrency: int = Field(default=16, ge=1, le=10_000)
    rpm: float | None = Field(default=None, gt=0)
    seed: int | None = 0
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)
    #: the database (None: ./judge.db); see judge.store.open_store
    database_url: str | None = None
    #: milliseconds a SQLite writer waits for another's lock before giving up
    db_busy_timeout_ms: int = Field(default=5000, ge=0, le=3_600_000)
    openai_api_key: str | None = Field(default=None, repr=False)
    anthropic_api_key: str | None = Field(default=None, repr=False)
    #: regexes for candidate names never shown to a judge, beyond each trace's `candidate`
    #: (JUDGE_IDENTITY_PATTERNS is comma-separated; the config file takes a list)
    identity_patterns: tuple[str, ...] = ()
    #: seconds an imported label's created_at may lie ahead of this machine's clock
    label_clock_skew_s: float = Field(default=300.0, ge=0, le=86_400)
    #: the config file that was read, if any
    config_file: Path | None = None

    @field_validator("model", "base_url", "openai_base_url", "database_url",
                     "openai_api_key", "anthropic_api_key")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        return value

    @classmethod
    def load(cls, *, environ: Mapping[str, str] | None = None, cwd: Path | None = None,
             **overrides: Any) -> Settings:
        """Defaults < config file < environment < `overrides` (CLI flags; None = not given)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        source: dict[str, str] = {}

        config_path = _config_path(env, cwd or Path.cwd())
        if config_path is not None:
            for key, value in _read_config(config_path).items():
                values[key] = value
                source[key] = f"{config_path}: [judge] field '{key}'"

        for var, key in ENV_VARS.items():
            raw = env.get(var)
            if raw is None or raw == "":
                continue
            values[key] = _parse_env(key, raw)
            source[key] = f"environment variable {var}"

        for key, value in overrides.items():
            if value is None:
                continue
            if key not in cls.model_fields or key == "config_file":
                raise ConfigError(f"unknown setting '{key}'")
            values[key] = value
            source[key] = f"option --{key.replace('_', '-')}"

        values["config_file"] = config_path
        try:
            return cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = str(err["loc"][0]) if err["loc"] else "?"
            where = source.get(key, f"setting '{key}'")
            raise ConfigError(f"{where}: {err['msg']} (got {err.get('input')!r})") from None

    def redaction(self) -> Redaction:
        """What rendering must keep from a judge beyond each trace's own candidate fields."""
        return Redaction(identity_patterns=self.identity_patterns)

    def model_params(self) -> ModelParams:
        """The generation parameters these settings ask for."""
        return ModelParams(temperature=self.temperature, seed=self.seed,
                           max_tokens=self.max_tokens)


def prompts_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The prompts directory named by JUDGE_PROMPTS_DIR, or None (use the default).

    A function, not a Settings field: prompt files are looked up often and by code that
    has no Settings at hand, and this needs neither the config file nor validation.
    """
    value = (os.environ if environ is None else environ).get(PROMPTS_DIR_VAR)
    return Path(value) if value else None


def _config_path(env: Mapping[str, str], cwd: Path) -> Path | None:
    named = env.get("JUDGE_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found (from JUDGE_CONFIG)")
        return path
    default = cwd / CONFIG_FILE_NAME
    return default if default.is_file() else None


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    table = data.get("judge", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: field 'judge': expected a table")
    for key in table:
        if key not in FILE_FIELDS:
            allowed = ", ".join(sorted(FILE_FIELDS))
            raise ConfigError(f"{path}: [judge] field '{key}': unknown setting "
                              f"(allowed: {allowed})")
    return dict(table)


def _parse_env(key: str, raw: str) -> Any:
    if key == "identity_patterns":
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    if key in ("rpm", "seed") and raw.strip().lower() in ("none", "off", "null"):
        return None
    return raw
