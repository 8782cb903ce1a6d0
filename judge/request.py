"""What a judge is asked: the rendered request, its generation parameters, the redaction it
was rendered under, and the view of the item that local providers read.

This module sits below settings, prompts and providers (it imports nothing of judge but
errors): prompts render a `JudgeRequest`, providers answer one, settings build the
`ModelParams` and `Redaction` that rendering takes. Keeping these types here is what lets
`settings` know nothing of providers or prompts, and providers nothing of prompts' files.

`ItemView` replaces the old `JudgeRequest.item` (the raw, unredacted item, handed to local
providers on the side). A view holds what the rendered request shows and nothing else:
every trace value in it is the same scrubbed, fence-escaped text that went into the data
blocks (parsed back to JSON where it was JSON), and a block or variable the prompt's
template does not use is absent (None). Its values are parsed on first use, so network
providers, which never read it, pay nothing for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from judge.errors import ConfigError


@dataclass(frozen=True)
class ModelParams:
    """Generation parameters; part of the cache key. `sample` numbers the k samples of one
    model in a self-consistency jury (judge.grading.jury): sample 0 is the ordinary call (its
    key is unchanged, so a jury reuses single-judge calls); each other sample is its own call
    and key even where a provider takes no seed."""

    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1024
    sample: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed,
                               "max_tokens": self.max_tokens}
        if self.sample:
            out["sample"] = self.sample
        return out


@dataclass(frozen=True)
class Redaction:
    """What to keep from a judge beyond the built-in rules (judge.redaction: secrets, card
    numbers, SSNs, email/phone pseudonyms, vendor and model names) and the trace's own
    `candidate` fields.

    `identity_patterns` are case-insensitive regexes (e.g. r"acmebot-\\d+");
    `extra_identity` literal names of the system under test; `secret_patterns` regexes
    whose whole match is a secret of the user's own shape; `allow` exact values the judge
    must see (an order id that looks like a key). `secrets=False` turns secret redaction off
    (tests); card numbers and SSNs are redacted regardless. Settings give the global part;
    a scenario's `redaction:` block adds to it per item (`with_extra`).
    """

    identity_patterns: Sequence[str] = field(default_factory=tuple)
    extra_identity: Sequence[str] = field(default_factory=tuple)
    secrets: bool = True
    secret_patterns: Sequence[str] = field(default_factory=tuple)
    allow: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("identity_patterns", "extra_identity", "secret_patterns", "allow"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"redaction {name}: expected a list of strings, got a string")
            object.__setattr__(self, name, tuple(value))  # hashable: one scrubber config each
        for kind, patterns in (("identity", self.identity_patterns),
                               ("secret", self.secret_patterns)):
            for p in patterns:
                try:
                    re.compile(p)
                except (re.error, TypeError) as exc:
                    raise ConfigError(f"{kind} pattern {p!r} is not a valid regular "
                                      f"expression ({exc})") from None

    def with_extra(self, extra: Mapping[str, Sequence[str]] | None) -> Redaction:
        """These rules plus a scenario's additions (`identity`, `identity_patterns`,
        `secret_patterns`, `allow`); `self` when there are none."""
        if not extra:
            return self

        def more(mine: Sequence[str], key: str) -> tuple[str, ...]:
            return tuple(dict.fromkeys([*mine, *(extra.get(key) or ())]))

        return Redaction(identity_patterns=more(self.identity_patterns, "identity_patterns"),
                         extra_identity=more(self.extra_identity, "identity"),
                         secrets=self.secrets,
                         secret_patterns=more(self.secret_patterns, "secret_patterns"),
                         allow=more(self.allow, "allow"))


class ItemView:
    """What a rendered request shows of its item, as data, for providers that reason over
    structure instead of text (heuristic, scripted). Built by `judge.prompts.render`.

    - `goal`: str; `target`: the event under judgement (dict, event fields as rendered);
      `events`: the slice, in seq order (the target with its fields only when the prompt
      shows the target block, else just its seq, turn and kind); `ledger`: the snapshot by
      status (`active`, `completed`, … lists of entries with key, class, sensitivity,
      source, since_turn, value, aliases) and `superseded` (key, value, set_turn,
      superseded_turn). None when the prompt does not show that block.
    - `seq` and `turn` of the target, `ledger_keys` (the keys a fail may name),
      `slice_seqs` (the seqs it may cite): None when the prompt shows none of them.
    - `rubric` and `kind` ("tool_call", "summary", "assistant" or "state_write") are always
      known. The item id is the request's own (`JudgeRequest.item_id`), not part of what it
      shows. `block(name)` reads any other block the prompt shows.

    Trace values are the scrubbed, fence-escaped text of the data blocks (JSON values parsed
    back); continuation lines are not indented (that is layout, not content). `parts(name)`
    builds one block's data; it holds the shown pieces only, never the item.
    """

    def __init__(self, *, rubric: str, kind: str, seq: int | None, turn: int | None,
                 ledger_keys: frozenset[str] | None, slice_seqs: frozenset[int] | None,
                 parts: Callable[[str], Any]) -> None:
        self.rubric = rubric
        self.kind = kind
        self.seq = seq
        self.turn = turn
        self.ledger_keys = ledger_keys
        self.slice_seqs = slice_seqs
        self._parts = parts

    @cached_property
    def goal(self) -> str | None:
        value = self._parts("goal")
        return None if value is None else str(value)

    @cached_property
    def target(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self._parts("target")
        return value

    @cached_property
    def events(self) -> tuple[dict[str, Any], ...] | None:
        value = self._parts("events")
        return None if value is None else tuple(value)

    @cached_property
    def ledger(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self._parts("ledger")
        return value

    def block(self, name: str) -> Any:
        """Any other data block the prompt shows, by its template name (a reply item's
        `unsupported`, `end_state`, `actions`); None when the prompt does not show it."""
        return self._parts(name)

    def __repr__(self) -> str:
        return f"ItemView({self.rubric}, {self.kind}, seq {self.seq})"


@dataclass(frozen=True)
class JudgeRequest:
    """A rendered, redacted, model-blind request for one item.

    `messages` are chat turns after the system prompt (`{"role": "user"|"assistant",
    "content": str}`); a re-ask appends the previous completion and the validation error.
    `schema` is the JSON Schema the verdict must follow. `view` is what the rendered data
    blocks show, as data, for local providers (see `ItemView`); it is None for requests not
    made by `render`, and it is not part of a request's equality (the messages are).
    `redactions` counts the values of each class rendering replaced (`secret`, `card`,
    `ssn`, `email`, `phone`, `identity`; never the values), for the run's record.
    """

    item_id: str
    system: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    schema_name: str = "verdict"
    params: ModelParams = ModelParams()
    view: ItemView | None = field(default=None, compare=False, repr=False)
    redactions: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
