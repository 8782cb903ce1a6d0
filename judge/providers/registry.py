"""Model specs to providers. Each provider module (and its SDK) is imported only when used.

Specs: `openai:<model>` (also any OpenAI-compatible server through a base URL),
`anthropic:<model>`, `heuristic` (offline baseline), `scripted` / `scripted:<file.jsonl>`
(test provider on the production path).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from judge.errors import ConfigError
from judge.providers.base import Provider
from judge.settings import Settings

VALID_FORMS = ("openai:<model>", "anthropic:<model>", "heuristic", "scripted",
               "scripted:<responses.jsonl>")

DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"

#: placeholder key for OpenAI-compatible servers that need none (vLLM, Ollama, llama.cpp)
NO_KEY = "not-needed"


def default_model_spec(settings: Settings) -> str:
    """The judge used when none is named: JUDGE_MODEL / config; else OpenAI when a key or a
    base URL is set; else Anthropic when its key is set; else the offline heuristic."""
    if settings.model:
        return settings.model
    if settings.openai_api_key or settings.base_url or settings.openai_base_url:
        return f"openai:{DEFAULT_OPENAI_MODEL}"
    if settings.anthropic_api_key:
        return f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
    return "heuristic"


def make_provider(spec: str, settings: Settings) -> Provider:
    """Build the provider for `spec`; ConfigError (before any call) if it cannot work."""
    kind, sep, model = spec.strip().partition(":")
    if kind == "heuristic" and not sep:
        cls = _load("judge.providers.heuristic", "HeuristicProvider", spec)
        provider: Provider = cls()
        return provider
    if kind == "scripted":
        from judge.providers.scripted import ScriptedProvider, load_script
        from judge.testing.verdicts import default_completion

        if sep:
            if not model:
                raise ConfigError(f"model spec '{spec}': missing the responses file")
            return ScriptedProvider(load_script(Path(model)), default=None, spec=spec)
        return ScriptedProvider(default=default_completion)
    if kind == "openai" and sep and model:
        base_url = settings.base_url or settings.openai_base_url
        api_key = settings.openai_api_key
        if not api_key:
            if not base_url:
                raise ConfigError(f"model spec '{spec}' needs OPENAI_API_KEY, or a base URL "
                                  "(--base-url / OPENAI_BASE_URL) for an OpenAI-compatible server")
            api_key = NO_KEY
        cls = _load("judge.providers.openai_provider", "OpenAIProvider", spec, sdk="openai")
        provider = cls(model, api_key=api_key, base_url=base_url, timeout=settings.timeout)
        return provider
    if kind == "anthropic" and sep and model:
        api_key = settings.anthropic_api_key
        if not api_key:
            if not settings.base_url:
                raise ConfigError(f"model spec '{spec}' needs ANTHROPIC_API_KEY")
            api_key = NO_KEY
        cls = _load("judge.providers.anthropic_provider", "AnthropicProvider", spec,
                    sdk="anthropic")
        provider = cls(model, api_key=api_key, base_url=settings.base_url,
                       timeout=settings.timeout)
        return provider
    raise ConfigError(f"unknown model spec '{spec}' (valid forms: {', '.join(VALID_FORMS)})")


def _load(module: str, name: str, spec: str, sdk: str | None = None) -> Any:
    try:
        mod = import_module(module)
    except ImportError as exc:
        if sdk is not None and exc.name is not None and exc.name.split(".")[0] == sdk:
            raise ConfigError(f"model spec '{spec}' needs the {sdk} package: "
                              f"pip install '{sdk}'") from None
        if module.endswith(".heuristic") and exc.name == module:
            raise ConfigError(f"model spec '{spec}': the heuristic provider is not "
                              "available in this build") from None
        raise
    return getattr(mod, name)
