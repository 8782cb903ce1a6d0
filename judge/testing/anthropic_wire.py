"""The Anthropic wire format: Messages requests checked the way the real API checks them,
answers built as `anthropic.types.Message` (a `tool_use` block carrying the verdict when the
request forces a tool, else a text block), errors as `anthropic.types.ErrorResponse`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from anthropic.types import ErrorResponse, Message, TextBlock, ToolUseBlock, Usage

from judge.testing.faults import FakeRequest
from judge.testing.wire import Answer, ApiError, NewId, tokens

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CUSTOM_ID = NAME

#: error `type` by status; each one is a member of the SDK's ErrorResponse union (which has
#: no type for 413 request_too_large, so a 413 reads as an invalid request)
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               402: "billing_error", 403: "permission_error", 404: "not_found_error",
               413: "invalid_request_error", 429: "rate_limit_error", 504: "timeout_error",
               529: "overloaded_error"}


class AnthropicWire:
    api = "anthropic"
    counter = "messages"
    path = "/v1/messages"

    def check_auth(self, headers: Mapping[str, str], require_auth: bool) -> None:
        if "anthropic-version" not in headers:
            raise ApiError(400, "anthropic-version: header is required")
        if require_auth and not (headers.get("x-api-key") or headers.get("authorization")):
            raise ApiError(401, "x-api-key header is required")

    def validate(self, body: dict[str, Any]) -> None:
        validate_messages(body)

    def completion(self, request: FakeRequest, answer: Answer, new_id: NewId) -> Message:
        body = request.body
        choice = body.get("tool_choice") or {}
        tools = body.get("tools") or []
        content: list[TextBlock | ToolUseBlock]
        if answer.verdict is not None and tools and choice.get("type") in ("tool", "any"):
            name = choice.get("name") or tools[0]["name"]
            content = [ToolUseBlock(type="tool_use", id=new_id("toolu_fake"), name=name,
                                    input=answer.verdict)]
            stop = "tool_use"
        else:
            content = [TextBlock(type="text", text=answer.text)]
            stop = "end_turn"
        return Message(id=new_id("msg_fake"), type="message", role="assistant",
                       model=request.model or "", content=list(content), stop_reason=stop,
                       stop_sequence=None,
                       usage=Usage(input_tokens=tokens(request.text),
                                   output_tokens=tokens(answer.text)))

    def error_response(self, status: int, message: str) -> ErrorResponse:
        kind = ERROR_TYPES.get(status, "api_error")
        return ErrorResponse.model_validate(
            {"type": "error", "error": {"type": kind, "message": message}})

    def error(self, status: int, message: str, param: str | None = None) -> dict[str, Any]:
        return self.error_response(status, message).model_dump(mode="json", exclude_unset=True)


def validate_messages(body: dict[str, Any]) -> None:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ApiError(400, "max_tokens: Field required (a positive integer)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: at least one message is required")
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise ApiError(400, f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if not isinstance(message.get("content"), str | list):
            raise ApiError(400, f"messages.{i}.content: Input should be a string or a list")
    if messages[0].get("role") != "user":
        raise ApiError(400, "messages: first message must use the \"user\" role")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise ApiError(400, "system: Input should be a string or a list of text blocks")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float)
                                        and 0 <= temperature <= 1):
        raise ApiError(400, "temperature: must be between 0 and 1")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise ApiError(400, "tools: Input should be a list")
    names = []
    for i, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not NAME.match(name):
            raise ApiError(400, f"tools.{i}.name: String should match pattern "
                                "'^[a-zA-Z0-9_-]{1,64}$'")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ApiError(400, f"tools.{i}.input_schema: type must be 'object'")
        unions = union_parameters(schema)
        if tool.get("strict") and unions > MAX_UNION_PARAMETERS:
            raise ApiError(400, "Schemas contains too many parameters with union types "
                                f"({unions} parameters with type arrays or anyOf) which "
                                f"exceeds the limit: {MAX_UNION_PARAMETERS}")
        names.append(name)
    choice = body.get("tool_choice")
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise ApiError(400, "tool_choice.type: must be auto, any, tool or none")
    if kind in ("any", "tool") and not tools:
        raise ApiError(400, "tool_choice: requires tools")
    if kind == "tool" and choice.get("name") not in names:
        raise ApiError(400, f"tool_choice.name: no tool named {choice.get('name')!r}")


#: strict tools: at most this many parameters with union types (anyOf or type arrays)
MAX_UNION_PARAMETERS = 16


def union_parameters(schema: Any) -> int:
    """Parameters with union types in a schema, as Anthropic's strict tools count them."""
    if isinstance(schema, list):
        return sum(union_parameters(s) for s in schema)
    if not isinstance(schema, dict):
        return 0
    kind = schema.get("type")
    own = 1 if "anyOf" in schema or (isinstance(kind, list) and len(kind) > 1) else 0
    return own + sum(union_parameters(v) for v in schema.values()
                     if isinstance(v, dict | list))
