"""The OpenAI Responses API wire format (POST /v1/responses), enough for an agent loop: the
OpenAI Agents SDK's default model (`OpenAIResponsesModel`) talks to it.

A request is checked the way the real API checks the basics (a model; `input` a string or a
list of items); the answer is an `openai.types.responses.Response` whose output is one
assistant message (the reply's text) and/or one `function_call` item per tool call the
reply makes. Errors have the chat completions' shape (`{"error": {...}}`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from judge.testing.faults import FakeRequest
from judge.testing.openai_wire import OpenAIWire
from judge.testing.wire import Answer, ApiError, NewId, tokens


class ResponsesWire:
    api = "openai-responses"
    counter = "responses"
    path = "/v1/responses"

    def __init__(self) -> None:
        self._openai = OpenAIWire()

    def check_auth(self, headers: Mapping[str, str], require_auth: bool) -> None:
        self._openai.check_auth(headers, require_auth)

    def validate(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ApiError(400, "you must provide a model parameter", param="model")
        items = body.get("input")
        if not isinstance(items, str | list):
            raise ApiError(400, "'input' must be a string or an array of items", param="input")
        for i, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                raise ApiError(400, f"input[{i}] must be an object", param=f"input[{i}]")
        if body.get("stream"):
            raise ApiError(400, "the fake server does not stream responses", param="stream")

    def completion(self, request: FakeRequest, answer: Answer, new_id: NewId) -> BaseModel:
        from openai.types.responses import Response

        output: list[dict[str, Any]] = []
        if answer.text or not answer.tool_calls:
            output.append({"id": new_id("msg_fake"), "type": "message", "role": "assistant",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": answer.text,
                                        "annotations": []}]})
        for call in answer.tool_calls:
            output.append({"id": new_id("fc_fake"), "type": "function_call",
                           "call_id": call.id or new_id("call_fake"), "name": call.name,
                           "arguments": json.dumps(call.arguments), "status": "completed"})
        body = request.body if isinstance(request.body, dict) else {}
        prompt_tokens, completion_tokens = tokens(request.text), tokens(answer.text)
        response: BaseModel = Response.model_validate({
            "id": new_id("resp_fake"), "object": "response", "created_at": time.time(),
            "model": request.model or "", "output": output, "status": "completed",
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "tool_choice": body.get("tool_choice") or "auto",
            "tools": body.get("tools") or [],
            "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        })
        return response

    def error(self, status: int, message: str, param: str | None = None) -> dict[str, Any]:
        return self._openai.error(status, message, param)
