"""Extract judge items from a trace per its scenario's rubric mapping (`judge:` section)."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from judge.errors import ConfigError
from judge.formats.verdicts import item_id
from judge.items.model import Item, ItemKind
from judge.items.slice import SliceSource, build_slice, needles_of
from judge.ledger.loader import LoadedScenario
from judge.ledger.scenario import RubricUse, Scenario, Sensitivity
from judge.trace.model import Trace

#: Where a rubric applies when the scenario asks for it by name but does not map it.
DEFAULT_USES: dict[str, RubricUse] = {
    "scope_fidelity": RubricUse(rubric="scope_fidelity", on="tool_call"),
    "summary_fidelity": RubricUse(rubric="summary_fidelity", on="summary"),
}

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
    """A mutating or forbidden-listed tool, or a safety-critical ledger key involved."""
    entries = [e for s in ("active", "completed") for e in ledger.get(s, [])]
    critical = Sensitivity.SAFETY_CRITICAL.value
    if kind == "summary":
        return any(e["sensitivity"] == critical for e in ledger.get("active", []))
    rules = loaded.scenario.rules
    tool = str(target.get("tool", ""))
    if any(fnmatchcase(tool, g) for g in rules.mutating_tools):
        return True
    if any(f.safety_critical and fnmatchcase(tool, f.tool) for f in rules.forbidden):
        return True
    used = set(needles_of(target.get("args")))
    olds = ledger.get("superseded", [])
    return any(e["sensitivity"] == critical and _scalars(e["value"]) & used
               for e in [*entries, *olds])


def extract_items(loaded: LoadedScenario, trace: Trace, rubrics: list[str] | None = None,
                  *, token_budget: int = 2000) -> list[Item]:
    """One item per (rubric use, matching event) of the trace, in (seq, rubric) order."""
    uses = rubric_uses(loaded.scenario, rubrics)
    if not uses:
        return []
    events = trace.events
    source = SliceSource(events)
    dicts = source.dicts
    goal = accepted_goal(loaded.scenario, trace)
    snapshots: dict[int, dict[str, Any]] = {}
    candidate = dict(trace.candidate)
    redaction = loaded.scenario.redaction.as_extra()
    items: list[Item] = []
    for index, ev in enumerate(events):
        kind = ev.kind.value
        if kind not in ("tool_call", "summary"):
            continue
        names: list[str] = []
        for use in uses:
            if _matches(use, kind, ev.tool) and use.rubric not in names:
                names.append(use.rubric)
        if not names:
            continue
        assert ev.seq is not None and ev.turn is not None
        if ev.turn not in snapshots:
            snapshots[ev.turn] = loaded.ledger.at(ev.turn).to_dict()
        ledger = snapshots[ev.turn]
        sl = build_slice(events, index, token_budget, source)
        target = next(d for d in sl if d["seq"] == ev.seq)
        keys = frozenset(e["key"] for s in ("active", "completed", "revoked", "failed",
                                             "expired") for e in ledger.get(s, []))
        sc = _safety_critical(loaded, kind, dicts[index], ledger)
        mutating = kind == "tool_call" and any(
            fnmatchcase(ev.tool or "", g) for g in loaded.scenario.rules.mutating_tools)
        item_kind: ItemKind = "tool_call" if kind == "tool_call" else "summary"
        for name in names:
            items.append(Item(
                item_id=item_id(trace.trace_id, ev.seq, name), trace_id=trace.trace_id,
                seq=ev.seq, turn=ev.turn, rubric=name, kind=item_kind, goal=goal,
                ledger=ledger, events=sl, target=target, ledger_keys=keys,
                slice_seqs=frozenset(d["seq"] for d in sl), safety_critical=sc,
                candidate=candidate, mutating=mutating, redaction=redaction,
            ))
    return items
