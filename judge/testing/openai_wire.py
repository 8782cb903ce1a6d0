"""The OpenAI wire format: chat completion requests checked the way the real API checks them,
answers built as `openai.types.chat.ChatCompletion`, errors as `openai.types.shared.ErrorObject`
inside `{"error": ...}`."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Mapping
from typing import Any

import orjson
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.shared import ErrorObject

from judge.testing import dialects
from judge.testing.faults import FakeRequest
from judge.testing.wire import Answer, ApiError, NewId, tokens

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ROLES = ("system", "developer", "user", "assistant", "tool")


class OpenAIWire:
    api = "openai"
    counter = "chat"
    path = "/v1/chat/completions"

    def __init__(self, dialect: str = dialects.OPENAI) -> None:
        dialects.check(dialect, {})  # an unknown dialect fails here, not at the first call
        #: the OpenAI-compatible server imitated (judge.testing.dialects)
        self.dialect = dialect

    def check_auth(self, headers: Mapping[str, str], require_auth: bool) -> None:
        if require_auth and not headers.get("authorization", "").startswith("Bearer "):
            raise ApiError(401, "You didn't provide an API key.")

    def validate(self, body: dict[str, Any]) -> None:
        dialects.check(self.dialect, body)
        validate_chat(body)

    def completion(self, request: FakeRequest, answer: Answer, new_id: NewId) -> ChatCompletion:
        prompt_tokens, completion_tokens = tokens(request.text), tokens(answer.text)
        calls = [{"id": c.id or new_id("call_fake"), "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                 for c in answer.tool_calls]
        message = ChatCompletionMessage.model_validate(
            {"role": "assistant", "refusal": None,
             "content": answer.text or (None if calls else ""),
             **({"tool_calls": calls} if calls else {})})
        return ChatCompletion(
            id=new_id("chatcmpl-fake"), object="chat.completion", created=int(time.time()),
            model=request.model or "", system_fingerprint="fp_fake",
            choices=[Choice(index=0, finish_reason="tool_calls" if calls else "stop",
                            logprobs=None, message=message)],
            usage=CompletionUsage(prompt_tokens=prompt_tokens,
                                  completion_tokens=completion_tokens,
                                  total_tokens=prompt_tokens + completion_tokens))

    def error(self, status: int, message: str, param: str | None = None) -> dict[str, Any]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        if status == 429:
            kind = "rate_limit_exceeded"
        error = ErrorObject(message=message, type=kind, param=param,
                            code=kind if status == 429 else None)
        return {"error": error.model_dump(mode="json", exclude_unset=True)}


def validate_chat(body: dict[str, Any]) -> None:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "you must provide a model parameter", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty array", param="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ApiError(400, f"messages[{i}] must be an object", param=f"messages[{i}]")
        role = message.get("role")
        if role not in ROLES:
            raise ApiError(400, f"Invalid value for 'role': {role!r}",
                           param=f"messages[{i}].role")
        content = message.get("content")
        if not isinstance(content, str | list) and not (role == "assistant" and content is None):
            raise ApiError(400, f"messages[{i}].content must be a string or an array",
                           param=f"messages[{i}].content")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float)
                                        and 0 <= temperature <= 2):
        raise ApiError(400, "temperature must be between 0 and 2", param="temperature")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is not None and not (isinstance(value, int) and value >= 1):
            raise ApiError(400, f"{key} must be a positive integer", param=key)
    seed = body.get("seed")
    if seed is not None and not isinstance(seed, int):
        raise ApiError(400, "seed must be an integer", param="seed")
    fmt = body.get("response_format")
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        raise ApiError(400, "response_format.type must be text, json_object or json_schema",
                       param="response_format.type")
    if fmt["type"] != "json_schema":
        return
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise ApiError(400, "response_format.json_schema is required",
                       param="response_format.json_schema")
    name = spec.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise ApiError(400, "response_format.json_schema.name must match ^[a-zA-Z0-9_-]{1,64}$",
                       param="response_format.json_schema.name")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise ApiError(400, "response_format.json_schema.schema must be an object",
                       param="response_format.json_schema.schema")
    if spec.get("strict"):
        problem = _strict_problem_of(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
        if problem:
            raise ApiError(400, f"Invalid schema for response_format '{name}': {problem}",
                           param="response_format")


@functools.lru_cache(maxsize=256)
def _strict_problem_of(schema_json: bytes) -> str | None:
    """strict_schema_problem and strict_limits_problem, once per distinct schema (a run
    sends few distinct ones, and the walk costs more than the rest of the request)."""
    schema = orjson.loads(schema_json)
    if isinstance(schema, dict) and "anyOf" in schema:
        return "In context=(), 'anyOf' is not permitted at the root of the schema."
    return strict_schema_problem(schema, "schema") or strict_limits_problem(schema)


#: OpenAI's documented structured-outputs limits
MAX_ENUM_VALUES = 1000
LARGE_STRING_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000
MAX_TOTAL_CHARS = 120_000


def strict_limits_problem(schema: Any) -> str | None:
    """What OpenAI strict mode refuses for size: more than MAX_ENUM_VALUES enum values in
    the schema, a string enum of more than LARGE_STRING_ENUM values longer than
    MAX_LARGE_ENUM_CHARS in all, more than MAX_TOTAL_CHARS characters in property names and
    enum values together."""
    enum_values = 0
    total_chars = 0
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        props = node.get("properties")
        if isinstance(props, dict):
            total_chars += sum(len(str(k)) for k in props)
            stack.extend(props.values())
        enum = node.get("enum")
        if isinstance(enum, list):
            enum_values += len(enum)
            strings = [v for v in enum if isinstance(v, str)]
            chars = sum(len(v) for v in strings)
            total_chars += chars
            if len(strings) > LARGE_STRING_ENUM and chars > MAX_LARGE_ENUM_CHARS:
                return (f"a string enum of {len(strings)} values has {chars} "
                        f"characters in all (at most {MAX_LARGE_ENUM_CHARS} for an enum of "
                        f"more than {LARGE_STRING_ENUM} values)")
        for key in ("items", "anyOf", "$defs", "definitions"):
            sub = node.get(key)
            if isinstance(sub, dict) and key in ("$defs", "definitions"):
                stack.extend(sub.values())
            elif sub is not None:
                stack.append(sub)
    if enum_values > MAX_ENUM_VALUES:
        return f"{enum_values} enum values (at most {MAX_ENUM_VALUES})"
    if total_chars > MAX_TOTAL_CHARS:
        return (f"{total_chars} characters in property names and enum values "
                f"(at most {MAX_TOTAL_CHARS})")
    return None


def strict_schema_problem(schema: Any, where: str) -> str | None:
    """What OpenAI strict mode would reject: objects must list every property as required and
    set additionalProperties to false."""
    if not isinstance(schema, dict):
        return None
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object:
        if schema.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied " \
                   "and to be false."
        props = schema.get("properties") or {}
        missing = sorted(set(props) - set(schema.get("required") or []))
        if missing:
            return f"In context={where}, 'required' is required to be supplied and to be an " \
                   f"array including every key in properties. Missing '{missing[0]}'."
        for key, sub in props.items():
            problem = strict_schema_problem(sub, f"{where}.properties.{key}")
            if problem:
                return problem
    for key in ("items", "anyOf", "oneOf", "allOf", "$defs", "definitions"):
        sub = schema.get(key)
        subs = sub.values() if isinstance(sub, dict) and key in ("$defs", "definitions") else (
            sub if isinstance(sub, list) else [sub])
        for i, item in enumerate(subs):
            problem = strict_schema_problem(item, f"{where}.{key}[{i}]")
            if problem:
                return problem
    return None
