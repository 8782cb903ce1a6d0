from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from judge.errors import ConfigError
from judge.providers.base import JudgeRequest, ProviderFailure
from judge.providers.registry import default_model_spec, make_provider
from judge.providers.scripted import ScriptedProvider
from judge.settings import Settings


def _settings(**env: str) -> Settings:
    return Settings.load(environ=env, cwd=Path("/nonexistent"))


def test_default_model_spec_order() -> None:
    assert default_model_spec(_settings()) == "heuristic"
    assert default_model_spec(_settings(ANTHROPIC_API_KEY="k")).startswith("anthropic:")
    assert default_model_spec(_settings(OPENAI_API_KEY="k", ANTHROPIC_API_KEY="k")) == \
        "openai:gpt-4.1-mini"
    assert default_model_spec(_settings(OPENAI_BASE_URL="http://x/v1")) == "openai:gpt-4.1-mini"
    assert default_model_spec(_settings(JUDGE_MODEL="anthropic:m", OPENAI_API_KEY="k")) == \
        "anthropic:m"


@pytest.mark.parametrize("spec", ["gpt-4", "openai:", "anthropic", "heuristic:x", "vllm:m", ""])
def test_unknown_spec_lists_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"unknown model spec .*valid forms: openai:<model>"):
        make_provider(spec, _settings())


def test_network_specs_need_a_key_or_base_url() -> None:
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        make_provider("openai:gpt-4.1-mini", _settings())
    with pytest.raises(ConfigError, match="needs ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-x", _settings())


def test_openai_compatible_base_url_needs_no_key() -> None:
    provider = make_provider("openai:llama3", _settings(OPENAI_BASE_URL="http://127.0.0.1:1/v1"))
    assert provider.spec == "openai:llama3" and provider.remote
    assert str(provider.client.base_url).startswith("http://127.0.0.1:1/v1")  # type: ignore[attr-defined]


def test_missing_sdk_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delitem(sys.modules, "judge.providers.anthropic_provider", raising=False)
    with pytest.raises(ConfigError, match="needs the anthropic package: pip install"):
        make_provider("anthropic:claude-x", _settings(ANTHROPIC_API_KEY="k"))


async def test_scripted_default_and_file(tmp_path: Path) -> None:
    provider = make_provider("scripted", _settings())
    assert isinstance(provider, ScriptedProvider)
    req = JudgeRequest(item_id="t#4:r", system="s",
                       messages=({"role": "user", "content": 'events: {"seq": 3} {"seq": 4}'},),
                       schema={"required": ["label", "extra"],
                               "properties": {"extra": {"type": "integer"}}})
    verdict = json.loads((await provider.generate(req)).text)
    assert verdict["label"] == "pass" and verdict["evidence_event"] == 4 and verdict["extra"] == 0

    script = tmp_path / "r.jsonl"
    script.write_text('"raw text"\n\n{"label": "fail"}\n')
    provider = make_provider(f"scripted:{script}", _settings())
    assert (await provider.generate(req)).text == "raw text"
    assert json.loads((await provider.generate(req)).text) == {"label": "fail"}
    with pytest.raises(ProviderFailure, match="no response queued"):
        await provider.generate(req)
    script.write_text("{bad\n")
    with pytest.raises(ConfigError, match=r"r.jsonl:1: invalid JSON"):
        make_provider(f"scripted:{script}", _settings())


async def test_scripted_callable_and_enqueue() -> None:
    provider = ScriptedProvider(default=lambda r: r.item_id)
    provider.enqueue("first")
    req = JudgeRequest(item_id="a#1:r", system="s", messages=(), schema={})
    assert [(await provider.generate(req)).text for _ in range(2)] == ["first", "a#1:r"]
    assert provider.requests == [req, req]
