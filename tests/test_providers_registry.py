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
    assert verdict["label"] == "pass" and verdict["evidence_event"] is None
    assert verdict["extra"] == 0

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


# --- each provider owns its registration; the registry only maps prefixes to modules --------

def test_each_spec_form_is_built_by_its_provider_from_settings(tmp_path: Path) -> None:
    from judge.providers.anthropic_provider import AnthropicProvider
    from judge.providers.base import NO_KEY
    from judge.providers.heuristic import DISPLAY_NAME, HeuristicProvider
    from judge.providers.openai_provider import OpenAIProvider

    openai = make_provider("openai:gpt-x", _settings(OPENAI_API_KEY="sk-1", JUDGE_TIMEOUT="7"))
    assert isinstance(openai, OpenAIProvider) and openai.spec == "openai:gpt-x"
    assert openai.client.api_key == "sk-1" and openai.client.timeout == 7.0
    assert openai.remote and openai.display_name == "openai:gpt-x"
    assert openai.token_field == "max_completion_tokens"
    # --base-url / JUDGE_BASE_URL wins over OPENAI_BASE_URL; a compatible server gets max_tokens
    compat = make_provider("openai:llama", _settings(JUDGE_BASE_URL="http://127.0.0.1:9/v1",
                                                     OPENAI_BASE_URL="http://127.0.0.1:8/v1"))
    assert isinstance(compat, OpenAIProvider) and compat.client.api_key == NO_KEY
    assert compat.display_name == "openai:llama at http://127.0.0.1:9/v1"
    assert compat.token_field == "max_tokens"

    claude = make_provider("anthropic:claude-x", _settings(ANTHROPIC_API_KEY="ak"))
    assert isinstance(claude, AnthropicProvider) and claude.spec == "anthropic:claude-x"
    assert claude.client.api_key == "ak" and claude.remote
    proxied = make_provider("anthropic:claude-x", _settings(JUDGE_BASE_URL="http://127.0.0.1:9"))
    assert isinstance(proxied, AnthropicProvider) and proxied.client.api_key == NO_KEY

    heuristic = make_provider(" heuristic ", _settings())
    assert isinstance(heuristic, HeuristicProvider) and heuristic.spec == "heuristic"
    assert heuristic.display_name == DISPLAY_NAME and not heuristic.remote

    script = tmp_path / "r.jsonl"
    script.write_text('"a"\n')
    scripted = make_provider(f"scripted:{script}", _settings())
    assert isinstance(scripted, ScriptedProvider) and scripted.spec == f"scripted:{script}"
    assert scripted.pending == 1 and scripted.default is None


def test_registry_entries_match_their_classes() -> None:
    from judge.providers.base import Provider
    from judge.providers.registry import PROVIDERS, provider_class, valid_forms

    for prefix in PROVIDERS:
        cls = provider_class(prefix)
        assert cls is not None and issubclass(cls, Provider)
        assert cls.prefix == prefix
        assert cls.forms and all(f == prefix or f.startswith(prefix + ":") for f in cls.forms)
        assert cls.from_settings.__func__ is not Provider.from_settings.__func__  # type: ignore[attr-defined]
    assert valid_forms() == ["openai:<model>", "anthropic:<model>", "heuristic", "scripted",
                             "scripted:<responses.jsonl>"]
    assert provider_class("vllm") is None


def test_an_empty_argument_is_an_unknown_spec() -> None:
    for spec in ("scripted:", "anthropic:", "openai: "):
        with pytest.raises(ConfigError, match=rf"unknown model spec '{spec}' \(valid forms: "):
            make_provider(spec, _settings(OPENAI_API_KEY="k", ANTHROPIC_API_KEY="k"))


def test_provider_modules_import_no_sdk() -> None:
    """Choosing and describing providers imports no SDK: each provider imports its SDK when
    it is built, so the registry can ask every class (forms, default) for free."""
    import subprocess

    code = ("import sys\n"
            "from judge.providers.registry import default_model_spec, valid_forms\n"
            "from judge.settings import Settings\n"
            "valid_forms()\n"
            "print(default_model_spec(Settings.load(environ={'OPENAI_API_KEY': 'k'})))\n"
            "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/").stdout.split("\n")
    assert out[:2] == ["openai:gpt-4.1-mini", "[]"]


@pytest.mark.parametrize(("sdk", "spec", "env"), [
    ("openai", "openai:gpt-x", {"OPENAI_API_KEY": "k"}),
    ("anthropic", "anthropic:claude-x", {"ANTHROPIC_API_KEY": "k"}),
])
def test_each_missing_sdk_gives_its_install_hint(monkeypatch: pytest.MonkeyPatch, sdk: str,
                                                 spec: str, env: dict[str, str]) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)
    with pytest.raises(ConfigError) as err:
        make_provider(spec, _settings(**env))
    assert str(err.value) == f"model spec '{spec}' needs the {sdk} package: pip install '{sdk}'"


class EchoProvider(ScriptedProvider):
    """A provider the registry has never heard of, registered by a test."""

    prefix = "echo"
    forms = ("echo:<text>",)

    @classmethod
    def from_settings(cls, argument: str | None, settings: Settings) -> EchoProvider:
        return cls(default=str(argument), spec=f"echo:{argument}", remote=False)


async def test_a_new_provider_needs_only_a_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.providers import registry

    monkeypatch.setitem(registry.PROVIDERS, "echo", f"{__name__}:EchoProvider")
    provider = make_provider("echo:hello", _settings())
    assert isinstance(provider, EchoProvider) and provider.spec == "echo:hello"
    req = JudgeRequest(item_id="a#1:r", system="s", messages=(), schema={})
    assert (await provider.generate(req)).text == "hello"
    with pytest.raises(ConfigError, match=r"valid forms: .*scripted:<responses.jsonl>, echo"):
        make_provider("echo", _settings())


def test_a_broken_judge_module_is_not_reported_as_a_missing_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.providers import registry

    monkeypatch.setitem(registry.PROVIDERS, "ghost", "judge.providers.no_such_module:Ghost")
    with pytest.raises(ImportError) as err:
        make_provider("ghost", _settings())
    assert not isinstance(err.value, ConfigError)
    assert err.value.name == "judge.providers.no_such_module"


async def test_scripted_default_is_a_valid_pass_for_a_rendered_request() -> None:
    from judge.items import extract_items
    from judge.ledger import load_scenario
    from judge.prompts import load_prompt, render
    from judge.trace import load_traces
    from judge.verdicts import parse_verdict

    scenario = Path(__file__).resolve().parent.parent / "examples/scenarios/refund-once"
    trace = load_traces([scenario / "fail-second-refund.json"])[0]
    item = extract_items(load_scenario(scenario), trace)[0]
    request = render(load_prompt(item.rubric), item)
    text = (await make_provider("scripted", _settings()).generate(request)).text
    verdict = parse_verdict(text, item, load_prompt(item.rubric), "scripted")
    assert (verdict.label, verdict.violated_key, verdict.evidence_event) == ("pass", None, None)


def test_building_an_sdk_provider_imports_no_sdk_until_it_is_prepared() -> None:
    """A run forks its checking child before the SDK's 0.5 s import (judge.pipeline.grade
    calls `prepare` after the fork): building the provider only checks the SDK is there;
    the endpoint and the client are the SDK's own once prepared."""
    import subprocess

    code = (
        "import sys\n"
        "from judge.providers.registry import make_provider\n"
        "from judge.settings import Settings\n"
        "s = Settings.load(environ={'OPENAI_BASE_URL': 'http://127.0.0.1:1/v1',"
        " 'ANTHROPIC_API_KEY': 'k'})\n"
        "o = make_provider('openai:m', s)\n"
        "a = make_provider('anthropic:c', s)\n"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
        "o.prepare(); a.prepare()\n"
        "import openai, anthropic\n"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
        "print(o.endpoint == str(openai.AsyncOpenAI(api_key='k',"
        " base_url='http://127.0.0.1:1/v1').base_url), o.response_format)\n"
        "print(a.endpoint == str(anthropic.AsyncAnthropic(api_key='k').base_url))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/").stdout.split("\n")
    assert out[:4] == ["[]", "['anthropic', 'openai']", "True json_schema", "True"]
