"""The scenario file (formats §2): the reviewed oracle for one task.

A scenario has an id and a goal, the reviewed ledger as an ordered list of deltas,
deterministic rules, checkpoints and the judge rubrics that apply to which items.
Every model forbids unknown fields so a typo'd YAML key is an error, not a silent default.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.ledger.leakage import Leakage
from judge.ledger.sessions import SessionSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Op(StrEnum):
    SET = "set"
    SUPERSEDE = "supersede"
    COMPLETE = "complete"
    REVOKE = "revoke"
    FAIL = "fail"


class EntryClass(StrEnum):
    GOAL = "goal"
    CONSTRAINT = "constraint"
    MUTABLE_FACT = "mutable_fact"
    PERMISSION = "permission"
    COMPLETION = "completion"
    UNCERTAINTY = "uncertainty"


class Persistence(StrEnum):
    TURN = "turn"
    TASK = "task"
    SESSION = "session"
    UNTIL_REPLACED = "until_replaced"


class Sensitivity(StrEnum):
    NORMAL = "normal"
    COSTLY = "costly"
    SAFETY_CRITICAL = "safety_critical"


class Source(StrEnum):
    USER = "user"
    TOOL = "tool"
    AGENT = "agent"


class Severity(StrEnum):
    INFORMATIONAL = "informational"
    TASK_QUALITY = "task-quality"
    COSTLY = "costly"
    UNSAFE = "unsafe"


class Delta(_Strict):
    """One reviewed change to the ledger at a turn.

    `turn` places the delta for the checks (`Ledger.at(turn)`, `judge ledger --turn`). What
    a judge sees of one trace is finer: the ledger just before the judged event, where a
    delta takes effect at its anchor (see `judge.ledger.timeline`):

    - no anchor: at the start of `turn` (before the first event of that turn);
    - `at_seq: N`: right after the event with seq N (events with seq > N see it);
    - `after_tool: X` (a glob), optionally with `after_result` matchers: right after the
      first successful result of X matching them, wherever it falls in the trace (never,
      if the trace has none);
    - a `complete` of a key the completion predicate names, with no anchor: right after
      the result that satisfies that sub-goal (as the completion check finds it).

    A delta never takes effect before the previous delta of the same key.

    `session` (optional, with the scenario's `sessions:`) says which session the delta
    belongs to; it must be the session its turn is in (the reducer checks).
    """

    turn: int = Field(ge=0)
    op: Op
    key: str = Field(min_length=1)
    value: Any = None
    class_: EntryClass | None = Field(default=None, alias="class")
    persistence: Persistence | None = None
    sensitivity: Sensitivity | None = None
    source: Source
    aliases: list[str] = Field(default_factory=list)
    note: str | None = None
    at_seq: int | None = Field(default=None, ge=1)
    after_tool: str | None = Field(default=None, min_length=1)
    after_result: list[ResultMatcher] | None = None  # None (not []) so a dump omits it
    session: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_anchor(self) -> Delta:
        if self.at_seq is not None and self.after_tool is not None:
            raise ValueError("a delta has at most one anchor: at_seq or after_tool")
        if self.after_result and self.after_tool is None:
            raise ValueError("after_result needs after_tool (the tool whose result it tests)")
        return self

    @property
    def anchored(self) -> bool:
        """Whether the scenario places this delta at an event (not only at its turn)."""
        return self.at_seq is not None or self.after_tool is not None


class ArgMatcher(_Strict):
    """A matcher on one argument (dotted `path` into the call's args).

    Exactly one test: a literal (`equals`, `not_equals`, `in`, `not_in`, `matches` regex,
    `exists`) or a ledger reference (`equals_key`, `in_key`, `not_in_key`) evaluated
    against the ledger's current value of that key at the call's turn.
    """

    path: str
    equals: Any = None
    not_equals: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")
    not_in: list[Any] | None = None
    matches: str | None = None
    exists: bool | None = None
    equals_key: str | None = None
    in_key: str | None = None
    not_in_key: str | None = None

    @model_validator(mode="after")
    def _one_test(self) -> ArgMatcher:
        tests = [n for n in ("equals", "not_equals", "in_", "not_in", "matches", "exists",
                             "equals_key", "in_key", "not_in_key")
                 if getattr(self, n) is not None]
        if len(tests) != 1:
            raise ValueError("an argument matcher needs exactly one test "
                             "(equals, not_equals, in, not_in, matches, exists, "
                             "equals_key, in_key, not_in_key)")
        return self

    def ledger_keys(self) -> list[str]:
        return [k for k in (self.equals_key, self.in_key, self.not_in_key) if k]


class ForbiddenCall(_Strict):
    """A call that must never happen: tool (glob) plus argument matchers (all must match)."""

    name: str
    tool: str
    args: list[ArgMatcher] = Field(default_factory=list)
    key: str | None = None  # the ledger key this protects, reported on violation
    after_completed: str | None = None  # only forbidden once this completion key holds
    after_turn: int | None = None
    severity: Severity = Severity.UNSAFE
    safety_critical: bool = True
    message: str | None = None


class ResultMatcher(_Strict):
    """A test on a successful tool result (dotted `path`; empty path = the whole result)."""

    path: str = ""
    equals: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")
    matches: str | None = None
    exists: bool | None = None


class SubGoal(_Strict):
    """One part of the terminal predicate: a successful result of `tool` matching `result`."""

    key: str  # a completion key of the ledger
    tool: str
    args: list[ArgMatcher] = Field(default_factory=list)
    result: list[ResultMatcher] = Field(default_factory=list)
    retry_allowed: bool = False  # may the tool be called again after this sub-goal holds


class Completion(_Strict):
    """The terminal predicate: all sub-goals hold (a single goal is a one-item list)."""

    all_of: list[SubGoal] = Field(min_length=1)
    allowed_after: list[str] = Field(default_factory=list)  # tools allowed after completion
    allow_mutations_after: bool = False
    success_claims: list[str] = Field(default_factory=list)  # regexes over assistant text


class Lookup(_Strict):
    """`mutate` may only act on an entity (its `arg`) that `lookup` returned earlier."""

    mutate: str
    arg: str
    lookup: str | list[str]
    result_path: str | None = None  # where the id sits in the lookup result; None = anywhere

    def lookups(self) -> list[str]:
        return [self.lookup] if isinstance(self.lookup, str) else list(self.lookup)


class Confirmation(_Strict):
    """Consequential tools that need an explicit user yes after the agent stated the action."""

    tools: list[str]
    patterns: list[str] = Field(
        default_factory=lambda: [
            r"^\s*(yes|yep|yeah|y|sure|ok(ay)?|confirm(ed)?|go ahead|proceed|please do|"
            r"do it|correct|that'?s (right|correct))\b"
        ]
    )
    severity: Severity = Severity.UNSAFE
    safety_critical: bool = True


class Budgets(_Strict):
    max_steps: int | None = Field(default=None, ge=1)  # tool calls
    max_identical_calls: int | None = Field(default=None, ge=1)  # same tool + same args
    max_reads_after_completion: int | None = Field(default=None, ge=0)
    identical_exempt: list[str] = Field(default_factory=list)  # tools free to repeat


class AuditPhrase(_Strict):
    key: str
    phrases: list[str] = Field(min_length=1)


class SummaryAudit(_Strict):
    required: list[AuditPhrase] = Field(default_factory=list)
    obsolete: list[AuditPhrase] = Field(default_factory=list)
    derive_from_ledger: bool = True  # active aliases required, superseded values obsolete


class MemoryRules(_Strict):
    """What counts as a memory write besides `state_write` events: calls of `tools` (globs;
    e.g. `core_memory_*`), whose arguments are the stored value. Every memory write is
    checked against the ledger like a tool's arguments (`judge.checks.memory`)."""

    tools: list[str] = Field(default_factory=list)


# --- expected outcome, end state and rule severities (issue 11; judge.checks.outcome) -----


class RuleSeverity(_Strict):
    """A scenario's override of one rule's severity (`rules.severity.<check name>`): either
    field may be given; `safety_critical: true` makes every failure of the rule a veto."""

    severity: Severity | None = None
    safety_critical: bool | None = None


class WriteRef(_Strict):
    """One write that must happen: a successful call of `tool` whose arguments satisfy every
    matcher of `args` (`equals`/`in` compare normalised values, `judge.diff.normalise`), and,
    with `args_equal`, whose whole arguments equal that object (normalised, key by key)."""

    tool: str = Field(min_length=1)
    args: list[ArgMatcher] = Field(default_factory=list)
    args_equal: dict[str, Any] | None = None
    note: str | None = None


class FactRef(_Strict):
    """A fact the final reply (or, with `where: any`, some assistant reply) must state:
    exactly one of `text` (a phrase: case, whitespace and thousands commas ignored), `regex`
    (case-insensitive) or `value` (a number — found among the reply's numbers, `$42.00`
    equals 42 — or a string, as `text`)."""

    text: str | None = Field(default=None, min_length=1)
    regex: str | None = Field(default=None, min_length=1)
    value: Any = None
    where: Literal["final", "any"] = "final"

    @model_validator(mode="after")
    def _one_test(self) -> FactRef:
        if sum(x is not None for x in (self.text, self.regex, self.value)) != 1:
            raise ValueError("a fact needs exactly one of text, regex or value")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regular expression ({exc})") from None
        return self


class OutcomeRef(_Strict):
    """The reference a trace's effects are compared with: required writes (order-insensitive
    unless `ordered`) and facts. The same shape in a trace's `metadata.expected_outcome`."""

    writes: list[WriteRef] = Field(default_factory=list)
    ordered: bool = False
    facts: list[FactRef] = Field(default_factory=list)


class RecordRule(_Strict):
    """One end-state rule on the record `collection`/`record`: exactly one of `field` +
    `equals` (a dotted path into the record; normalised comparison), `unchanged`,
    `created` or `deleted` (each `true`)."""

    collection: str = Field(min_length=1)
    record: str = Field(min_length=1)
    field: str | None = Field(default=None, min_length=1)
    equals: Any = None
    unchanged: Literal[True] | None = None
    created: Literal[True] | None = None
    deleted: Literal[True] | None = None

    @model_validator(mode="after")
    def _one_test(self) -> RecordRule:
        given = [n for n in ("field", "unchanged", "created", "deleted")
                 if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("an end-state rule needs exactly one of field (with equals), "
                             "unchanged, created or deleted")
        if self.field is None and "equals" in self.model_fields_set:
            raise ValueError("'equals' needs 'field'")
        if self.field is not None and "equals" not in self.model_fields_set:
            raise ValueError("'field' needs 'equals'")
        return self


class EndState(_Strict):
    """The state fixture (`{collection: {record_id: record}}`, the state before the run;
    absent: the trace's first snapshot) and the rules on the last snapshot."""

    fixture: dict[str, dict[str, Any]] | None = None
    rules: list[RecordRule] = Field(default_factory=list)
    only_listed_change: bool = False  # no record changes except those the rules name


class Outcome(OutcomeRef):
    """A scenario's expected outcome (`outcome:`). With `from_trace`, each trace's
    `metadata.expected_outcome` (an `OutcomeRef`) is the reference, its writes and facts
    added to those listed here."""

    from_trace: bool = False
    end_state: EndState | None = None


class Rules(_Strict):
    mutating_tools: list[str] = Field(default_factory=list)
    read_tools: list[str] = Field(default_factory=list)
    allowed_tools: list[str] | None = None  # None = no allow-list
    forbidden: list[ForbiddenCall] = Field(default_factory=list)
    stale_values: bool = True
    completion: Completion | None = None
    lookups: list[Lookup] = Field(default_factory=list)
    confirmation: Confirmation | None = None
    budgets: Budgets = Field(default_factory=Budgets)
    summary_audit: SummaryAudit = Field(default_factory=SummaryAudit)
    memory: MemoryRules = Field(default_factory=MemoryRules)
    # per check name (`completion`, `success_claim`, `silent_failure`, ...): its severity
    severity: dict[str, RuleSeverity] = Field(default_factory=dict)


class Checkpoint(_Strict):
    after_turn: int = Field(ge=0)
    active: list[str] = Field(default_factory=list)
    completed: list[str] = Field(default_factory=list)
    prohibited_tools: list[str] = Field(default_factory=list)


ItemOn = Literal["tool_call", "summary", "assistant", "state_write"]


class RubricUse(_Strict):
    """Which items a rubric grades: tool calls (optionally only some tools), summaries,
    assistant replies (`replies`: the `final` one, the last of `each_turn`, or `all`) or
    state writes (memory)."""

    rubric: str
    on: ItemOn
    tools: list[str] = Field(default_factory=lambda: ["*"])
    replies: Literal["final", "each_turn", "all"] = "final"

    @model_validator(mode="after")
    def _fields_fit_on(self) -> RubricUse:
        given = self.model_fields_set
        if "tools" in given and self.on != "tool_call":
            raise ValueError(f"'tools' applies to on: tool_call, not on: {self.on}")
        if "replies" in given and self.on != "assistant":
            raise ValueError(f"'replies' applies to on: assistant, not on: {self.on}")
        return self

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        """YAML 1.1 reads a bare `on:` key as the boolean true; take it back as `on`."""
        if isinstance(data, dict) and True in data and "on" not in data:
            data = {("on" if k is True else k): v for k, v in data.items()}
        return data


class ScenarioRedaction(_Strict):
    """What this scenario adds to redaction (beyond the built-in rules and the settings):
    `identity` names of the system under test and `identity_patterns` regexes for them
    (shown to a judge as `[agent]`); `secret_patterns` regexes whose whole match is a secret
    of this task's own shape; `allow` exact values the judge must see even when they look
    like a secret, a card or an address (an order id, a test account's email)."""

    identity: list[str] = Field(default_factory=list)
    identity_patterns: list[str] = Field(default_factory=list)
    secret_patterns: list[str] = Field(default_factory=list)
    allow: list[str] = Field(default_factory=list)

    @field_validator("identity_patterns", "secret_patterns")
    @classmethod
    def _regexes(cls, patterns: list[str]) -> list[str]:
        for i, p in enumerate(patterns):
            try:
                compiled = re.compile(p, re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"item {i}: {p!r} is not a valid regular expression "
                                 f"({exc})") from None
            if compiled.match(""):
                raise ValueError(f"item {i}: {p!r} matches the empty string")
        return patterns

    @field_validator("identity", "allow")
    @classmethod
    def _non_empty(cls, values: list[str]) -> list[str]:
        for i, v in enumerate(values):
            if not v.strip():
                raise ValueError(f"item {i}: an empty string")
        return values

    def as_extra(self) -> dict[str, tuple[str, ...]] | None:
        """The additions as items carry them (None when there are none)."""
        out = {k: tuple(v) for k, v in (("identity", self.identity),
                                         ("identity_patterns", self.identity_patterns),
                                         ("secret_patterns", self.secret_patterns),
                                         ("allow", self.allow)) if v}
        return out or None


class Scenario(_Strict):
    id: str = Field(min_length=1)
    goal: str = Field(min_length=1)
    description: str | None = None
    # `draft`: written by `judge init` and not yet reviewed by a person (`judge validate`
    # warns; `--strict` refuses it). Absent means reviewed.
    status: Literal["draft", "reviewed"] = "reviewed"
    ledger: list[Delta] = Field(default_factory=list)
    rules: Rules = Field(default_factory=Rules)
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    judge: list[RubricUse] = Field(default_factory=list)
    redaction: ScenarioRedaction = Field(default_factory=ScenarioRedaction)
    outcome: Outcome | None = None  # expected effects, facts and end state (None: unchecked)
    # the sessions a trace records, by the turn each starts at (judge.ledger.sessions)
    sessions: list[SessionSpec] = Field(default_factory=list)
    # facts of other users, tenants and sessions that must never appear (judge.ledger.leakage)
    leakage: Leakage | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("sessions")
    @classmethod
    def _session_order(cls, sessions: list[SessionSpec]) -> list[SessionSpec]:
        seen: set[str] = set()
        for i, s in enumerate(sessions):
            if s.id in seen:
                raise ValueError(f"item {i}: session '{s.id}' is listed twice")
            seen.add(s.id)
            if i and s.first_turn <= sessions[i - 1].first_turn:
                raise ValueError(f"item {i}: session '{s.id}' starts at turn {s.first_turn}, "
                                 f"not after '{sessions[i - 1].id}' (turn "
                                 f"{sessions[i - 1].first_turn}); list sessions in order")
        return sessions
