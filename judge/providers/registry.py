"""Model specs to providers: a spec's prefix names a provider module, imported when used.

Specs: `openai:<model>` (also any OpenAI-compatible server through a base URL),
`anthropic:<model>`, `heuristic` (offline baseline), `scripted` / `scripted:<file.jsonl>`
(test provider on the production path).

This module knows prefixes and where their classes live, nothing else: each provider class
declares its forms, how settings build it (`from_settings`), when it is the default
(`default_spec`) and its batch client (see `judge.providers.base.Provider`). Provider
modules import their SDK only when a provider is built; a missing SDK (any ImportError of a
package outside judge) becomes a one-line install hint.
"""

from __future__ import annotations

from importlib import import_module

from judge.errors import ConfigError
from judge.providers.base import Provider
from judge.settings import Settings

#: spec prefix -> "module:Class", in the order `default_model_spec` asks them
PROVIDERS: dict[str, str] = {
    "openai": "judge.providers.openai_provider:OpenAIProvider",
    "anthropic": "judge.providers.anthropic_provider:AnthropicProvider",
    "heuristic": "judge.providers.heuristic:HeuristicProvider",
    "scripted": "judge.providers.scripted:ScriptedProvider",
}


def provider_class(prefix: str, spec: str | None = None) -> type[Provider] | None:
    """The class registered for `prefix` (its module imported now), or None."""
    target = PROVIDERS.get(prefix)
    if target is None:
        return None
    module, _, name = target.partition(":")
    try:
        cls: type[Provider] = getattr(import_module(module), name)
    except ImportError as exc:
        hint = _install_hint(spec or prefix, exc)
        if hint is None:
            raise
        raise hint from None
    return cls


def valid_forms() -> list[str]:
    """Every spec form of every registered provider, for messages."""
    forms: list[str] = []
    for prefix in PROVIDERS:
        try:
            cls = provider_class(prefix)
        except ConfigError:
            forms.append(f"{prefix}:…")
            continue
        forms.extend(cls.forms if cls is not None else ())
    return forms


def make_provider(spec: str, settings: Settings) -> Provider:
    """Build the provider for `spec`; ConfigError (before any call) if it cannot work."""
    prefix, sep, argument = spec.strip().partition(":")
    cls = provider_class(prefix, spec)
    if cls is None or not _fits(cls, argument if sep else None):
        raise ConfigError(f"unknown model spec '{spec}' "
                          f"(valid forms: {', '.join(valid_forms())})")
    try:
        return cls.from_settings(argument if sep else None, settings)
    except ImportError as exc:
        hint = _install_hint(spec, exc)
        if hint is None:
            raise
        raise hint from None


def default_model_spec(settings: Settings) -> str:
    """The judge used when none is named: JUDGE_MODEL / config; else the first provider
    whose settings are present (OpenAI when a key or a base URL is set; else Anthropic when
    its key is set); else the offline heuristic."""
    if settings.model:
        return settings.model
    for prefix in PROVIDERS:
        cls = provider_class(prefix)
        spec = cls.default_spec(settings) if cls is not None else None
        if spec is not None:
            return spec
    raise ConfigError("no provider can be the default judge")  # pragma: no cover


def batch_forms() -> list[str]:
    """The spec forms of providers that have a batch API, for messages."""
    out: list[str] = []
    for prefix in PROVIDERS:
        cls = provider_class(prefix)
        if cls is not None and cls.batch_client is not Provider.batch_client:
            out.extend(cls.forms)
    return out


def _fits(cls: type[Provider], argument: str | None) -> bool:
    """Does a spec with `argument` (None: no colon) match one of the class's forms?"""
    if argument is None:
        return cls.prefix in cls.forms
    return bool(argument) and any(f.startswith(cls.prefix + ":") for f in cls.forms)


def _install_hint(spec: str, exc: ImportError) -> ConfigError | None:
    """The install hint for a missing package; None when judge itself is broken."""
    package = (exc.name or "").split(".")[0]
    if not package or package == "judge":
        return None
    return ConfigError(f"model spec '{spec}' needs the {package} package: "
                       f"pip install '{package}'")
