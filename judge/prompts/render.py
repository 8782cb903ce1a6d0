"""Render one item under one prompt into a model-blind, injection-safe JudgeRequest.

Trace content (goal, ledger, events, target) goes into data blocks fenced as
`<<<DATA nonce=N name=X>>>` … `<<<END nonce=N>>>`. The nonce is derived from the prompt hash
and the block contents (so a rerun renders byte-identical input and hits the cache), and any
run of `<<<` inside content is rewritten, so content can neither guess nor forge a fence.
The candidate's identity and secrets are scrubbed first (see redact.py).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from judge.errors import ConfigError
from judge.items.model import Item
from judge.items.slice import dumps
from judge.prompts.files import VAR_RE, Prompt
from judge.prompts.redact import Redaction, Scrubber, escape_fences, may_hold_secret_fields
from judge.providers.base import JudgeRequest, ModelParams

_STATUSES = ("active", "completed", "revoked", "failed", "expired")


_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def indent_lines(text: str) -> str:
    """Indent continuation lines of data, so content cannot fake an event or entry header
    (every real header starts a line; data never does)."""
    return _LINE_BREAKS.sub("\n    ", text) if not text.isprintable() else text


class Blocks:
    """Text built from literal segments (ours) and data segments (from the trace). Data
    segments are scrubbed together (`finish`) and fence-escaped; literals are left alone."""

    def __init__(self, scrub: Scrubber) -> None:
        self.scrub = scrub
        self.segs: list[str] = []
        self.data_at: list[int] = []

    def lit(self, s: str) -> None:
        self.segs.append(s)

    def data(self, v: Any) -> None:
        self.data_at.append(len(self.segs))
        if isinstance(v, str):
            self.segs.append(v)
            return
        text = dumps(v)
        if self.scrub.secrets and may_hold_secret_fields(text):
            redacted = self.scrub.value(v)
            if redacted is not v:
                text = dumps(redacted)
        self.segs.append(text)

    def keyed_value(self, key: Any, value: Any) -> Any:
        """`value` as held under `key`: redacted when the key names a secret."""
        return self.scrub.value({str(key): value})[str(key)]

    def finish(self) -> str:
        pieces = self.scrub.texts([self.segs[i] for i in self.data_at])
        for i, text in zip(self.data_at, pieces, strict=True):
            self.segs[i] = indent_lines(escape_fences(text))
        self.data_at = []
        return "".join(self.segs)


def add_event(b: Blocks, d: dict[str, Any]) -> None:
    """One event as one line: a header we write, then its (data) content."""
    kind = str(d.get("kind"))
    b.lit(f"[seq {d.get('seq')} · turn {d.get('turn')}] {kind}")
    if kind in ("tool_call", "tool_result"):
        b.lit(" ")
        b.data(d.get("tool", ""))
        if d.get("call_id"):
            b.lit(" (call ")
            b.data(d["call_id"])
            b.lit(")")
    if kind in ("user", "assistant"):
        b.lit(": ")
        b.data(d.get("text", ""))
    elif kind == "tool_call":
        b.lit(" args=")
        b.data(d.get("args", {}))
    elif kind == "tool_result":
        if d.get("error") is not None:
            b.lit(" ERROR: ")
            b.data(d["error"])
        else:
            b.lit(" result=")
            b.data(d.get("result"))
    elif kind == "state_write":
        b.lit(" ")
        b.data(d.get("key", ""))
        b.lit(" = ")
        b.data(b.keyed_value(d.get("key", ""), d.get("value")))
    elif kind == "summary":
        if d.get("reason"):
            b.lit(" (")
            b.data(d["reason"])
            b.lit(")")
        b.lit(": ")
        b.data(d.get("text", ""))
    else:
        b.lit(": ")
        b.data({k: v for k, v in d.items() if k not in ("seq", "turn", "kind")})


def add_events(b: Blocks, events: tuple[dict[str, Any], ...],
               target_seq: int | None = None) -> None:
    """The slice, one line per event; the target is only referenced (it has its own block)."""
    prev: int | None = None
    for d in events:
        seq = int(d.get("seq", 0))
        if prev is not None:
            b.lit("\n")
            if seq > prev + 1:
                b.lit("[… earlier events not shown …]\n")
        if seq == target_seq:
            b.lit(f"[seq {seq} · turn {d.get('turn')}] {d.get('kind')}: the item under "
                  "review, shown in full in the target block")
        else:
            add_event(b, d)
        prev = seq


def events_text(events: tuple[dict[str, Any], ...], scrub: Scrubber,
                target_seq: int | None = None) -> str:
    b = Blocks(scrub)
    add_events(b, events, target_seq)
    return b.finish()


def add_ledger(b: Blocks, ledger: dict[str, Any]) -> None:
    """The snapshot grouped by status, one entry per line; superseded values last.

    `- key (class, sensitivity, set by source at turn N): value | aliases: a; b`
    """
    lines = 0
    for status in _STATUSES:
        entries = ledger.get(status) or []
        if not entries:
            continue
        b.lit(("\n" if lines else "") + f"{status}:")
        lines += 1
        for e in entries:
            b.lit("\n- ")
            b.data(e["key"])
            b.lit(f" ({e['class']}, {e['sensitivity']}, set by {e['source']} at turn "
                  f"{e['since_turn']}): ")
            b.data(b.keyed_value(e["key"], e.get("value")))
            if e.get("aliases"):
                b.lit(" | aliases: ")
                b.data("; ".join(str(a) for a in e["aliases"]))
    olds = ledger.get("superseded") or []
    if olds:
        b.lit(("\n" if lines else "")
              + "superseded (obsolete values, replaced by the active value of the key):")
        lines += 1
        for o in olds:
            b.lit("\n- ")
            b.data(o["key"])
            b.lit(": ")
            b.data(o.get("value"))
            b.lit(f" (set at turn {o['set_turn']}, superseded at turn {o['superseded_turn']})")
    if not lines:
        b.lit("(the reviewed ledger has no entries at this point)")


def _fence(name: str, nonce: str, body: str) -> str:
    return f"<<<DATA nonce={nonce} name={name}>>>\n{body}\n<<<END nonce={nonce}>>>"


def render(prompt: Prompt, item: Item, params: ModelParams = ModelParams(),
           redaction: Redaction | None = None, *, nonce: str | None = None) -> JudgeRequest:
    """The request for `item` under `prompt`: system + one user message, model-blind."""
    if prompt.rubric != item.rubric:
        raise ConfigError(f"prompt {prompt.path} is for rubric '{prompt.rubric}', "
                          f"not '{item.rubric}' (item {item.item_id})")
    scrub = Scrubber(redaction, item.candidate or {})
    built: dict[str, Blocks] = {name: Blocks(scrub) for name in ("goal", "ledger", "events",
                                                                  "target")}
    # Structured values first (secret fields are found), then every text is scrubbed.
    add_event(built["target"], item.target)
    add_events(built["events"], item.events, item.seq)
    add_ledger(built["ledger"], item.ledger)
    built["goal"].data(item.goal)
    blocks = {name: b.finish() for name, b in built.items()}
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
