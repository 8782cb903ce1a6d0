"""OpenAI-compatible servers that are not OpenAI, as the fake server imitates them: how each
takes or refuses structured output (`FakeProviderServer(dialect=...)`).

A dialect checks a chat completions body the way that server does, before OpenAI's own
checks (`judge.testing.openai_wire.validate_chat`), and refuses with that server's status and
error body, verbatim where it was captured from the real server:

- `openai` (the default): OpenAI itself; json_schema (strict schemas checked), json_object,
  text.
- `llama-cpp-python`: llama-cpp-python's server (0.3.x, `python -m llama_cpp.server`):
  `response_format.type` must be text or json_object (with an optional `schema`, which it
  turns into a grammar); anything else is refused with HTTP 500 and the pydantic error its
  route handler wraps (captured from llama-cpp-python 0.3.36). Unknown fields such as vLLM's
  `guided_json` are accepted and ignored.
- `lm-studio`: LM Studio: json_object is refused with HTTP 400 and a string `error`
  ("'response_format.type' must be 'json_schema' or 'text'", as LM Studio 0.4 answers).
- `no-response-format`: a server that takes no `response_format` at all (HTTP 400 naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judge.testing.wire import ApiError

OPENAI = "openai"
LLAMA_CPP_PYTHON = "llama-cpp-python"
LM_STUDIO = "lm-studio"
NO_RESPONSE_FORMAT = "no-response-format"

#: llama-cpp-python's 500 for a response_format type it does not know ({input}: the type)
LLAMA_CPP_PYTHON_MESSAGE = (
    "1 validation error:\n"
    "  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': {input!r}, "
    "'ctx': {{'expected': \"'text' or 'json_object'\"}}}}\n\n"
    "  File \"/usr/lib/python3/site-packages/llama_cpp/server/app.py\", line 376, in "
    "create_chat_completion\n    POST /v1/chat/completions")


def _format_type(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    return str(fmt.get("type")) if isinstance(fmt, dict) else repr(fmt)


def _openai(body: dict[str, Any]) -> None:
    return None


def _llama_cpp_python(body: dict[str, Any]) -> None:
    kind = _format_type(body)
    if kind is not None and kind not in ("text", "json_object"):
        message = LLAMA_CPP_PYTHON_MESSAGE.format(input=kind)
        raise ApiError(500, message, body={"error": {
            "message": message, "type": "internal_server_error", "param": None,
            "code": None}})


def _lm_studio(body: dict[str, Any]) -> None:
    kind = _format_type(body)
    if kind is not None and kind not in ("text", "json_schema"):
        message = "'response_format.type' must be 'json_schema' or 'text'"
        raise ApiError(400, message, body={"error": message})


def _no_response_format(body: dict[str, Any]) -> None:
    if "response_format" in body:
        raise ApiError(400, "response_format is not supported by this server",
                       param="response_format")


DIALECTS: dict[str, Callable[[dict[str, Any]], None]] = {
    OPENAI: _openai,
    LLAMA_CPP_PYTHON: _llama_cpp_python,
    LM_STUDIO: _lm_studio,
    NO_RESPONSE_FORMAT: _no_response_format,
}


def check(dialect: str, body: dict[str, Any]) -> None:
    """Refuse `body` as the server `dialect` would (ApiError); None when it takes it."""
    try:
        rule = DIALECTS[dialect]
    except KeyError:
        raise ValueError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})") from None
    rule(body)
