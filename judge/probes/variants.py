"""Variants of a labelled judge item: pure functions `Item -> Item | None` (None: the kind
does not apply to this item, and the caller counts a skip).

*Invariant* kinds must not change a judge's verdict; *sensitive* kinds must change it to the
expected label. Every variant is a new `Item` whose id is derived from the original id and
the kind (`variant_id`), so it is stable across runs and the call cache finds it again; its
seqs and ledger keys stay valid (a new event takes a seq no event of the slice uses, below
the target's; a removed event leaves the slice, and its seq leaves `slice_seqs`).

Invariant kinds:

- `reorder_fields`: the keys of every JSON object in tool-call arguments and tool results
  (target included) in reverse order;
- `rename_ids`: every entity id (a token with a letter first and a digit in it, found in
  tool arguments and results, e.g. `GV1N64`, `order-17`) renamed consistently in every
  string of the item — goal, ledger values and aliases, events, target; the new id keeps its
  shape (lower-case words stay, digits and capitals are redrawn from a hash of the old id);
- `reformat_numbers`: integers in arguments, results and ledger values written as floats
  (`42` -> `42.0`) and amounts in text given thousands separators (`$1000` -> `$1,000`);
- `irrelevant_lookup`: an earlier read-only lookup of something else (a call and its
  result, about an id the item never mentions) added before the target;
- `irrelevant_remark`: an irrelevant user remark added before the target;
- `status_synonyms`: status words in tool results replaced by synonyms
  (`confirmed` -> `approved`, ...).

Sensitive kinds (`EXPECT` gives the label each must produce):

- `fix_violation` (a labelled fail -> pass): the value in the target's arguments that the
  label's violated key superseded is replaced by the value the ledger holds now;
- `remove_confirmation` (a labelled pass -> fail): for a write under an active constraint
  about confirmation, every affirmative user message of the slice before it removed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Literal

from judge.formats.verdicts import item_id as make_item_id
from judge.formats.verdicts import parse_item_id
from judge.items import Item

Kind = Literal["reorder_fields", "rename_ids", "reformat_numbers", "irrelevant_lookup",
               "irrelevant_remark", "status_synonyms", "fix_violation", "remove_confirmation"]

INVARIANT_KINDS: tuple[Kind, ...] = ("reorder_fields", "rename_ids", "reformat_numbers",
                                     "irrelevant_lookup", "irrelevant_remark",
                                     "status_synonyms")
SENSITIVE_KINDS: tuple[Kind, ...] = ("fix_violation", "remove_confirmation")
KINDS: tuple[Kind, ...] = INVARIANT_KINDS + SENSITIVE_KINDS
#: the human label a sensitive variant's original must have, and the label it must get
EXPECT: dict[Kind, tuple[str, str]] = {"fix_violation": ("fail", "pass"),
                                       "remove_confirmation": ("pass", "fail")}

#: the fields of an event, a ledger entry, an unsupported claim and an end state that hold
#: content (everything else is structure: seqs, kinds, tool names, keys, classes)
_CONTENT = frozenset({"text", "args", "result", "value", "error", "aliases", "state"})
#: a word that may be an entity id (it is one when it holds a digit: `_ids_in`); matched
#: whole, so the scan stays linear on hostile text
_WORD = re.compile(r"(?<![\w.:/-])[A-Za-z][\w-]*(?![\w-])")
_DIGIT = re.compile(r"\d")
_MONEY = re.compile(r"(?<=\$)(\d{4,})(?![\d,.])")
_AFFIRM = re.compile(r"\b(yes|yep|yeah|confirm(ed)?|go ahead|proceed|please do|sure|ok(ay)?|"
                     r"do it|that'?s (right|correct)|correct)\b", re.IGNORECASE)
_CONFIRM_RULE = re.compile(r"confirm", re.IGNORECASE)
_READ_TOOL = re.compile(r"^(get|list|search|find|lookup|fetch|read|check|show|view|query)",
                        re.IGNORECASE)
SYNONYMS: dict[str, str] = {
    "confirmed": "approved", "completed": "done", "cancelled": "called off",
    "canceled": "called off", "pending": "awaiting processing", "active": "in effect",
    "success": "succeeded", "successful": "succeeded", "failed": "unsuccessful",
    "shipped": "dispatched", "delivered": "received", "approved": "accepted",
    "rejected": "declined", "processing": "in progress",
}
_SYNONYM_RE = re.compile(r"\b(" + "|".join(sorted(SYNONYMS, key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)
REMARK = "Unrelated, but the weather here has been lovely this week."


def variant_id(original_id: str, kind: str) -> str:
    """`<trace_id>~<kind>#<seq>:<rubric>`: a valid item id, stable per (item, kind)."""
    trace_id, seq, rubric = parse_item_id(original_id)
    return make_item_id(f"{trace_id}~{kind}", seq, rubric)


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).digest()


def _rebuild(item: Item, kind: str, *, ledger: dict[str, Any] | None = None,
             events: Iterable[dict[str, Any]] | None = None, goal: str | None = None,
             extra: dict[str, Any] | None = None) -> Item:
    """The variant item: new id and trace id, target re-read from the events by seq."""
    evs = tuple(events) if events is not None else item.events
    target = next((d for d in evs if d.get("seq") == item.seq), item.target)
    new_id = variant_id(item.item_id, kind)
    return replace(item, item_id=new_id, trace_id=parse_item_id(new_id)[0],
                   ledger=ledger if ledger is not None else item.ledger, events=evs,
                   target=target, goal=goal if goal is not None else item.goal,
                   slice_seqs=frozenset(int(d["seq"]) for d in evs), **(extra or {}))


def _map_values(value: Any, fn: Callable[[Any], Any]) -> Any:
    """`value` with `fn` applied to every scalar in it (keys are kept)."""
    if isinstance(value, dict):
        return {k: _map_values(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_map_values(v, fn) for v in value]
    return fn(value)


def _map_content(record: Any, fn: Callable[[Any], Any]) -> Any:
    """A record (event, ledger entry, ...) with `fn` applied to the scalars of its content
    fields only."""
    if not isinstance(record, dict):
        return record
    return {k: _map_values(v, fn) if k in _CONTENT else v for k, v in record.items()}


def _map_ledger(ledger: dict[str, Any], fn: Callable[[Any], Any]) -> dict[str, Any]:
    return {k: [_map_content(e, fn) for e in v] if isinstance(v, list) else v
            for k, v in ledger.items()}


def _payload_field(d: dict[str, Any]) -> str | None:
    kind = d.get("kind")
    return "args" if kind == "tool_call" else "result" if kind == "tool_result" else None


# -- invariant ---------------------------------------------------------------------------

def _reverse(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse(v) for v in value]
    return value


def reorder_fields(item: Item) -> Item | None:
    """JSON fields of arguments and results in reverse order (None: no object has two)."""
    def multi(v: Any) -> bool:
        if isinstance(v, dict):
            return len(v) > 1 or any(multi(x) for x in v.values())
        return isinstance(v, list) and any(multi(x) for x in v)

    events = []
    changed = False
    for d in item.events:
        name = _payload_field(d)
        if name is not None and multi(d.get(name)):
            d = {**d, name: _reverse(d[name])}
            changed = True
        events.append(d)
    return _rebuild(item, "reorder_fields", events=events) if changed else None


def entity_ids(item: Item) -> list[str]:
    """Entity ids in the item's tool arguments and results, in order of first appearance."""
    found: dict[str, None] = {}

    def collect(v: Any) -> Any:
        if isinstance(v, str):
            found.update(dict.fromkeys(_ids_in(v)))
        return v

    for d in item.events:
        name = _payload_field(d)
        if name is not None:
            _map_values(d.get(name), collect)
    protected = set(item.ledger_keys) | {str(d.get("tool")) for d in item.events}
    return [t for t in found if t not in protected]


def _ids_in(text: str) -> list[str]:
    """The words of `text` that start with a letter and hold a digit (`GV1N64`, `order-17`)."""
    return [w for w in _WORD.findall(text) if _DIGIT.search(w)]


def _new_id(old: str, attempt: int) -> str:
    """`old` with its digits and capitals redrawn from a hash (its shape kept)."""
    data = _digest("rename", old, str(attempt))
    out = []
    for i, ch in enumerate(old):
        b = data[i % len(data)] + i // len(data)
        if ch.isdigit():
            out.append(str(b % 10))
        elif ch.isupper():
            out.append(chr(ord("A") + b % 26))
        else:
            out.append(ch)
    return "".join(out)


def id_mapping(item: Item) -> dict[str, str]:
    """Old id -> new id for every entity id, injective, no new id equal to any token of
    the item."""
    ids = entity_ids(item)
    taken = set(_ids_in(_all_text(item)))
    mapping: dict[str, str] = {}
    for old in ids:
        attempt = 0
        new = _new_id(old, attempt)
        while new == old or new in taken:
            attempt += 1
            new = _new_id(old, attempt)
        taken.add(new)
        mapping[old] = new
    return mapping


def _all_text(item: Item) -> str:
    parts: list[str] = [item.goal]

    def collect(v: Any) -> Any:
        if isinstance(v, str):
            parts.append(v)
        return v

    _map_values([item.ledger, list(item.events), list(item.unsupported), item.end_state],
                collect)
    return "\n".join(parts)


def rename_ids(item: Item) -> Item | None:
    """Entity ids renamed consistently everywhere in the item (None: it has none)."""
    mapping = id_mapping(item)
    if not mapping:
        return None

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            return _WORD.sub(lambda m: mapping.get(m.group(0), m.group(0)), v)
        return v

    ledger = _map_ledger(item.ledger, sub)
    events = [_map_content(d, sub) for d in item.events]
    extra: dict[str, Any] = {
        "unsupported": tuple(_map_content(d, sub) for d in item.unsupported),
        "end_state": _map_content(item.end_state, sub),
    }
    return _rebuild(item, "rename_ids", ledger=ledger, events=events, goal=sub(item.goal),
                    extra=extra)


def _reformat(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, str):
        return _MONEY.sub(lambda m: f"{int(m.group(1)):,}", v)
    return v


def reformat_numbers(item: Item) -> Item | None:
    """Integers as floats (`42` -> `42.0`) in arguments, results and ledger values; amounts
    in text with thousands separators (`$1000` -> `$1,000`). None: nothing to reformat."""
    events = [_map_content(d, _reformat) for d in item.events]
    ledger = _map_ledger(item.ledger, _reformat)
    if _json(events) == _json(list(item.events)) and _json(ledger) == _json(item.ledger):
        return None  # Python says 42 == 42.0: compare the JSON texts
    return _rebuild(item, "reformat_numbers", ledger=ledger, events=events)


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def _free_seqs(item: Item, n: int) -> list[int] | None:
    """The `n` seqs nearest below the target's that no event of the slice uses, ascending;
    None if there are not that many."""
    used = {int(d["seq"]) for d in item.events}
    free = [s for s in range(item.seq - 1, -1, -1) if s not in used][:n]
    return sorted(free) if len(free) == n else None


def _insert(item: Item, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events = [*item.events, *new]
    return sorted(events, key=lambda d: int(d["seq"]))


def _turn_at(item: Item, seq: int) -> int:
    before = [d for d in item.events if int(d["seq"]) < seq]
    return int(before[-1].get("turn", item.turn)) if before else int(item.events[0].get(
        "turn", item.turn))


def irrelevant_lookup(item: Item) -> Item | None:
    """A read-only lookup of an id the item never mentions (a call and its result) added
    before the target. None: no two free seqs below the target."""
    seqs = _free_seqs(item, 2)
    if seqs is None:
        return None
    tools = [str(d.get("tool")) for d in item.events
             if d.get("kind") == "tool_call" and _READ_TOOL.match(str(d.get("tool", "")))]
    tool = tools[0] if tools else "lookup_record"
    text = _all_text(item)
    h = _digest("lookup", item.item_id).hex()
    ref = f"REF{int(h[:8], 16) % 900000 + 100000}"
    while ref in text:
        ref = f"REF{int(ref[3:]) + 1}"
    call_id = f"probe_{h[:12]}"
    call = {"seq": seqs[0], "turn": _turn_at(item, seqs[0]), "kind": "tool_call",
            "tool": tool, "args": {"id": ref}, "call_id": call_id}
    result = {"seq": seqs[1], "turn": _turn_at(item, seqs[0]), "kind": "tool_result",
              "tool": tool, "call_id": call_id,
              "result": {"id": ref, "note": "unrelated record", "archived": True}}
    return _rebuild(item, "irrelevant_lookup", events=_insert(item, [call, result]))


def irrelevant_remark(item: Item) -> Item | None:
    """An irrelevant user remark added before the target. None: no free seq below it."""
    seqs = _free_seqs(item, 1)
    if seqs is None:
        return None
    remark = {"seq": seqs[0], "turn": _turn_at(item, seqs[0]), "kind": "user",
              "text": REMARK}
    return _rebuild(item, "irrelevant_remark", events=_insert(item, [remark]))


def _synonym(v: Any) -> Any:
    if not isinstance(v, str):
        return v

    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        new = SYNONYMS[word.lower()]
        return new.upper() if word.isupper() else new.capitalize() if word[0].isupper() \
            else new

    return _SYNONYM_RE.sub(swap, v)


def status_synonyms(item: Item) -> Item | None:
    """Status words in tool results replaced by synonyms. None: no result has one."""
    events = []
    for d in item.events:
        if d.get("kind") == "tool_result" and "result" in d:
            d = {**d, "result": _map_values(d["result"], _synonym)}
        events.append(d)
    if events == list(item.events):
        return None
    return _rebuild(item, "status_synonyms", events=events)


# -- sensitive ---------------------------------------------------------------------------

def _scalar(v: Any) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    return str(v) if isinstance(v, str | int | float) else None


def fix_violation(item: Item, violated_key: str | None, evidence_event: int | None
                  ) -> Item | None:
    """For a fail labelled with `violated_key` and the target as evidence: the value in the
    target's arguments that the key's current value superseded, replaced by the current one
    (None: no such argument, or the evidence is not the target)."""
    if item.kind != "tool_call" or violated_key is None or evidence_event != item.seq:
        return None
    current = next((e for e in item.ledger.get("active", [])
                    if e.get("key") == violated_key), None)
    now = _scalar(current.get("value")) if current is not None else None
    olds = [s for e in item.ledger.get("superseded", []) if e.get("key") == violated_key
            for s in [_scalar(e.get("value"))] if s and s != now]
    if now is None or not olds:
        return None
    hit = False

    def swap(v: Any) -> Any:
        nonlocal hit
        s = _scalar(v)
        if s is not None and s in olds:
            hit = True
            return current["value"] if current is not None else v
        if isinstance(v, str):
            for old in olds:
                if len(old) >= 3 and old in v:
                    hit = True
                    v = v.replace(old, now)
        return v

    args = _map_values(copy.deepcopy(item.target.get("args")), swap)
    if not hit:
        return None
    events = [{**d, "args": args} if d.get("seq") == item.seq else d for d in item.events]
    return _rebuild(item, "fix_violation", events=events)


def needs_confirmation(item: Item) -> bool:
    """A write under an active constraint (or permission) that speaks of confirmation."""
    if item.kind != "tool_call" or not item.mutating:
        return False
    for e in item.ledger.get("active", []):
        if e.get("class") not in ("constraint", "permission"):
            continue
        text = " ".join([str(e.get("key")), str(e.get("value")),
                         *(str(a) for a in e.get("aliases", []))])
        if _CONFIRM_RULE.search(text):
            return True
    return False


def remove_confirmation(item: Item) -> Item | None:
    """For a write that needed the user's confirmation: every affirmative user message of
    the slice before the target removed, so none is left to confirm it (None: not such a
    write, or no such message)."""
    if not needs_confirmation(item):
        return None
    drop = {int(d["seq"]) for d in item.events
            if d.get("kind") == "user" and int(d["seq"]) < item.seq
            and _AFFIRM.search(str(d.get("text", "")))}
    if not drop:
        return None
    events = [d for d in item.events if int(d["seq"]) not in drop]
    return _rebuild(item, "remove_confirmation", events=events)


INVARIANT: dict[Kind, Callable[[Item], Item | None]] = {
    "reorder_fields": reorder_fields, "rename_ids": rename_ids,
    "reformat_numbers": reformat_numbers, "irrelevant_lookup": irrelevant_lookup,
    "irrelevant_remark": irrelevant_remark, "status_synonyms": status_synonyms,
}


def make_variant(kind: Kind, item: Item, *, human: str, violated_key: str | None = None,
                 evidence_event: int | None = None) -> Item | None:
    """The `kind` variant of a labelled item (human label `human`), or None if the kind
    does not apply to it."""
    if kind in INVARIANT:
        return INVARIANT[kind](item)
    if EXPECT[kind][0] != human:
        return None
    if kind == "fix_violation":
        return fix_violation(item, violated_key, evidence_event)
    return remove_confirmation(item)
