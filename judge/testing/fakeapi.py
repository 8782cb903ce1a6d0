"""The wire formats the fake server speaks: OpenAI chat completions, Files and Batches;
Anthropic Messages and Message Batches. Requests are checked the way the real APIs would
(model present, messages shape, response_format / tools / tool_choice) and answered with a
verdict built from the request (see judge.testing.verdicts) unless a fault says otherwise."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections import Counter, deque
from datetime import UTC, datetime
from typing import Any

from judge.testing._http import HttpRequest, HttpResponse
from judge.testing.faults import FakeRequest, Reply, Responder
from judge.testing.verdicts import default_verdict, find_seq

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                          403: "permission_error", 404: "not_found_error",
                          413: "request_too_large", 429: "rate_limit_error",
                          529: "overloaded_error"}


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(status, json.dumps(obj).encode(), headers=headers or {})


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class FakeAPI:
    """State and handlers of one fake server. Thread-safe enough for one server loop plus
    readers and `enqueue` callers in other threads."""

    def __init__(self, *, latency: float = 0.0, responder: Responder | None = None,
                 batch_polls: int = 1, require_auth: bool = False,
                 record: bool = True) -> None:
        self.latency = latency
        self.responder = responder
        self.batch_polls = batch_polls
        self.require_auth = require_auth
        self.record = record
        self.base_url = ""
        self.requests: list[FakeRequest] = []
        self.counts: Counter[str] = Counter()
        self._queue: deque[Reply | dict[str, Any] | str | None] = deque()
        self._ids = itertools.count(1)
        self._gen_index = itertools.count()
        self._lock = threading.Lock()
        self.files: dict[str, dict[str, Any]] = {}
        self.file_data: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.message_batches: dict[str, dict[str, Any]] = {}
        self._polls: Counter[str] = Counter()
        self._batch_results: dict[str, list[dict[str, Any]]] = {}
        self._final_counts: dict[str, dict[str, int]] = {}

    # -- public helpers -------------------------------------------------------------------
    def enqueue(self, *replies: Reply | dict[str, Any] | str | None) -> None:
        """Answer the next generation requests with these, in order, before the responder."""
        self._queue.extend(replies)

    def stats(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "generations": self.counts["chat"]
                + self.counts["messages"], "queued": len(self._queue)}

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    # -- dispatch ------------------------------------------------------------------------
    async def handle(self, req: HttpRequest) -> HttpResponse:
        path, method = req.path, req.method
        anthropic = path.startswith("/v1/messages")
        try:
            if method == "POST" and path == "/v1/chat/completions":
                return await self._chat(req)
            if method == "POST" and path == "/v1/messages":
                return await self._messages(req)
            if path.startswith("/v1/messages/batches"):
                return self._message_batches(req)
            if path.startswith("/v1/files"):
                return self._files(req)
            if path.startswith("/v1/batches"):
                return self._batches(req)
            if method == "GET" and path == "/_fake/stats":
                return _json(200, self.stats())
            raise ApiError(404, f"no route for {method} {path}")
        except ApiError as exc:
            return self._error(exc.status, exc.message, anthropic=anthropic, param=exc.param)

    def _error(self, status: int, message: str, *, anthropic: bool, param: str | None = None,
               headers: dict[str, str] | None = None) -> HttpResponse:
        if anthropic:
            kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            kind = "invalid_request_error" if status < 500 else "server_error"
            if status == 429:
                kind = "rate_limit_exceeded"
            body = {"error": {"message": message, "type": kind, "param": param,
                              "code": kind if status == 429 else None}}
        return _json(status, body, headers)

    def _parse_body(self, req: HttpRequest) -> dict[str, Any]:
        try:
            body = json.loads(req.body)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "We could not parse the JSON body of your request.") from None
        if not isinstance(body, dict):
            raise ApiError(400, "request body must be a JSON object")
        return body

    def _check_auth(self, req: HttpRequest, anthropic: bool) -> None:
        if anthropic:
            if "anthropic-version" not in req.headers:
                raise ApiError(400, "anthropic-version: header is required")
            if self.require_auth and not (req.headers.get("x-api-key")
                                          or req.headers.get("authorization")):
                raise ApiError(401, "x-api-key header is required")
        elif self.require_auth and not req.headers.get("authorization", "").startswith("Bearer "):
            raise ApiError(401, "You didn't provide an API key.")

    def _record(self, api: str, req: HttpRequest, body: Any, index: int,
                batch_id: str | None = None) -> FakeRequest:
        fake = FakeRequest(api=api, method=req.method, path=req.path, headers=req.headers,
                           body=body, index=index, batch_id=batch_id)
        if self.record:
            self.requests.append(fake)
        return fake

    def _decide(self, fake: FakeRequest) -> Reply:
        try:
            reply = self._queue.popleft()
        except IndexError:
            reply = self.responder(fake) if self.responder is not None else None
        if isinstance(reply, Reply):
            return reply
        if isinstance(reply, dict):
            return Reply(verdict=reply)
        if isinstance(reply, str):
            return Reply(text=reply)
        return Reply()

    @staticmethod
    def _completion_text(fake: FakeRequest, reply: Reply) -> tuple[str, dict[str, Any] | None]:
        if reply.text is not None:
            return reply.text, None
        obj = default_verdict(fake.schema, seq=find_seq(fake.text))
        if reply.verdict:
            obj.update(reply.verdict)
        return json.dumps(obj), obj

    # -- OpenAI chat completions -------------------------------------------------------------
    async def _chat(self, req: HttpRequest) -> HttpResponse:
        self.counts["chat"] += 1
        self._check_auth(req, anthropic=False)
        body = self._parse_body(req)
        fake = self._record("openai", req, body, next(self._gen_index))
        validate_chat(body)
        reply = self._decide(fake)
        await self._wait(reply)
        if reply.disconnect:
            return HttpResponse(disconnect=True)
        if reply.status != 200:
            return self._error(reply.status, reply.message, anthropic=False,
                               headers=reply.headers)
        return _json(200, self._chat_completion(fake, reply), reply.headers)

    def _chat_completion(self, fake: FakeRequest, reply: Reply) -> dict[str, Any]:
        text, _ = self._completion_text(fake, reply)
        prompt_tokens, completion_tokens = _tokens(fake.text), _tokens(text)
        return {
            "id": self._new_id("chatcmpl-fake"), "object": "chat.completion",
            "created": int(time.time()), "model": fake.model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    async def _wait(self, reply: Reply) -> None:
        delay = self.latency + reply.hold
        if delay > 0:
            await asyncio.sleep(delay)

    # -- Anthropic messages --------------------------------------------------------------------
    async def _messages(self, req: HttpRequest) -> HttpResponse:
        self.counts["messages"] += 1
        self._check_auth(req, anthropic=True)
        body = self._parse_body(req)
        fake = self._record("anthropic", req, body, next(self._gen_index))
        validate_messages(body)
        reply = self._decide(fake)
        await self._wait(reply)
        if reply.disconnect:
            return HttpResponse(disconnect=True)
        if reply.status != 200:
            return self._error(reply.status, reply.message, anthropic=True,
                               headers=reply.headers)
        return _json(200, self._message(fake, reply), reply.headers)

    def _message(self, fake: FakeRequest, reply: Reply) -> dict[str, Any]:
        text, obj = self._completion_text(fake, reply)
        choice = fake.body.get("tool_choice") or {}
        tools = fake.body.get("tools") or []
        content: list[dict[str, Any]]
        if obj is not None and tools and choice.get("type") in ("tool", "any"):
            name = choice.get("name") or tools[0]["name"]
            content = [{"type": "tool_use", "id": self._new_id("toolu_fake"), "name": name,
                        "input": obj}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": text}]
            stop = "end_turn"
        return {"id": self._new_id("msg_fake"), "type": "message", "role": "assistant",
                "model": fake.model, "content": content, "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": _tokens(fake.text), "output_tokens": _tokens(text)}}

    # -- OpenAI Files and Batches ----------------------------------------------------------------
    def _files(self, req: HttpRequest) -> HttpResponse:
        self.counts["files"] += 1
        parts = req.path.strip("/").split("/")  # v1 files [id [content]]
        if req.method == "POST" and len(parts) == 2:
            fields = parse_multipart(req)
            data = fields.get("file")
            purpose = fields.get("purpose")
            if data is None or purpose is None:
                raise ApiError(400, "'file' and 'purpose' are required", param="file")
            if purpose[1] not in (b"batch", b"fine-tune", b"assistants", b"user_data", b"evals"):
                raise ApiError(400, f"invalid purpose {purpose[1]!r}", param="purpose")
            file_id = self._new_id("file-fake")
            obj = {"id": file_id, "object": "file", "bytes": len(data[1]),
                   "created_at": int(time.time()), "filename": data[0] or "upload.jsonl",
                   "purpose": purpose[1].decode(), "status": "processed"}
            self.files[file_id] = obj
            self.file_data[file_id] = data[1]
            return _json(200, obj)
        if req.method == "GET" and len(parts) >= 3:
            file_id = parts[2]
            if file_id not in self.files:
                raise ApiError(404, f"No such File object: {file_id}", param="id")
            if len(parts) == 4 and parts[3] == "content":
                return HttpResponse(200, self.file_data[file_id], "application/octet-stream")
            if len(parts) == 3:
                return _json(200, self.files[file_id])
        raise ApiError(404, f"no route for {req.method} {req.path}")

    def _batches(self, req: HttpRequest) -> HttpResponse:
        self.counts["batches"] += 1
        parts = req.path.strip("/").split("/")  # v1 batches [id [cancel]]
        if req.method == "POST" and len(parts) == 2:
            return self._create_batch(req, self._parse_body(req))
        if len(parts) >= 3:
            batch = self.batches.get(parts[2])
            if batch is None:
                raise ApiError(404, f"No batch found with id '{parts[2]}'")
            if req.method == "GET" and len(parts) == 3:
                self._advance_openai(batch)
                return _json(200, batch)
            if req.method == "POST" and parts[3:] == ["cancel"]:
                if batch["status"] not in ("completed", "failed", "expired"):
                    batch["status"] = "cancelled"
                    batch["cancelled_at"] = int(time.time())
                return _json(200, batch)
        raise ApiError(404, f"no route for {req.method} {req.path}")

    def _create_batch(self, req: HttpRequest, body: dict[str, Any]) -> HttpResponse:
        file_id = body.get("input_file_id")
        if file_id not in self.file_data:
            raise ApiError(400, f"input_file_id {file_id!r} not found", param="input_file_id")
        endpoint = body.get("endpoint")
        if endpoint != "/v1/chat/completions":
            raise ApiError(400, f"unsupported endpoint {endpoint!r}", param="endpoint")
        if body.get("completion_window") != "24h":
            raise ApiError(400, "completion_window must be '24h'", param="completion_window")
        lines = self._read_batch_file(self.file_data[file_id], endpoint)
        batch_id = self._new_id("batch_fake")
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in lines:
            body_line = line["body"]
            fake = self._record("openai", HttpRequest("POST", endpoint, {}, b""), body_line,
                                next(self._gen_index), batch_id)
            self.counts["batch_lines"] += 1
            entry: dict[str, Any] = {"id": self._new_id("batch_req_"),
                                     "custom_id": line["custom_id"], "error": None}
            try:
                validate_chat(body_line)
            except ApiError as exc:
                entry["response"] = {"status_code": exc.status, "request_id": entry["id"],
                                     "body": {"error": {"message": exc.message,
                                                        "type": "invalid_request_error"}}}
                errors.append(entry)
                continue
            reply = self._decide(fake)
            if reply.disconnect or reply.hold > 0:
                entry["response"] = None
                entry["error"] = {"code": "batch_expired",
                                  "message": "This request could not be executed before the "
                                             "completion window expired."}
                errors.append(entry)
            elif reply.status != 200:
                entry["response"] = {"status_code": reply.status, "request_id": entry["id"],
                                     "body": {"error": {"message": reply.message,
                                                        "type": "server_error"}}}
                errors.append(entry)
            else:
                entry["response"] = {"status_code": 200, "request_id": entry["id"],
                                     "body": self._chat_completion(fake, reply)}
                outputs.append(entry)
        now = int(time.time())
        batch: dict[str, Any] = {
            "id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None,
            "input_file_id": file_id, "completion_window": "24h", "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": now,
            "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
            "completed_at": None, "failed_at": None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[batch_id] = batch
        # results are not in input order on the real service either
        self._batch_results[batch_id] = [*reversed(outputs), *errors]
        return _json(200, batch)

    def _read_batch_file(self, data: bytes, endpoint: str) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, raw in enumerate(data.decode("utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                raise ApiError(400, f"line {number}: invalid JSON") from None
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
            if not isinstance(custom_id, str) or not custom_id:
                raise ApiError(400, f"line {number}: custom_id is required")
            if custom_id in seen:
                raise ApiError(400, f"line {number}: duplicate custom_id {custom_id!r}")
            seen.add(custom_id)
            if line.get("method") != "POST" or line.get("url") != endpoint:
                raise ApiError(400, f"line {number}: method/url must be POST {endpoint}")
            if not isinstance(line.get("body"), dict):
                raise ApiError(400, f"line {number}: body must be an object")
            lines.append(line)
        if not lines:
            raise ApiError(400, "the input file has no requests")
        return lines

    def _advance_openai(self, batch: dict[str, Any]) -> None:
        if batch["status"] in ("completed", "cancelled", "failed", "expired"):
            return
        self._polls[batch["id"]] += 1
        now = int(time.time())
        if self._polls[batch["id"]] <= self.batch_polls:
            batch["status"] = "in_progress"
            batch["in_progress_at"] = batch["in_progress_at"] or now
            return
        results = self._batch_results[batch["id"]]
        outputs = [r for r in results if r["response"] and r["response"]["status_code"] == 200]
        errors = [r for r in results if r not in outputs]
        if outputs:
            batch["output_file_id"] = self._store_jsonl(outputs, batch["id"] + "_output.jsonl")
        if errors:
            batch["error_file_id"] = self._store_jsonl(errors, batch["id"] + "_error.jsonl")
        batch.update(status="completed", finalizing_at=now, completed_at=now)
        batch["request_counts"] = {"total": len(results), "completed": len(outputs),
                                   "failed": len(errors)}

    def _store_jsonl(self, rows: list[dict[str, Any]], name: str) -> str:
        file_id = self._new_id("file-fake")
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(data),
                               "created_at": int(time.time()), "filename": name,
                               "purpose": "batch_output", "status": "processed"}
        self.file_data[file_id] = data
        return file_id

    # -- Anthropic Message Batches --------------------------------------------------------------
    def _message_batches(self, req: HttpRequest) -> HttpResponse:
        self.counts["message_batches"] += 1
        self._check_auth(req, anthropic=True)
        parts = req.path.strip("/").split("/")  # v1 messages batches [id [results|cancel]]
        if req.method == "POST" and len(parts) == 3:
            return self._create_message_batch(self._parse_body(req))
        if len(parts) >= 4:
            batch = self.message_batches.get(parts[3])
            if batch is None:
                raise ApiError(404, f"message batch {parts[3]!r} not found")
            if req.method == "GET" and len(parts) == 4:
                self._advance_anthropic(batch)
                return _json(200, batch)
            if req.method == "GET" and parts[4:] == ["results"]:
                if batch["processing_status"] != "ended":
                    raise ApiError(400, "batch is still processing; results are not ready")
                rows = self._batch_results[batch["id"]]
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                return HttpResponse(200, data, "application/binary")
        raise ApiError(404, f"no route for {req.method} {req.path}")

    def _create_message_batch(self, body: dict[str, Any]) -> HttpResponse:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise ApiError(400, "requests: a non-empty list is required")
        seen: set[str] = set()
        for i, entry in enumerate(requests):
            custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
            if not isinstance(custom_id, str) or not ANTHROPIC_CUSTOM_ID.match(custom_id):
                raise ApiError(400, f"requests.{i}.custom_id: String should match pattern "
                                    "'^[a-zA-Z0-9_-]{1,64}$'")
            if custom_id in seen:
                raise ApiError(400, f"requests.{i}.custom_id: duplicate {custom_id!r}")
            seen.add(custom_id)
            if not isinstance(entry.get("params"), dict):
                raise ApiError(400, f"requests.{i}.params: an object is required")
        batch_id = self._new_id("msgbatch_fake")
        rows: list[dict[str, Any]] = []
        counts = Counter[str]()
        for entry in requests:
            params = entry["params"]
            fake = self._record("anthropic", HttpRequest("POST", "/v1/messages", {}, b""),
                                params, next(self._gen_index), batch_id)
            self.counts["batch_lines"] += 1
            try:
                validate_messages(params)
            except ApiError as exc:
                result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": exc.message}}}
            else:
                reply = self._decide(fake)
                if reply.disconnect or reply.hold > 0:
                    result = {"type": "expired"}
                elif reply.status != 200:
                    kind = _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
                    result = {"type": "errored", "error": {"type": "error", "error": {
                        "type": kind, "message": reply.message}}}
                else:
                    result = {"type": "succeeded", "message": self._message(fake, reply)}
            counts[result["type"]] += 1
            rows.append({"custom_id": entry["custom_id"], "result": result})
        now = time.time()
        self._batch_results[batch_id] = list(reversed(rows))
        batch = {"id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                 "request_counts": {"processing": len(rows), "succeeded": 0, "errored": 0,
                                    "canceled": 0, "expired": 0},
                 "created_at": _iso(now), "expires_at": _iso(now + 86400), "ended_at": None,
                 "archived_at": None, "cancel_initiated_at": None, "results_url": None}
        self.message_batches[batch_id] = batch
        self._final_counts[batch_id] = {"processing": 0, "succeeded": counts["succeeded"],
                                        "errored": counts["errored"], "canceled": 0,
                                        "expired": counts["expired"]}
        return _json(200, batch)

    def _advance_anthropic(self, batch: dict[str, Any]) -> None:
        if batch["processing_status"] == "ended":
            return
        self._polls[batch["id"]] += 1
        if self._polls[batch["id"]] <= self.batch_polls:
            return
        batch.update(processing_status="ended", ended_at=_iso(time.time()),
                     request_counts=self._final_counts[batch["id"]],
                     results_url=f"{self.base_url}/v1/messages/batches/{batch['id']}/results")


# -- request checks, as the real APIs make them -------------------------------------------------
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
        if role not in ("system", "developer", "user", "assistant", "tool"):
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
    if not isinstance(name, str) or not _NAME.match(name):
        raise ApiError(400, "response_format.json_schema.name must match ^[a-zA-Z0-9_-]{1,64}$",
                       param="response_format.json_schema.name")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise ApiError(400, "response_format.json_schema.schema must be an object",
                       param="response_format.json_schema.schema")
    if spec.get("strict"):
        problem = strict_schema_problem(schema, "schema")
        if problem:
            raise ApiError(400, f"Invalid schema for response_format '{name}': {problem}",
                           param="response_format")


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
        if not isinstance(name, str) or not _NAME.match(name):
            raise ApiError(400, f"tools.{i}.name: String should match pattern "
                                "'^[a-zA-Z0-9_-]{1,64}$'")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ApiError(400, f"tools.{i}.input_schema: type must be 'object'")
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


def parse_multipart(req: HttpRequest) -> dict[str, tuple[str | None, bytes]]:
    """Fields of a multipart/form-data body: name -> (filename, bytes)."""
    ctype = req.headers.get("content-type", "")
    match = re.search(r'boundary="?([^";]+)"?', ctype)
    if not ctype.startswith("multipart/form-data") or not match:
        raise ApiError(400, "expected multipart/form-data with a boundary")
    boundary = b"--" + match.group(1).encode()
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in req.body.split(boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, sep, data = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        if data.endswith(b"\r\n"):
            data = data[:-2]
        disposition = head.decode("latin-1")
        name = re.search(r'name="([^"]*)"', disposition)
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name:
            fields[name.group(1)] = (filename.group(1) if filename else None, data)
    return fields
