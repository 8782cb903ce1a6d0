"""Render one item under one prompt into a model-blind, injection-safe JudgeRequest.

Trace content (goal, ledger, events, target) goes into data blocks fenced as
`<<<DATA nonce=N name=X>>>` … `<<<END nonce=N>>>`. The nonce is derived from the prompt hash
and the block contents (so a rerun renders byte-identical input and hits the cache), and any
run of `<<<` inside content is rewritten, so content can neither guess nor forge a fence.
The candidate's identity and secrets are scrubbed first (see redact.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from judge.errors import ConfigError
from judge.items.model import Item
from judge.items.slice import dumps
from judge.prompts.files import VAR_RE, Prompt
from judge.prompts.redact import Redaction, Scrubber, escape_fences
from judge.providers.base import JudgeRequest, ModelParams

_STATUSES = ("active", "completed", "revoked", "failed", "expired")


def _format_value(v: Any) -> str:
    return v if isinstance(v, str) else dumps(v)


def event_line(d: dict[str, Any], scrub: Scrubber) -> str:
    """One event as one line: a header we write, then scrubbed, fence-escaped content."""
    kind = str(d.get("kind"))
    head = f"[seq {d.get('seq')} · turn {d.get('turn')}] {kind}"

    def clean(v: Any) -> str:
        return escape_fences(scrub.text(_format_value(scrub.value(v))))

    if kind in ("user", "assistant"):
        return f"{head}: {clean(d.get('text', ''))}"
    if kind == "tool_call":
        call = f" (call {clean(d['call_id'])})" if d.get("call_id") else ""
        return f"{head} {clean(d.get('tool', ''))}{call} args={clean(d.get('args', {}))}"
    if kind == "tool_result":
        call = f" (call {clean(d['call_id'])})" if d.get("call_id") else ""
        if d.get("error") is not None:
            return f"{head} {clean(d.get('tool', ''))}{call} ERROR: {clean(d['error'])}"
        return f"{head} {clean(d.get('tool', ''))}{call} result={clean(d.get('result'))}"
    if kind == "state_write":
        return f"{head} {clean(d.get('key', ''))} = {clean(d.get('value'))}"
    if kind == "summary":
        reason = f" ({clean(d['reason'])})" if d.get("reason") else ""
        return f"{head}{reason}: {clean(d.get('text', ''))}"
    return f"{head}: {clean({k: v for k, v in d.items() if k not in ('seq', 'turn')})}"


def events_text(events: tuple[dict[str, Any], ...], scrub: Scrubber,
                target_seq: int | None = None) -> str:
    """The slice, one line per event; the target is only referenced (it has its own block)."""
    lines: list[str] = []
    prev: int | None = None
    for d in events:
        seq = int(d.get("seq", 0))
        if prev is not None and seq > prev + 1:
            lines.append("[… earlier events not shown …]")
        if seq == target_seq:
            lines.append(f"[seq {seq} · turn {d.get('turn')}] {d.get('kind')}: the item under "
                         "review, shown in full in the target block")
        else:
            lines.append(event_line(d, scrub))
        prev = seq
    return "\n".join(lines)


def ledger_text(ledger: dict[str, Any], scrub: Scrubber) -> str:
    """The snapshot grouped by status, one entry per line; superseded values last."""
    out: list[str] = []
    for status in _STATUSES:
        entries = ledger.get(status) or []
        if not entries:
            continue
        out.append(f"{status}:")
        for e in entries:
            fields = {"key": e["key"], "class": e["class"], "value": e.get("value"),
                      "sensitivity": e["sensitivity"], "source": e["source"],
                      "since_turn": e["since_turn"]}
            if e.get("aliases"):
                fields["aliases"] = e["aliases"]
            out.append("- " + escape_fences(scrub.text(dumps(scrub.value(fields)))))
    olds = ledger.get("superseded") or []
    if olds:
        out.append("superseded (obsolete values, replaced by the active value of the key):")
        for s in olds:
            fields = {"key": s["key"], "old_value": s.get("value"), "set_turn": s["set_turn"],
                      "superseded_turn": s["superseded_turn"]}
            out.append("- " + escape_fences(scrub.text(dumps(scrub.value(fields)))))
    if not out:
        out.append("(the reviewed ledger has no entries at this point)")
    return "\n".join(out)


def _fence(name: str, nonce: str, body: str) -> str:
    return f"<<<DATA nonce={nonce} name={name}>>>\n{body}\n<<<END nonce={nonce}>>>"


def render(prompt: Prompt, item: Item, params: ModelParams = ModelParams(),
           redaction: Redaction | None = None, *, nonce: str | None = None) -> JudgeRequest:
    """The request for `item` under `prompt`: system + one user message, model-blind."""
    if prompt.rubric != item.rubric:
        raise ConfigError(f"prompt {prompt.path} is for rubric '{prompt.rubric}', "
                          f"not '{item.rubric}' (item {item.item_id})")
    data = [e.get(f) for e in (*item.events, item.target) for f in ("args", "result", "value")]
    data += [e.get("value") for s in _STATUSES for e in item.ledger.get(s, [])]
    scrub = Scrubber(redaction, item.candidate or {}, data)
    blocks = {
        "goal": escape_fences(scrub.text(item.goal)),
        "ledger": ledger_text(item.ledger, scrub),
        "events": events_text(item.events, scrub, item.seq),
        "target": event_line(item.target, scrub),
    }
    if nonce is None:
        h = hashlib.sha256(prompt.hash.encode())
        for name, body in blocks.items():
            h.update(b"\x00" + name.encode() + b"\x00" + body.encode("utf-8"))
        nonce = h.hexdigest()[:16]
    values: dict[str, str] = {name: _fence(name, nonce, body) for name, body in blocks.items()}
    values.update({
        "rubric": prompt.rubric,
        "rubric_labels": " or ".join(prompt.labels),
        "item_kind": "tool call" if item.kind == "tool_call" else "summary",
        "target_seq": str(item.seq),
        "ledger_keys": ", ".join(sorted(item.ledger_keys)) or "(none)",
        "event_seqs": ", ".join(str(s) for s in sorted(item.slice_seqs)),
        "nonce": nonce,
        "fence_open": f"<<<DATA nonce={nonce}",
        "fence_close": f"<<<END nonce={nonce}>>>",
    })

    def fill(template: str) -> str:
        return VAR_RE.sub(lambda m: values[m.group(1)], template)

    return JudgeRequest(
        item_id=item.item_id, system=fill(prompt.system),
        messages=({"role": "user", "content": fill(prompt.user)},),
        schema=prompt.schema, schema_name="verdict", params=params, item=item,
    )


REASK_TEXT = (
    "Your previous reply was not a valid verdict: {error}\n"
    "Reply again with only one JSON object that follows the schema: label, violated_key "
    "(a key listed in the ledger block, required for fail, null for pass), evidence_event "
    "(a seq of an event shown in the events block), confidence (a number from 0 to 1) "
    "and rationale."
)


def reask(request: JudgeRequest, completion: str, error: str) -> JudgeRequest:
    """The same request plus the invalid completion and the validation error, to ask again."""
    messages = (*request.messages,
                {"role": "assistant", "content": completion},
                {"role": "user", "content": REASK_TEXT.format(error=error)})
    return JudgeRequest(item_id=request.item_id, system=request.system, messages=messages,
                        schema=request.schema, schema_name=request.schema_name,
                        params=request.params, item=request.item)
