"""`judge validate`: every cross-reference of a scenario, checked before anything runs.

Keys used by rules, checkpoints and audit phrases exist in the reviewed ledger; completion
sub-goals name completion or goal keys; tools named anywhere are on the allow-list when there
is one; mutating and read tools do not overlap, and tools that rules treat as writes
(lookup `mutate`, confirmation) are mutating; regexes compile; rubric names are known;
`rules.severity` names known rules; the expected outcome's writes are allowed, mutating tools
and its end-state rules fit its fixture; the leakage block's key is a ledger key.
Each problem is an `InputError` naming the file, the line, the path and the field.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import yaml

from judge.checks.matching import any_glob
from judge.checks.runner import CHECK_NAMES
from judge.checks.textforms import fold
from judge.data.builtin import prompts_dir as builtin_prompts_dir
from judge.errors import InputError
from judge.ledger.loader import LoadedScenario, _line_of
from judge.ledger.scenario import ArgMatcher, EntryClass
from judge.textview import plain

BUILTIN_RUBRICS = frozenset({"scope_fidelity", "summary_fidelity"})
_GLOB_CHARS = re.compile(r"[*?\[]")


def known_rubrics(extra_dirs: Iterable[Path] = ()) -> set[str]:
    """Built-in rubrics plus every directory of the built-in prompts (judge.data.builtin) and
    of the user prompts directory (JUDGE_PROMPTS_DIR or judge.toml `prompts_dir`)."""
    names = set(BUILTIN_RUBRICS)
    for d in (builtin_prompts_dir(), *_user_prompt_dirs(), *extra_dirs):
        if d.is_dir():
            names.update(p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
    return names


def _user_prompt_dirs() -> list[Path]:
    """judge.settings.prompts_dir, read here with the standard library because checks may
    not import settings (tests/test_layering.py; tests/test_prompt_sources.py holds the two
    equal). A broken config file is reported by the command that loads its settings."""
    named = os.environ.get("JUDGE_PROMPTS_DIR")
    if named:
        return [Path(named)]
    config = os.environ.get("JUDGE_CONFIG") or "judge.toml"
    try:
        table = tomllib.loads(Path(config).read_text(encoding="utf-8")).get("judge", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    value = table.get("prompts_dir") if isinstance(table, dict) else None
    return [Path(config).parent / value] if isinstance(value, str) and value else []


class _Problems:
    def __init__(self, loaded: LoadedScenario) -> None:
        self.file = loaded.file
        self.out: list[InputError] = []
        try:
            self.node: yaml.Node | None = yaml.compose(Path(loaded.file).read_text("utf-8"))
        except (OSError, yaml.YAMLError):
            self.node = None

    def add(self, loc: tuple[str | int, ...], message: str) -> None:
        path = ""
        for part in loc:
            path += f"[{part}]" if isinstance(part, int) else ("." if path else "") + part
        field = next((p for p in reversed(loc) if isinstance(p, str)), None)
        line = _line_of(self.node, loc) if self.node is not None else None
        self.out.append(InputError(message, file=self.file, line=line, path=path or None,
                                   field=field))


def validate_scenario(loaded: LoadedScenario,
                      rubrics: set[str] | None = None) -> list[InputError]:
    """Every broken cross-reference of a loaded scenario (empty = valid)."""
    sc = loaded.scenario
    rules = sc.rules
    p = _Problems(loaded)
    keys = loaded.ledger.keys()
    classes = {d.key: d.class_ for d in sc.ledger if d.class_ is not None}
    list_keys = {d.key for d in sc.ledger if isinstance(d.value, list)}
    allowed = rules.allowed_tools
    known = rubrics if rubrics is not None else known_rubrics()

    def key(loc: tuple[str | int, ...], k: str | None, done: bool = False) -> None:
        if k is None:
            return
        if k not in keys:
            p.add(loc, f"key '{k}' is not in the reviewed ledger (keys: "
                       f"{', '.join(sorted(keys)) or 'none'})")
        elif done and classes.get(k) not in (EntryClass.COMPLETION, EntryClass.GOAL):
            cls = classes.get(k)
            p.add(loc, f"key '{k}' is a {cls.value if cls else '?'}, not a completion or "
                       "goal key")

    def tool(loc: tuple[str | int, ...], name: str) -> None:
        if allowed is None:
            return
        if _GLOB_CHARS.search(name):
            plain = [a for a in allowed if not _GLOB_CHARS.search(a)]
            if name not in allowed and not any(any_glob(a, [name]) for a in plain):
                p.add(loc, f"tool pattern '{name}' matches no tool of allowed_tools")
        elif not any_glob(name, allowed):
            p.add(loc, f"tool '{name}' is not in allowed_tools")

    def mutating(loc: tuple[str | int, ...], name: str, why: str) -> None:
        """A tool a rule treats as a write must be among the mutating tools (if listed)."""
        mut = rules.mutating_tools
        if not mut:
            return
        if _GLOB_CHARS.search(name):
            ok = name in mut or any(any_glob(m, [name]) for m in mut)
        else:
            ok = any_glob(name, mut)
        if not ok:
            p.add(loc, f"tool '{name}' {why} but is not in mutating_tools")

    def regex(loc: tuple[str | int, ...], pattern: str | None) -> None:
        if pattern is None:
            return
        try:
            re.compile(pattern)
        except re.error as exc:
            p.add(loc, f"invalid regular expression ({exc})")

    def matchers(loc: tuple[str | int, ...], ms: list[ArgMatcher]) -> None:
        for j, m in enumerate(ms):
            for fld in ("equals_key", "in_key", "not_in_key"):
                k = getattr(m, fld)
                key((*loc, j, fld), k)
                if fld != "equals_key" and k in keys and k not in list_keys:
                    p.add((*loc, j, fld), f"key '{k}' never holds a list, so '{fld}' "
                                          "cannot test membership")
            regex((*loc, j, "matches"), m.matches)

    r: tuple[str | int, ...] = ("rules",)
    for i, t in enumerate(rules.mutating_tools):
        tool((*r, "mutating_tools", i), t)
        if t in rules.read_tools:
            p.add((*r, "mutating_tools", i), f"tool '{t}' is listed as both mutating and read")
    for i, t in enumerate(rules.read_tools):
        tool((*r, "read_tools", i), t)
    for i, f in enumerate(rules.forbidden):
        loc = (*r, "forbidden", i)
        tool((*loc, "tool"), f.tool)
        key((*loc, "key"), f.key)
        key((*loc, "after_completed"), f.after_completed, done=True)
        matchers((*loc, "args"), f.args)
    if rules.completion is not None:
        c = rules.completion
        loc = (*r, "completion")
        seen: set[str] = set()
        for i, g in enumerate(c.all_of):
            key((*loc, "all_of", i, "key"), g.key, done=True)
            if g.key in seen:
                p.add((*loc, "all_of", i, "key"), f"sub-goal key '{g.key}' appears twice")
            seen.add(g.key)
            tool((*loc, "all_of", i, "tool"), g.tool)
            matchers((*loc, "all_of", i, "args"), g.args)
            for j, rm in enumerate(g.result):
                regex((*loc, "all_of", i, "result", j, "matches"), rm.matches)
        for i, t in enumerate(c.allowed_after):
            tool((*loc, "allowed_after", i), t)
        for i, pat in enumerate(c.success_claims):
            regex((*loc, "success_claims", i), pat)
    for i, lk in enumerate(rules.lookups):
        loc = (*r, "lookups", i)
        tool((*loc, "mutate"), lk.mutate)
        mutating((*loc, "mutate"), lk.mutate, "is mutated by a lookup rule")
        for j, t in enumerate(lk.lookups()):
            tool((*loc, "lookup", j) if isinstance(lk.lookup, list) else (*loc, "lookup"), t)
    if rules.confirmation is not None:
        loc = (*r, "confirmation")
        for i, t in enumerate(rules.confirmation.tools):
            tool((*loc, "tools", i), t)
            mutating((*loc, "tools", i), t, "needs confirmation")
        for i, pat in enumerate(rules.confirmation.patterns):
            regex((*loc, "patterns", i), pat)
    for kind in ("required", "obsolete"):
        for i, ap in enumerate(getattr(rules.summary_audit, kind)):
            key((*r, "summary_audit", kind, i, "key"), ap.key)
    subgoals = {g.key for g in rules.completion.all_of} if rules.completion else set()
    for i, cp in enumerate(sc.checkpoints):
        loc = ("checkpoints", i)
        snap = loaded.ledger.at(cp.after_turn)
        for j, k in enumerate(cp.active):
            key((*loc, "active", j), k)
            if k in keys and not snap.is_active(k):
                e = snap.entries.get(k)
                p.add((*loc, "active", j), f"key '{k}' is not active after turn "
                      f"{cp.after_turn} in the reviewed ledger "
                      f"({e.status if e else 'not set yet'})")
        for j, k in enumerate(cp.completed):
            key((*loc, "completed", j), k, done=True)
            if k in keys and k not in subgoals:
                p.add((*loc, "completed", j), f"key '{k}' is not a completion sub-goal, so "
                      "the trace cannot show it completed")
        for j, t in enumerate(cp.prohibited_tools):
            tool((*loc, "prohibited_tools", j), t)
    for i, d in enumerate(sc.ledger):
        if d.after_tool is not None:
            tool(("ledger", i, "after_tool"), d.after_tool)
        for j, rm in enumerate(d.after_result or []):
            regex(("ledger", i, "after_result", j, "matches"), rm.matches)
    for i, t in enumerate(rules.memory.tools):
        tool((*r, "memory", "tools", i), t)
    for name in rules.severity:
        if name not in CHECK_NAMES:
            p.add((*r, "severity", name), f"no rule is called '{name}' (rules: "
                  f"{', '.join(sorted(CHECK_NAMES))})")
    if sc.outcome is not None:
        o = sc.outcome
        for i, w in enumerate(o.writes):
            loc = ("outcome", "writes", i)
            tool((*loc, "tool"), w.tool)
            mutating((*loc, "tool"), w.tool, "is a required write")
            matchers((*loc, "args"), w.args)
        if o.end_state is not None and o.end_state.fixture is not None:
            fixture = o.end_state.fixture
            for i, rr in enumerate(o.end_state.rules):
                there = rr.record in fixture.get(rr.collection, {})
                if rr.created and there:
                    p.add(("outcome", "end_state", "rules", i, "record"),
                          f"record {rr.collection}/{rr.record} is to be created but is in "
                          "the fixture already")
                elif not rr.created and not there and (rr.unchanged or rr.deleted):
                    p.add(("outcome", "end_state", "rules", i, "record"),
                          f"record {rr.collection}/{rr.record} is not in the fixture")
    if sc.leakage is not None:
        key(("leakage", "key"), sc.leakage.key)
        # compared as the check compares them: folded, as a reader sees them
        own = {fold(plain(str(x))) for x in sc.leakage.user.ids}
        for i, tenant in enumerate(sc.leakage.other_tenants):
            for j, fact in enumerate(tenant.facts):
                if fact.value is not None and fold(plain(str(fact.value))) in own:
                    p.add(("leakage", "other_tenants", i, "facts", j, "value"),
                          f"{fact.value!r} is one of leakage.user.ids: a fact cannot be both "
                          "the user's and another owner's")
    for i, use in enumerate(sc.judge):
        if use.rubric not in known:
            p.add(("judge", i, "rubric"), f"unknown rubric '{use.rubric}' (known: "
                  f"{', '.join(sorted(known))})")
        if use.on == "tool_call":
            for j, t in enumerate(use.tools):
                if t != "*":
                    tool(("judge", i, "tools", j), t)
    return p.out
