"""From an `Observation` to the guesses a scenario draft is made of (`Draft`).

- tools: read, write, hand-off or unclassified, each with its reasons (`classify`);
- lookups: for a write tool, an id argument present in every call whose value an earlier
  successful result had returned every time — a `lookups` rule that holds on these traces
  (`held`); one that held in some calls only is offered commented out (`partial`);
- the ledger: the goal (the first user message), a completion entry per write tool that
  succeeded, and a fact per id the user said and every call of a write used (when it is the
  same in every trace);
- suggestions (written commented out): a completion predicate, forbidden calls (a write on
  another entity than the ones seen; a second success), confirmation before writes,
  budgets.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from judge.drafting.classify import name_verb
from judge.drafting.observe import Entity, Observation, PathStats, ToolStats

MAX_GOAL = 400  # characters of the first user message kept as the goal
MAX_NOT_IN = 3  # a forbidden `not_in` list is offered for at most this many ids
MAX_ENTITIES_SHOWN = 30

ToolKind = Literal["read", "write", "handoff", "unclassified"]


@dataclass
class ToolGuess:
    stats: ToolStats
    kind: ToolKind
    reasons: list[str]

    @property
    def name(self) -> str:
        return self.stats.name


@dataclass
class LookupGuess:
    mutate: str
    arg: str
    lookups: list[str]
    held: int  # calls whose id an earlier result returned
    calls: int


@dataclass
class LedgerGuess:
    key: str
    class_: str
    persistence: str
    sensitivity: str
    value: str | int
    note: str


@dataclass
class ForbiddenGuess:
    name: str
    tool: str
    note: str
    not_in: tuple[str, list[str | int]] | None = None  # (path, ids)
    after_completed: str | None = None
    message: str | None = None


@dataclass
class Draft:
    id: str
    id_note: str
    goal: str
    goal_note: str
    turn: int
    tools: list[ToolGuess]
    ledger: list[LedgerGuess]
    lookups: list[LookupGuess]
    partial_lookups: list[LookupGuess]
    completion: dict[str, str]  # write tool -> its completion key
    forbidden: list[ForbiddenGuess]
    entities: list[Entity]
    obs: Observation
    warnings: list[str] = field(default_factory=list)

    def kind(self, kind: ToolKind) -> list[ToolGuess]:
        return [t for t in self.tools if t.kind == kind]


def classify(t: ToolStats) -> ToolGuess:
    """Read, write, hand-off or unclassified, and why (see `judge.drafting.classify`)."""
    kind, verb = name_verb(t.name)
    ack = f"a result acknowledges a change ({t.ack})" if t.ack else None
    if kind == "handoff":
        return ToolGuess(t, "handoff", [f'the name hands off to a person ("{verb}")'])
    if kind == "read":
        return ToolGuess(t, "read", [f'name verb "{verb}"'])
    if kind == "write":
        return ToolGuess(t, "write", [f'name verb "{verb}"', *([ack] if ack else [])])
    first = [f'name verb "{verb}" may read or write'] if verb else []
    if ack:
        return ToolGuess(t, "write", [*first, ack])
    ids = list(t.paths)
    if ids:
        shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        return ToolGuess(t, "write", [*first, f"its args carry ids ({shown}) and nothing "
                                               "says it only reads"])
    return ToolGuess(t, "unclassified",
                     [*first, ("no" if verb else "no known verb,") + " acknowledgement or id to "
                              "go by: read or write?"])


def build(obs: Observation, scenario_id: str | None = None) -> Draft:
    tools = [classify(t) for t in obs.tools.values()]
    sid, id_note, warnings = _scenario_id(obs, scenario_id)
    goal, goal_note, turn = _goal(obs)
    keys = _Keys()
    ledger = [LedgerGuess(keys.take("goal"), "goal", "task", "normal", goal,
                          "the accepted goal")]
    writes = [t for t in tools if t.kind == "write"]
    completion: dict[str, str] = {}
    for t in writes:
        if t.stats.ok:
            key = completion[t.name] = keys.take(_slug(t.name) + "_done")
            ledger.append(LedgerGuess(key, "completion", "task", "costly",
                                      f"{t.name} succeeds",
                                      f"succeeded in {_n(t.stats.ok, 'result')}"))
    for value, path, tool in _user_facts(writes):
        ledger.append(LedgerGuess(keys.take(_slug(path.rsplit('.', 1)[-1])), "mutable_fact",
                                  "task", "normal", value,
                                  f"the user said it; every {tool} call used it ({path})"))
    reads = {t.name for t in tools if t.kind == "read"}
    held: list[LookupGuess] = []
    partial: list[LookupGuess] = []
    for t in writes:
        for path, ps in t.stats.paths.items():
            if ps.present != t.stats.calls or not ps.from_results:
                continue
            guess = LookupGuess(t.name, path, _sources(ps, reads), ps.from_results,
                                t.stats.calls)
            (held if ps.from_results == t.stats.calls else partial).append(guess)
    forbidden = _forbidden(writes, completion)
    entities = sorted(obs.entities.values(),  # unexplained ones first: worth a look
                      key=lambda e: (-e.unexplained, -sum(e.uses.values())))
    return Draft(sid, id_note, goal, goal_note, turn, tools, ledger, held, partial,
                 completion, forbidden, entities[:MAX_ENTITIES_SHOWN], obs, warnings)


def _scenario_id(obs: Observation, given: str | None) -> tuple[str, str, list[str]]:
    named = [(s, n) for s, n in obs.scenarios.most_common() if s.strip()]
    warnings = []
    if len(named) > 1:
        listed = ", ".join(repr(s) for s, _ in named[:5])
        warnings.append(f"the traces name {len(named)} scenarios ({listed}); this draft is "
                        "one scenario for all of them")
    if given:
        return given, "given with --id", warnings
    if named:
        sid, n = named[0]
        return sid, f"the scenario {_n(n, 'trace')} name", warnings
    return "draft", "no trace names its scenario: pick an id", warnings


def _goal(obs: Observation) -> tuple[str, str, int]:
    if obs.first_user is None or not obs.first_user[1].strip():
        return ("TODO: state the goal (no trace has a user message)",
                "no user message to draft it from", obs.first_user[2] if obs.first_user else 0)
    trace_id, text, turn = obs.first_user
    goal = text.strip()
    note = f"the first user message of {trace_id}"
    if len(goal) > MAX_GOAL:
        goal = goal[: MAX_GOAL - 1] + "…"
        note += f" (cut to {MAX_GOAL} characters)"
    if obs.first_users_differ:
        note += "; other traces open differently: state the task they share"
    return goal, note, turn


def _sources(ps: PathStats, reads: set[str]) -> list[str]:
    """The fewest tools whose results explain every call's id, read tools first: a greedy
    set cover over the calls (each call: the tools that had returned its id), picking the
    tool that explains most calls still unexplained, a read tool before any other."""
    by_count = [name for name, _ in sorted(ps.sources.items(), key=lambda kv: (-kv[1], kv[0]))]
    if ps.more_source_sets:
        return by_count
    left = Counter(ps.source_sets)
    chosen: list[str] = []
    while left:
        gain: Counter[str] = Counter()
        for tools, n in left.items():
            for t in tools:
                gain[t] += n
        best = max(by_count, key=lambda t: (t in reads, gain[t]) if gain[t] else (False, -1))
        chosen.append(best)
        left = Counter({tools: n for tools, n in left.items() if best not in tools})
    return chosen


def _user_facts(writes: list[ToolGuess]) -> list[tuple[str | int, str, str]]:
    """(id, path, tool): ids the user said that every call of a write used, one per id."""
    out: list[tuple[str | int, str, str]] = []
    seen: set[str | int] = set()
    for t in writes:
        for path, ps in t.stats.paths.items():
            if (ps.present == t.stats.calls and ps.from_user == ps.present
                    and len(ps.values) == 1 and not ps.more_values):
                value = next(iter(ps.values))
                if value not in seen:
                    seen.add(value)
                    out.append((value, path, t.name))
    return out


def _forbidden(writes: list[ToolGuess], completion: dict[str, str]) -> list[ForbiddenGuess]:
    out = []
    for t in writes:
        s = t.stats
        paths = [(p, ps) for p, ps in s.paths.items()
                 if ps.present == s.calls and not ps.more_values
                 and 0 < len(ps.values) <= MAX_NOT_IN]
        paths.sort(key=lambda item: -item[1].from_user)  # ids the user gave first
        if paths:
            path, ps = paths[0]
            out.append(ForbiddenGuess(
                f"{_slug(t.name)}-other-entity", t.name,
                f"{t.name} acted on {_n(len(ps.values), 'id')} only in these traces",
                not_in=(path, list(ps.values)),
                message=f"{t.name} on an entity this task is not about"))
        if s.max_ok_in_trace >= 2 and t.name in completion:
            out.append(ForbiddenGuess(
                f"{_slug(t.name)}-again", t.name,
                f"succeeded {s.max_ok_in_trace} times in one trace; needs rules.completion",
                after_completed=completion[t.name],
                message=f"a second {t.name} after the first succeeded"))
    return out


class _Keys:
    """Unique ledger keys."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, key: str) -> str:
        out, i = key, 2
        while out in self.used:
            out, i = f"{key}_{i}", i + 1
        self.used.add(out)
        return out


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:60] or "tool"


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
