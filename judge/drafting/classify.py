"""Guesses a draft makes about tools and values, each with the reason it gives a reviewer.

Which tools write (in this order, the first that applies decides):

1. the name hands off to a person (`transfer_to_human`, `escalate…`): neither read nor write;
2. the name's verb reads (`get_`, `list_`, `search_`, …): a read, whatever its results say
   (reads return statuses too: an order "delivered");
3. the name's verb mutates (`refund_`, `update_`, `send_`, …): a write;
4. otherwise (no known verb, or an ambiguous one: `run_`, `execute_`): a write when a
   successful result acknowledges a change (`{"status": "sent"}`, `{"success": true}`,
   "… has been created"), or when its arguments carry ids (it acts on an entity and nothing
   says it only reads); else unclassified, for the reviewer to decide.

Ids (for lookups and entities): a string or integer argument whose key names an id
(`id`, `orderId`, `payment_id`, `flight_number`, `path`, …), or a string that looks like one
(letters and digits, no spaces: `order-17`, `JG7FMM`, `gift_card_3481935`; dates are not).
"""

from __future__ import annotations

import re
from typing import Any

from judge.checks.matching import iter_scalars
from judge.drafting.yamltext import has_surrogate


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


READ_VERBS = _words("""
    get list search find fetch read lookup look query check view show describe count inspect
    retrieve browse calculate compute estimate think validate verify preview load status
    summarize summarise analyze analyse explain diff peek poll ping lint grep cat ls whoami
    """)
WRITE_VERBS = _words("""
    add append apply approve archive assign attach block book buy cancel change charge checkout
    close commit create deactivate decline delete deploy destroy disable drop edit email enable
    grant insert install invite issue kill link mark merge migrate modify move notify pay patch
    place post provision publish purchase push put rebook refund register reject release
    remove rename replace reply reserve reset restart restore revert revoke rollback rotate save
    scale schedule send set ship shutdown start stop submit suspend sync terminate transfer
    trigger truncate unblock uninstall unlink update upgrade upload upsert void withdraw write
    """)
AMBIGUOUS_VERBS = _words("run execute exec call invoke process handle perform do")
HANDOFF_WORDS = _words("human humans escalate escalation handoff operator")

ACK_WORDS = _words("""
    confirmed success succeeded successful created updated deleted removed cancelled canceled
    booked refunded sent saved applied posted written modified changed added charged paid
    restarted scheduled queued accepted approved issued transferred started stopped submitted
    published deployed done
    """)
_ACK_KEYS = ("status", "state", "result", "outcome")
_ACK_FLAGS = ("success", "ok", "updated", "created", "deleted", "done")
_ACK_TEXT = re.compile(
    r"\b(?:successfully|has been|have been|was|were)\s+(" + "|".join(sorted(ACK_WORDS)) + r")\b"
    r"|^\s*(" + "|".join(sorted(ACK_WORDS)) + r")\b", re.IGNORECASE)

_ID_KEY = re.compile(
    r"(?:^|[_\-.\s])(?:id|ids|uuid|guid|key|number|no|num|code|ref|reference|sku|slug|path|"
    r"file|filename|url|email|account|handle)$"
    r"|[a-z0-9](?:Id|Ids|ID|IDs|Uuid|Number|Num|Code|Ref|Key|Path|Email)$",
    re.IGNORECASE)
_ID_KEY_EXACT = frozenset({"id", "ids", "uuid", "guid", "sku", "slug", "path", "file",
                           "filename", "url", "email", "account", "key"})
_ID_VALUE = re.compile(r"(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_\-:./#@+]{2,127}")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_words(tool: str) -> list[str]:
    """The words of a tool name, lower-cased: `updateShippingAddress` → update, shipping,
    address; `get-order.v2` → get, order, v, 2."""
    return [w.lower() for w in _WORD.findall(tool)]


def name_verb(tool: str) -> tuple[str, str | None]:
    """(kind, verb) from the name alone: kind is `handoff`, `read`, `write`, `ambiguous` or
    `unknown`; the verb is the first known verb of the name."""
    words = name_words(tool)
    if HANDOFF_WORDS.intersection(words):
        return "handoff", next(w for w in words if w in HANDOFF_WORDS)
    for w in words:
        if w in READ_VERBS:
            return "read", w
        if w in WRITE_VERBS:
            return "write", w
        if w in AMBIGUOUS_VERBS:
            return "ambiguous", w
    return "unknown", None


def acknowledgement(result: Any) -> str | None:
    """What in a successful result says something changed (`status "sent"`), or None."""
    if isinstance(result, dict):
        for k in _ACK_KEYS:
            v = result.get(k)
            if isinstance(v, str) and v.strip().lower() in ACK_WORDS:
                return f'{k} "{v.strip()}"'
        for k in _ACK_FLAGS:
            if result.get(k) is True:
                return f"{k}: true"
        return None
    if isinstance(result, str):
        m = _ACK_TEXT.search(result[:2000])
        if m:
            return f'"{m.group(0).strip()}"'
    return None


def id_key(key: str) -> bool:
    return key.lower() in _ID_KEY_EXACT or _ID_KEY.search(key) is not None


def id_value(value: Any, key: str) -> bool:
    """Is this argument value an entity id (see the module docstring)?"""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return id_key(key)
    if (not isinstance(value, str) or not value or len(value) > 128 or value != value.strip()
            or has_surrogate(value)):  # (a scenario cannot hold it, so no rule can name it)
        return False
    if id_key(key):
        return True
    return _ID_VALUE.fullmatch(value) is not None and _DATE.match(value) is None


MAX_LEAVES = 200


def id_args(args: dict[str, Any]) -> list[tuple[str, str | int]]:
    """(dotted path, value) of every id in a call's arguments, at most `MAX_LEAVES` leaves
    looked at. Keys that a dotted path cannot address (empty, or holding a `.`) are skipped,
    since no rule could name them."""
    out: list[tuple[str, str | int]] = []
    stack: list[tuple[str, str, Any, int]] = [
        (k, k, v, 1) for k, v in reversed(list(args.items())) if _addressable(k)]
    seen = 0
    while stack and seen < MAX_LEAVES:
        path, key, value, depth = stack.pop()
        seen += 1
        if isinstance(value, dict):
            if depth < 6:
                stack.extend((f"{path}.{k}", k, v, depth + 1)
                             for k, v in reversed(list(value.items())) if _addressable(k))
        elif isinstance(value, list):
            if depth < 6:
                stack.extend((f"{path}.{i}", key, v, depth + 1)
                             for i, v in reversed(list(enumerate(value[:50]))))
        elif (isinstance(value, str | int)) and id_value(value, key):
            out.append((path, value))
    return out


def _addressable(key: object) -> bool:
    return isinstance(key, str) and key != "" and "." not in key and not has_surrogate(key)


def result_scalars(result: Any, limit: int) -> list[str | int | float]:
    """The scalars (and keys) of a result, walked as the lookup check walks them."""
    return list(iter_scalars(result, limit, keys=True))
