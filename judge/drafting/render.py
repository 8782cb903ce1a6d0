"""A `Draft` as commented scenario YAML, for a person to review and edit.

Live YAML: `status: draft`, the id and goal, the draft ledger, the tool lists (read,
mutating, allowed: every tool seen), the lookup rules that hold on the traces and the judge
rubrics (scope_fidelity on the write tools; summary_fidelity when there are summaries).
Commented out, ready to uncomment: a completion predicate, forbidden calls, confirmation,
budgets and lookups that held only sometimes. Comments say where each guess comes from.

Every string from a trace is a quoted scalar and every tool name a literal glob
(`judge.drafting.yamltext`); comments are one line with unprintable characters escaped.
With `live=True` the suggestions are written uncommented (a test checks that they, too,
parse and validate).
"""

from __future__ import annotations

from judge.drafting.draft import Draft, LookupGuess, ToolGuess
from judge.drafting.yamltext import comment_text, flow_list, literal_glob, quote, scalar

HEADER = """\
# DRAFT written by `judge init` from {traces} in {files}: a starting point for a person
# who knows the task, not a reviewed oracle. Every entry is a guess from what the traces
# did; the comments say what each guess rests on. Review each section, correct it, uncomment
# the suggestions that apply, then delete the `status: draft` line (a scenario without it
# counts as reviewed). Until then `judge validate` warns, and `judge validate --strict` and
# `pytest --judge-strict` refuse it. Format: `judge schema scenario`, examples/scenarios/.
"""


class _Out:
    def __init__(self, live: bool) -> None:
        self.lines: list[str] = []
        self.live = live

    def add(self, line: str = "", note: str | None = None) -> None:
        if note:
            line = f"{line}  # {comment_text(note)}" if line else f"# {comment_text(note)}"
        self.lines.append(line)

    def note(self, text: str, indent: int = 0, limit: int = 96) -> None:
        self.lines.append(" " * indent + "# " + comment_text(text, limit))

    def suggest(self, line: str, note: str | None = None, base: int = 2) -> None:
        """A suggested line: commented out unless live, with `# ` after the block's `base`
        indentation, as an editor comments a block (and uncommenting restores it)."""
        body = line if note is None else f"{line}  # {comment_text(note)}"
        if self.live:
            self.lines.append(body)
        else:
            self.lines.append(body[:base] + "# " + body[base:])


def render(draft: Draft, files: int, live: bool = False) -> str:
    o = _Out(live)
    obs = draft.obs
    shown = ", ".join(obs.trace_ids[:5]) + (", …" if obs.traces > 5 else "")
    o.lines.extend(HEADER.format(traces=_n(obs.traces, "trace"), files=_n(files, "file"))
                   .splitlines())
    o.note(f"Traces: {shown}")
    for w in draft.warnings:
        o.note(f"Note: {w}")
    o.add()
    _tools_table(o, draft)
    o.add("status: draft", "remove once reviewed")
    o.add(f"id: {quote(draft.id)}", draft.id_note)
    o.note(f"The goal: {draft.goal_note}")
    o.add(f"goal: {quote(draft.goal)}")
    o.add()
    _ledger(o, draft)
    o.add()
    _rules(o, draft)
    o.add()
    _judge(o, draft)
    o.add()
    o.add("metadata:")
    o.add('  drafted_by: "judge init"')
    o.add("  drafted_from:", f"the first {len(obs.trace_ids)} of {obs.traces} traces"
          if obs.traces > len(obs.trace_ids) else None)
    for trace_id in obs.trace_ids:
        o.add(f"    - {quote(trace_id)}")
    _entities(o, draft)
    return "\n".join(o.lines) + "\n"


def _tools_table(o: _Out, draft: Draft) -> None:
    if not draft.tools:
        o.note("No tool calls in these traces.")
        o.add()
        return
    o.note(f"Tools seen ({draft.obs.traces} traces; calls, results ok/failed): guess, why")
    width = min(32, max(len(comment_text(t.name, 32)) for t in draft.tools))
    for t in draft.tools:
        s = t.stats
        calls = _n(s.calls, "call")
        o.note(f"  {comment_text(t.name, 32):<{width}}  {calls:>11}, {s.ok}/{s.failed}  "
               f"{t.kind}: {'; '.join(t.reasons)}", limit=120)
    o.add()


def _ledger(o: _Out, draft: Draft) -> None:
    o.note("The reviewed ledger, drafted: check each class, sensitivity and value; add the "
           "constraints and permissions the task has (nothing in a trace says what is "
           "forbidden).")
    o.add("ledger:")
    for e in draft.ledger:
        o.note(e.note, 2)
        o.add(f"  - turn: {draft.turn}")
        o.add("    op: set")
        o.add(f"    key: {quote(e.key)}")
        o.add(f"    class: {e.class_}")
        o.add(f"    persistence: {e.persistence}")
        o.add(f"    sensitivity: {e.sensitivity}")
        o.add("    source: user")
        o.add(f"    value: {scalar(e.value)}")


def _tools(o: _Out, field: str, tools: list[ToolGuess], note: str | None = None) -> None:
    if not tools:
        o.add(f"  {field}: []", note)
        return
    o.add(f"  {field}:", note)
    for t in tools:
        o.add(f"    - {quote(literal_glob(t.name))}", "; ".join(t.reasons) if field !=
              "allowed_tools" else None)


def _rules(o: _Out, draft: Draft) -> None:
    o.add("rules:")
    _tools(o, "read_tools", draft.kind("read"))
    _tools(o, "mutating_tools", draft.kind("write"))
    others = draft.kind("handoff") + draft.kind("unclassified")
    for t in others:
        o.note(f"{t.kind}: {t.name} ({'; '.join(t.reasons)})", 2)
    if draft.tools:
        _tools(o, "allowed_tools", draft.tools,
               "every tool seen; a call of any other tool is a veto")
    else:
        o.note("no tool call seen, so no allow-list (allowed_tools)", 2)
    if draft.lookups:
        o.add("  lookups:", "the id came from an earlier successful result, in every call seen")
        for lk in draft.lookups:
            o.add(f"    - {_lookup(lk)}", f"{lk.held} of {_n(lk.calls, 'call')}")
    if draft.partial_lookups:
        if not draft.lookups:
            o.suggest("  lookups:")
        o.note("held in some calls only: the other ids came from the user or from nowhere",
               4)
        for lk in draft.partial_lookups:
            o.suggest(f"    - {_lookup(lk)}", f"{lk.held} of {_n(lk.calls, 'call')}")
    writes = draft.kind("write")
    if draft.completion:
        o.note("Suggestion: the task is done when these succeed; keep the ones that are "
               "the goal", 2)
        o.suggest("  completion:")
        o.suggest("    all_of:")
        for t in writes:
            key = draft.completion.get(t.name)
            if key is not None:
                o.suggest(f"      - {{key: {quote(key)}, tool: {quote(literal_glob(t.name))}}}",
                          f"succeeded in {t.stats.ok} of {_n(t.stats.calls, 'call')}")
    if draft.forbidden:
        o.note("Suggestion: calls that must never happen (each is a hard veto)", 2)
        o.suggest("  forbidden:")
        for f in draft.forbidden:
            o.suggest(f"    - name: {quote(f.name)}", f.note)
            o.suggest(f"      tool: {quote(literal_glob(f.tool))}")
            if f.not_in is not None:
                path, ids = f.not_in
                o.suggest("      args:")
                o.suggest(f"        - {{path: {quote(path)}, not_in: {flow_list(ids)}}}")
            if f.after_completed is not None:
                o.suggest(f"      after_completed: {quote(f.after_completed)}")
            if f.message is not None:
                o.suggest(f"      message: {quote(f.message)}")
    if writes:
        o.note("Suggestion: writes that need the user's explicit yes after the agent "
               "stated the action", 2)
        o.suggest("  confirmation:")
        o.suggest("    tools:")
        for t in writes:
            o.suggest(f"      - {quote(literal_glob(t.name))}",
                      f"{t.stats.confirmed} of {_n(t.stats.calls, 'call')} came right after "
                      "a user yes")
    obs = draft.obs
    if obs.max_calls:
        o.note("Suggestion: budgets", 2)
        o.suggest("  budgets:")
        o.suggest(f"    max_steps: {max(10, 2 * obs.max_calls)}",
                  f"the longest trace made {_n(obs.max_calls, 'tool call')}")
        o.suggest(f"    max_identical_calls: {max(2, obs.max_identical)}",
                  f"at most {obs.max_identical} identical calls in one trace")


def _lookup(lk: LookupGuess) -> str:
    sources = [literal_glob(s) for s in lk.lookups]
    return (f"{{mutate: {quote(literal_glob(lk.mutate))}, arg: {quote(lk.arg)}, "
            f"lookup: {flow_list(list(sources))}}}")


def _judge(o: _Out, draft: Draft) -> None:
    writes = draft.kind("write")
    if not writes and not draft.obs.summaries:
        o.add("judge: []", "no write tool or summary seen: add the rubrics that apply")
        return
    o.add("judge:")
    if writes:
        o.add("  - rubric: scope_fidelity", "the judge grades every call of a write tool")
        o.add("    on: tool_call")
        o.add("    tools:")
        for t in writes:
            o.add(f"      - {quote(literal_glob(t.name))}")
    if draft.obs.summaries:
        o.add("  - rubric: summary_fidelity",
              f"{_n(draft.obs.summaries, 'summary')} in the traces")
        o.add("    on: summary")


def _entities(o: _Out, draft: Draft) -> None:
    if not draft.entities:
        return
    o.add()
    total = len(draft.obs.entities)
    more = " (and more, not counted)" if draft.obs.more_entities else ""
    o.note(f"Entity ids in tool call arguments ({len(draft.entities)} of {total}{more}; "
           "ids no earlier message or result carried first): calls, where the id came from")
    for e in draft.entities:
        where = []
        if e.unexplained:
            where.append(f"NOWHERE earlier in {_n(e.unexplained, 'call')}")
        if e.from_user:
            where.append("the user")
        if e.from_results:
            where.append("results of " + ", ".join(sorted(e.from_results)[:3]))
        uses = sum(e.uses.values())
        first = e.uses.most_common(1)[0][0]
        o.note(f"  {comment_text(str(e.value), 40)}: {_n(uses, 'call')} ({first}"
               f"{', …' if len(e.uses) > 1 else ''}); from {', '.join(where)}", limit=120)


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
