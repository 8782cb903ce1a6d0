"""Extract judge items from a trace per its scenario's rubric mapping (`judge:` section).

Each item carries the ledger as it stood just before its event (`judge.ledger.timeline`:
deltas take effect at their anchors in this trace), so the effect of the judged event is
never shown as already done.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any, cast

from judge.checks.anchors import trace_timeline
from judge.checks.replies import SourceIndex
from judge.errors import ConfigError
from judge.formats.verdicts import item_id
from judge.items.foreign import foreign_facts
from judge.items.model import Item, ItemKind
from judge.items.slice import SliceSource, build_slice, needles_of
from judge.ledger.loader import LoadedScenario
from judge.ledger.scenario import RubricUse, Scenario, Sensitivity
from judge.trace.model import Event, EventData, EventKind, Trace

#: Where a rubric applies when the scenario asks for it by name but does not map it.
DEFAULT_USES: dict[str, RubricUse] = {
    "scope_fidelity": RubricUse(rubric="scope_fidelity", on="tool_call"),
    "summary_fidelity": RubricUse(rubric="summary_fidelity", on="summary"),
    "reply_fidelity": RubricUse(rubric="reply_fidelity", on="assistant"),
    "memory_fidelity": RubricUse(rubric="memory_fidelity", on="state_write"),
}
#: the kind of state snapshot events (a trace-format extension); read generically: its
#: fields other than seq, turn and kind (one field: its value) are the state
STATE_SNAPSHOT_KIND = "state_snapshot"
#: tool calls listed for a reply judge (the first and last half of this many, if more)
MAX_ACTIONS = 200

# Where importers keep the task instruction the user (or user simulator) was given.
_INSTRUCTION_PATHS: tuple[tuple[str, ...], ...] = (
    ("task", "instruction"), ("info", "task", "instruction"), ("instruction",),
    ("task_instruction",),
)


def task_instruction(metadata: dict[str, Any]) -> str | None:
    """The task instruction a trace's metadata carries (e.g. tau-bench `info.task.instruction`)."""
    for path in _INSTRUCTION_PATHS:
        node: Any = metadata
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, str) and node.strip():
            return node.strip()
    return None


def accepted_goal(scenario: Scenario, trace: Trace) -> str:
    instruction = task_instruction(trace.metadata)
    if instruction and instruction not in scenario.goal:
        return f"{scenario.goal.strip()}\n\nTask instruction: {instruction}"
    return scenario.goal.strip()


def rubric_uses(scenario: Scenario, rubrics: list[str] | None) -> list[RubricUse]:
    """The scenario's rubric uses, restricted to `rubrics` (a known rubric the scenario does
    not map gets its default use; an unknown one is a ConfigError)."""
    if rubrics is None:
        return list(scenario.judge)
    out: list[RubricUse] = []
    for name in rubrics:
        uses = [u for u in scenario.judge if u.rubric == name]
        if not uses:
            if name not in DEFAULT_USES:
                raise ConfigError(
                    f"rubric '{name}' is not mapped in scenario '{scenario.id}' (judge:) "
                    f"and has no default use; known defaults: {', '.join(DEFAULT_USES)}")
            uses = [DEFAULT_USES[name]]
        out.extend(uses)
    return out


def _matches(use: RubricUse, kind: str, tool: str | None) -> bool:
    if use.on != kind:
        return False
    if kind == "tool_call":
        return any(fnmatchcase(tool or "", g) for g in use.tools)
    return True


def _scalars(value: Any) -> set[str]:
    if isinstance(value, list | tuple):
        return {str(v) for v in value if isinstance(v, str | int | float) and not
                isinstance(v, bool)}
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {str(value)}
    return set()


def _safety_critical(loaded: LoadedScenario, kind: str, target: dict[str, Any],
                     ledger: dict[str, Any]) -> bool:
    """A mutating or forbidden-listed tool, or a safety-critical ledger key involved (a
    summary or reply: any active safety-critical entry)."""
    entries = [e for s in ("active", "completed") for e in ledger.get(s, [])]
    critical = Sensitivity.SAFETY_CRITICAL.value
    if kind in ("summary", "assistant"):
        return any(e["sensitivity"] == critical for e in ledger.get("active", []))
    if kind == "tool_call":
        rules = loaded.scenario.rules
        tool = str(target.get("tool", ""))
        if any(fnmatchcase(tool, g) for g in rules.mutating_tools):
            return True
        if any(f.safety_critical and fnmatchcase(tool, f.tool) for f in rules.forbidden):
            return True
    used = set(needles_of(target.get("args") if kind == "tool_call" else target.get("value")))
    olds = ledger.get("superseded", [])
    return any(e["sensitivity"] == critical and _scalars(e["value"]) & used
               for e in [*entries, *olds])


def _reply_picks(events: list[Event], uses: list[RubricUse]) -> dict[int, list[str]]:
    """Which assistant replies each `on: assistant` use grades: index -> rubric names."""
    if not uses:
        return {}
    replies = [i for i, ev in enumerate(events) if ev.kind is EventKind.ASSISTANT]
    if not replies:
        return {}
    last_of_turn: dict[int | None, int] = {}
    for i in replies:
        last_of_turn[events[i].turn] = i
    picks: dict[int, list[str]] = {}
    for use in uses:
        if use.replies == "all":
            chosen = replies
        elif use.replies == "each_turn":
            chosen = sorted(last_of_turn.values())
        else:
            chosen = [replies[-1]]
        for i in chosen:
            names = picks.setdefault(i, [])
            if use.rubric not in names:
                names.append(use.rubric)
    return picks


def _state_of(d: dict[str, Any]) -> Any:
    if isinstance(d.get("state"), dict):  # the extension's own field (docs/formats.md)
        return d["state"]
    fields = {k: v for k, v in d.items() if k not in ("seq", "turn", "kind")}
    return next(iter(fields.values())) if len(fields) == 1 else fields


def _actions(dicts: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Every tool call of the run with its outcome (a result by call_id, else the next
    result of the tool), at most `MAX_ACTIONS` (the first and last half)."""
    out: list[dict[str, Any]] = []
    open_calls: dict[Any, int] = {}  # call_id (or tool) -> index in out, awaiting a result
    for d in dicts:
        kind = d.get("kind")
        if kind == "tool_call":
            open_calls[d.get("call_id") or ("tool", d.get("tool"))] = len(out)
            out.append({"seq": d.get("seq"), "tool": d.get("tool"), "outcome": "no result"})
        elif kind == "tool_result":
            at = open_calls.pop(d.get("call_id") or ("tool", d.get("tool")), None)
            if at is None and d.get("call_id") is not None:
                at = open_calls.pop(("tool", d.get("tool")), None)
            if at is not None:
                out[at]["outcome"] = "error" if d.get("error") is not None else "ok"
    if len(out) > MAX_ACTIONS:
        half = MAX_ACTIONS // 2
        out = [*out[:half], *out[-half:]]
    return tuple(out)


class _ReplyContext:
    """What a reply item adds, computed over one trace: unsupported claims (sources before
    each reply), the state snapshot it is judged against, the run's tool calls."""

    def __init__(self, events: list[Event], dicts: list[dict[str, Any]]) -> None:
        self._events = events
        self._dicts = dicts
        self._index = SourceIndex()
        self._fed = 0
        self._snapshots = [i for i, d in enumerate(dicts)
                           if d.get("kind") == STATE_SNAPSHOT_KIND]
        self.actions = _actions(dicts)
        self._final = max((i for i, ev in enumerate(events)
                           if ev.kind is EventKind.ASSISTANT), default=-1)

    def unsupported(self, index: int) -> tuple[dict[str, str], ...]:
        while self._fed < index:  # replies come in order: feed what precedes this one
            self._index.add_event(cast(EventData, vars(self._events[self._fed])))
            self._fed += 1
        text = self._events[index].text or ""
        return tuple(c.to_dict() for c in self._index.unsupported(text))

    def end_state(self, index: int) -> dict[str, Any] | None:
        """The last state snapshot of the trace for the final reply, else the last one
        before the reply."""
        found = [i for i in self._snapshots if index == self._final or i < index]
        if not found:
            return None
        d = self._dicts[found[-1]]
        return {"seq": d.get("seq"), "state": _state_of(d)}


def extract_items(loaded: LoadedScenario, trace: Trace, rubrics: list[str] | None = None,
                  *, token_budget: int = 2000) -> list[Item]:
    """One item per (rubric use, matching event) of the trace, in (seq, rubric) order.

    Tool calls, summaries and state writes are matched by kind (tool calls by tool glob);
    assistant replies by the use's `replies` (the final one by default)."""
    uses = rubric_uses(loaded.scenario, rubrics)
    if not uses:
        return []
    events = trace.events
    picks = _reply_picks(events, [u for u in uses if u.on == "assistant"])
    kinds = {u.on for u in uses}
    chosen: list[tuple[int, list[str]]] = []
    for index, ev in enumerate(events):
        kind = ev.kind.value
        if kind not in kinds:
            continue
        if kind == "assistant":
            names = picks.get(index, [])
        else:
            names = []
            for use in uses:
                if _matches(use, kind, ev.tool) and use.rubric not in names:
                    names.append(use.rubric)
        if names:
            chosen.append((index, names))
    if not chosen:
        return []
    timeline = trace_timeline(loaded, events)
    source = SliceSource(events)
    dicts = source.dicts
    replies = _ReplyContext(events, dicts) if picks else None
    goal = accepted_goal(loaded.scenario, trace)
    ledgers: dict[int, tuple[Any, dict[str, Any]]] = {}
    candidate = dict(trace.candidate)
    redaction = loaded.scenario.redaction.as_extra()
    mutating_tools = loaded.scenario.rules.mutating_tools
    leakage = loaded.scenario.leakage
    plan = loaded.ledger.plan
    foreign: dict[str | None, dict[str, Any] | None] = {}  # per session
    items: list[Item] = []
    for index, names in chosen:
        ev = events[index]
        kind = ev.kind.value
        assert ev.seq is not None and ev.turn is not None
        snap = timeline.before(ev.seq, ev.turn)
        held = ledgers.get(id(snap.entries))
        if held is None or held[0] is not snap.entries:  # one dict per distinct state
            held = ledgers[id(snap.entries)] = (snap.entries, snap.to_dict())
        through = events[index - 1].seq if index else None
        ledger = {**held[1], "before_seq": ev.seq, "through_seq": through}
        sl = build_slice(events, index, token_budget, source)
        target = next(d for d in sl if d["seq"] == ev.seq)
        keys = frozenset(e["key"] for s in ("active", "completed", "revoked", "failed",
                                             "expired") for e in ledger.get(s, []))
        sc = _safety_critical(loaded, kind, dicts[index], ledger)
        mutating = kind == "tool_call" and any(
            fnmatchcase(ev.tool or "", g) for g in mutating_tools)
        item_kind = cast(ItemKind, kind)  # tool_call, summary, assistant or state_write
        extra: dict[str, Any] = {}
        if kind == "assistant" and replies is not None:
            extra = {"unsupported": replies.unsupported(index),
                     "end_state": replies.end_state(index), "actions": replies.actions}
        if leakage is not None:
            session = ev.session or plan.session_of(ev.turn)
            if session not in foreign:
                foreign[session] = foreign_facts(leakage, session)
            extra["foreign"] = foreign[session]
        for name in names:
            items.append(Item(
                item_id=item_id(trace.trace_id, ev.seq, name), trace_id=trace.trace_id,
                seq=ev.seq, turn=ev.turn, rubric=name, kind=item_kind, goal=goal,
                ledger=ledger, events=sl, target=target, ledger_keys=keys,
                slice_seqs=frozenset(d["seq"] for d in sl), safety_critical=sc,
                candidate=candidate, mutating=mutating, redaction=redaction, **extra,
            ))
    return items
