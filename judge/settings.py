"""Settings for judge: defaults, then a config file, then the environment, then CLI flags.

The config file is `judge.toml` in the working directory, or the file named by JUDGE_CONFIG;
its `[judge]` table takes the field names below (`model`, `base_url`, `timeout`, `retries`,
`concurrency`, `rpm`, `seed`, `temperature`, `max_tokens`, `database_url`,
`db_busy_timeout_ms`, `identity_patterns`, `label_clock_skew_s`, `prompts_dir`,
`response_format`, and the jury fields `jury`, `samples`, `jury_confidence`, `jury_min_share`,
`jury_rubrics`). API keys are read from the environment only (OPENAI_API_KEY,
ANTHROPIC_API_KEY), never from a file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.errors import ConfigError
from judge.request import ModelParams, Redaction

CONFIG_FILE_NAME = "judge.toml"
#: the user prompts directory, laid over the built-in prompts (see `prompts_dir`)
PROMPTS_DIR_VAR = "JUDGE_PROMPTS_DIR"
#: "off"/"false"/"0": the user prompts directory alone, without the built-in prompts
BUILTIN_PROMPTS_VAR = "JUDGE_BUILTIN_PROMPTS"
_OFF = frozenset({"0", "off", "false", "no"})

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
    PROMPTS_DIR_VAR: "prompts_dir",
    "JUDGE_JURY": "jury",
    "JUDGE_SAMPLES": "samples",
    "JUDGE_JURY_CONFIDENCE": "jury_confidence",
    "JUDGE_JURY_MIN_SHARE": "jury_min_share",
    "JUDGE_JURY_RUBRICS": "jury_rubrics",
    BUILTIN_PROMPTS_VAR: "builtin_prompts",
    "JUDGE_RESPONSE_FORMAT": "response_format",
}

#: fields a config file may set (keys stay in the environment)
FILE_FIELDS = frozenset({"model", "base_url", "openai_base_url", "timeout", "retries",
                         "concurrency", "rpm", "seed", "temperature", "max_tokens",
                         "database_url", "db_busy_timeout_ms", "identity_patterns",
                         "label_clock_skew_s", "prompts_dir",
                         "builtin_prompts", "jury", "samples", "jury_confidence",
                         "jury_min_share", "jury_rubrics", "response_format"})
#: settings given as comma-separated lists in the environment
_LIST_FIELDS = frozenset({"identity_patterns", "jury", "jury_rubrics"})


class Settings(BaseModel):
    """Resolved settings. Build with `Settings.load(**cli_overrides)`."""

    # allow_inf_nan=False: a NaN or infinite timeout, rate or share is refused by name
    # ("should be a finite number"), not let through to every comparison it would defeat
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str | None = None
    #: base URL for the chosen network provider (JUDGE_BASE_URL, config, --base-url)
    base_url: str | None = None
    #: OPENAI_BASE_URL: applies to openai:<model> only (OpenAI-compatible servers)
    openai_base_url: str | None = None
    timeout: float = Field(default=60.0, gt=0, le=86_400)
    retries: int = Field(default=4, ge=0, le=100)
    concurrency: int = Field(default=16, ge=1, le=10_000)
    rpm: float | None = Field(default=None, gt=0, le=1e9)
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
    #: the user prompts directory, laid over the built-in prompts (a file of the same rubric
    #: and version replaces the built-in one; others add); see judge.prompts.files
    prompts_dir: Path | None = None
    #: False: the user prompts directory alone (a package upgrade adds no prompt version)
    builtin_prompts: bool = True
    #: a jury (judge.grading.jury): the model specs that each grade every item (empty: one
    #: judge). JUDGE_JURY is comma-separated; the config file takes a list
    jury: tuple[str, ...] = ()
    #: ask each jury member (with no jury: the judge model) this many times; above 1 it is
    #: a self-consistency jury and needs a temperature above 0
    samples: int = Field(default=1, ge=1, le=32)
    #: the jury verdict's confidence: the winning label's vote share, or the jurors' mean
    #: probability of it
    jury_confidence: Literal["vote_share", "mean"] = "vote_share"
    #: the least winning vote share that is not a split (1.0: any dissent goes to review)
    jury_min_share: float = Field(default=1.0, ge=0.5, le=1.0)
    #: the rubrics the jury grades (empty: every rubric; others get the single judge)
    jury_rubrics: tuple[str, ...] = ()
    #: how an OpenAI-compatible judge is asked for structured output: "auto" finds the best
    #: mode the server takes (json_schema, then json_object, then prompt) from its first
    #: refusal and remembers it; any other value fixes it (judge.providers.response_format)
    response_format: Literal["auto", "json_schema", "json_object", "guided_json",
                             "prompt"] = "auto"
    #: the config file that was read, if any
    config_file: Path | None = None

    @field_validator("model", "base_url", "openai_base_url", "database_url",
                     "openai_api_key", "anthropic_api_key")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        return value

    @field_validator("samples", "concurrency", "retries", "max_tokens", "db_busy_timeout_ms",
                     mode="before")
    @classmethod
    def _no_bool_counts(cls, value: Any) -> Any:
        if isinstance(value, bool):  # TOML `samples = true` is not 1
            raise ValueError("expected a whole number, not true/false")
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
                if key == "prompts_dir" and isinstance(value, str) and value:
                    value = config_path.parent / value  # relative to the file, as above
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

    def with_run_params(self, stored: Mapping[str, Any] | None, *,
                        strict: bool = True) -> Settings:
        """These settings with the generation parameters a stored run was graded with
        (`model_params().to_dict()` on the run's config), so a resumed run or a worker asks
        as the run began. A value set here that differs from the run's, and is not the
        default, is refused (`strict`; a worker serving many runs takes each run's): the run
        would be graded two ways. None: unchanged."""
        if not stored:
            return self
        update: dict[str, Any] = {}
        for name in ("temperature", "seed", "max_tokens"):
            if name not in stored:
                continue
            was, now = stored[name], getattr(self, name)
            if strict and now != was and now != type(self).model_fields[name].default:
                raise ConfigError(f"the run was graded with {name} {was}; resume it with the "
                                  f"same {name} (or leave it unset), not {now}")
            update[name] = was
        return self.model_copy(update=update)


def prompts_dir(environ: Mapping[str, str] | None = None,
                cwd: Path | None = None) -> Path | None:
    """The user prompts directory: JUDGE_PROMPTS_DIR, else `prompts_dir` in the config file
    (relative to the file's directory), else None (the built-in prompts only).

    A function, not only a Settings field: prompt files are looked up by code that has no
    Settings at hand; this reads just the one field.
    """
    env = os.environ if environ is None else environ
    value = env.get(PROMPTS_DIR_VAR)
    if value:
        return Path(value)
    config = _config_path(env, cwd or Path.cwd())
    if config is None:
        return None
    named = _read_config(config).get("prompts_dir")
    if named is None or named == "":
        return None
    if not isinstance(named, str):
        raise ConfigError(f"{config}: [judge] field 'prompts_dir': expected a path string")
    return config.parent / named


def builtin_prompts(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> bool:
    """False when JUDGE_BUILTIN_PROMPTS (else judge.toml `builtin_prompts`) turns the built-in
    prompts off, so only the user prompts directory counts: a team that pins its own reviewed
    prompts gets no new default version from a package upgrade."""
    env = os.environ if environ is None else environ
    value = env.get(BUILTIN_PROMPTS_VAR)
    if value:
        return value.strip().lower() not in _OFF
    config = _config_path(env, cwd or Path.cwd())
    named = _read_config(config).get("builtin_prompts", True) if config is not None else True
    if not isinstance(named, bool):
        raise ConfigError(f"{config}: [judge] field 'builtin_prompts': expected true or false")
    return named


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
    if key in _LIST_FIELDS:
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    if key in ("rpm", "seed") and raw.strip().lower() in ("none", "off", "null"):
        return None
    if key == "builtin_prompts":
        return raw.strip().lower() not in _OFF
    if key == "response_format":
        return raw.strip().lower()
    return raw
