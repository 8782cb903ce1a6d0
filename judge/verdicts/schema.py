"""The JSON Schema a judge model must return (strict: every field required, no extras), and
each item's own narrowing of it.

Kept within what OpenAI strict structured outputs and Anthropic tool input schemas accept:
ranges are stated in descriptions and enforced by `parse_verdict`, not by `minimum`.

The item's own schema (`item_schema`): `violated_key` is one of the ledger keys the request
shows, or null, and `evidence_event` one of the seqs it shows, or null. A constrained decoder
(OpenAI strict mode, llama.cpp's grammar, vLLM, Ollama) then cannot name a key or a seq the
item does not have. Validation stays as strict as it is without it (judge.verdicts.validate):
the schema narrows what a model can say, it never decides what counts. A field whose list is
past the providers' documented limits (`LIMITS`) keeps the general definition, so a huge
ledger still gets a schema every provider accepts.

The decoder schema (`decoder_schema`), for grammar-constrained decoders that are not held to
OpenAI strict mode's subset (llama.cpp's JSON mode with a schema, vLLM's guided_json): the
union of what a valid verdict can be, a pass naming no key and no event, a fail naming one key
and one event of the item, and a confidence among CONFIDENCE_STEPS (their grammars cannot
bound a number any other way). What such a decoder writes is then a valid verdict by
construction; validation still decides.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.request import JudgeRequest

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {
            "type": "string", "enum": ["pass", "fail"],
            "description": "pass or fail under the rubric",
        },
        "violated_key": {
            "type": ["string", "null"],
            "description": "for fail: the ledger key the item violates (a key shown in the "
                           "ledger block); null for pass",
        },
        "evidence_event": {
            "type": ["integer", "null"],
            "description": "for fail: the seq of the shown event that shows the violation; "
                           "null for pass",
        },
        "confidence": {
            "type": "number",
            "description": "probability in [0, 1] that the label is right",
        },
        "rationale": {
            "type": "string",
            "description": "one or two sentences citing the key and event",
        },
    },
    "required": ["label", "violated_key", "evidence_event", "confidence", "rationale"],
    "additionalProperties": False,
}


def verdict_schema(labels: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A fresh copy of the verdict schema (optionally with a prompt's own label set)."""
    schema = copy.deepcopy(_SCHEMA)
    if labels:
        schema["properties"]["label"]["enum"] = list(labels)
    return schema


@dataclass(frozen=True)
class Limits:
    """What the strictest structured-output modes accept of enums (OpenAI's documented
    structured-outputs limits; Anthropic's strict tools accept at most 16 union-typed
    parameters, and an item's schema has two)."""

    #: enum values across the whole schema
    enum_values: int = 1000
    #: a string enum with more values than this ...
    large_enum: int = 250
    #: ... may have at most this many characters in all its values
    large_enum_chars: int = 15_000
    #: characters in all property names, enum values and const values together
    total_chars: int = 120_000


LIMITS = Limits()


@dataclass(frozen=True)
class ItemEnums:
    """The values an item's schema allows for `violated_key` and `evidence_event` (besides
    null); None: that field keeps the general definition (nothing shown, or past LIMITS)."""

    keys: tuple[str, ...] | None
    seqs: tuple[int, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {"violated_key": None if self.keys is None else list(self.keys),
                "evidence_event": None if self.seqs is None else list(self.seqs)}


GENERAL = ItemEnums(None, None)


def item_enums(keys: Iterable[str] | None, seqs: Iterable[int] | None,
               labels: Iterable[str] = ("pass", "fail"), *,
               limits: Limits = LIMITS) -> ItemEnums:
    """The enums of an item's schema for the ledger `keys` and event `seqs` it shows (None:
    not shown), within `limits` (the label enum counts too). Past a limit, the longer list
    goes back to the general definition first, then the other."""
    key_list = None if keys is None else tuple(sorted({k for k in keys if isinstance(k, str)}))
    seq_list = None if seqs is None else tuple(sorted(
        {s for s in seqs if isinstance(s, int) and not isinstance(s, bool)}))
    label_list = tuple(labels)
    fixed_chars = sum(len(n) for n in _SCHEMA["properties"]) + sum(len(x) for x in label_list)

    def fits(k: tuple[str, ...] | None, s: tuple[int, ...] | None) -> bool:
        n_keys, n_seqs = len(k or ()), len(s or ())
        key_chars = sum(len(x) for x in k or ())
        if len(label_list) + n_keys + n_seqs + 2 > limits.enum_values:  # +2: the nulls
            return False
        if n_keys > limits.large_enum and key_chars > limits.large_enum_chars:
            return False
        return fixed_chars + key_chars <= limits.total_chars

    if fits(key_list, seq_list):
        return ItemEnums(key_list, seq_list)
    # drop the longer list first (almost always the seqs of a very long slice)
    if len(seq_list or ()) >= len(key_list or ()):
        if fits(key_list, None):
            return ItemEnums(key_list, None)
        return ItemEnums(None, seq_list) if fits(None, seq_list) else GENERAL
    if fits(None, seq_list):
        return ItemEnums(None, seq_list)
    return ItemEnums(key_list, None) if fits(key_list, None) else GENERAL


def request_enums(request: JudgeRequest) -> ItemEnums:
    """The enums of `request`'s own schema: the ledger keys and seqs its rendered prompt lists
    (`request.view`); GENERAL for a request made without a view, or whose prompt lists
    neither."""
    view = request.view
    if view is None or (view.ledger_keys is None and view.slice_seqs is None):
        return GENERAL
    label_spec = request.schema.get("properties", {}).get("label", {})
    labels = label_spec.get("enum") if isinstance(label_spec, dict) else None
    return _cached_enums(view.ledger_keys, view.slice_seqs,
                         tuple(labels) if isinstance(labels, list) else ("pass", "fail"))


@functools.lru_cache(maxsize=4096)
def _cached_enums(keys: frozenset[str] | None, seqs: frozenset[int] | None,
                  labels: tuple[str, ...]) -> ItemEnums:
    """item_enums, once per distinct ledger keys and seqs (an item's request, its re-ask and
    its stored call ask for the same; items of one task share their keys)."""
    return item_enums(keys, seqs, labels)


def item_schema(schema: dict[str, Any], enums: ItemEnums) -> dict[str, Any]:
    """`schema` (a verdict schema; not changed) narrowed to `enums`: `violated_key` one of the
    keys or null (only null when the item has no key), `evidence_event` one of the seqs or
    null. `schema` itself when there is nothing to narrow."""
    props = schema.get("properties")
    if enums == GENERAL or not isinstance(props, dict):
        return schema
    narrowed = dict(props)
    if enums.keys is not None and "violated_key" in props:
        narrowed["violated_key"] = _one_of(props["violated_key"], "string", list(enums.keys))
    if enums.seqs is not None and "evidence_event" in props:
        narrowed["evidence_event"] = _one_of(props["evidence_event"], "integer",
                                             list(enums.seqs))
    return {**schema, "properties": narrowed}


def request_schema(request: JudgeRequest) -> dict[str, Any]:
    """The schema to send with `request`: its own narrowing of `request.schema`."""
    return item_schema(request.schema, request_enums(request))


def _one_of(general: Any, kind: str, values: list[Any]) -> dict[str, Any]:
    """A value among `values`, or null. `anyOf` of an enum and null: the form OpenAI strict
    mode, Anthropic tools and the grammar converters of llama.cpp, vLLM and Ollama all read
    the same way (an enum with a `["string", "null"]` type is not read alike by all)."""
    description = general.get("description") if isinstance(general, dict) else None
    out: dict[str, Any] = ({"anyOf": [{"type": kind, "enum": values}, {"type": "null"}]}
                           if values else {"type": "null"})
    if description:
        out["description"] = description
    return out


#: the confidences a decoder schema allows: 0 to 1 in steps of 0.05
CONFIDENCE_STEPS = tuple(round(i / 20, 2) for i in range(21))
_FIELDS = ("label", "violated_key", "evidence_event", "confidence", "rationale")


def decoder_schema(schema: dict[str, Any], enums: ItemEnums) -> dict[str, Any]:
    """`schema` narrowed for a grammar-constrained decoder (see the module doc): `anyOf` one
    object per kind of verdict its labels allow. `item_schema(schema, enums)` for a schema
    that is not a verdict schema of the usual fields."""
    narrowed = item_schema(schema, enums)
    props = narrowed.get("properties")
    label_spec = props.get("label") if isinstance(props, dict) else None
    labels = label_spec.get("enum") if isinstance(label_spec, dict) else None
    if not isinstance(props, dict) or set(props) != set(_FIELDS) \
            or not isinstance(labels, list) or not labels:
        return narrowed
    null: dict[str, Any] = {"type": "null"}
    confidence = {"type": "number", "enum": list(CONFIDENCE_STEPS),
                  "description": props["confidence"].get("description", "")}

    def shape(names: list[Any], key: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": {
            "label": {"type": "string", "enum": names}, "violated_key": key,
            "evidence_event": event, "confidence": confidence,
            "rationale": props["rationale"]},
            "required": list(_FIELDS), "additionalProperties": False}

    branches = []
    if "pass" in labels:
        branches.append(shape(["pass"], null, null))
    if "fail" in labels and enums.keys != () and enums.seqs != ():
        key = {"type": "string"} if enums.keys is None else \
            {"type": "string", "enum": list(enums.keys)}
        event = {"type": "integer"} if enums.seqs is None else \
            {"type": "integer", "enum": list(enums.seqs)}
        branches.append(shape(["fail"], key, event))
    others = [x for x in labels if x not in ("pass", "fail")]
    if others:
        branches.append(shape(others, props["violated_key"], props["evidence_event"]))
    return {"anyOf": branches} if len(branches) > 1 else branches[0]


def request_decoder_schema(request: JudgeRequest) -> dict[str, Any]:
    """The decoder schema to send with `request` (JSON mode with a schema, guided_json)."""
    return decoder_schema(request.schema, request_enums(request))
