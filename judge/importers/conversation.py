"""The conversation that a stream of model calls and tool executions adds up to: trace
events, every distinct message once and every repetition kept.

Sources say the same message several times: each model call's input repeats the history
(whole, or the last N messages), a framework's tool span restates the call the model made,
and the next call's input restates the tool's result. Loops say *different* messages with
the same content: five identical `bash {"cmd": "ls"}` calls are five calls. So a message is
"seen before" only by identity, never by content alone:

- **by id** first: a tool result whose call id already has its result, an assistant
  message whose calls' ids are all events already, are the same message again;
- **by position** otherwise: the input's messages (all but results with a call id; ids left
  out of the comparison) are aligned with the conversation so far — the longest stretch of
  the input's start that matches the end of what was seen (a whole history, or a sliding
  window), or its first messages plus such a stretch (a pinned task, then a window) — and
  only what comes after is new. A conversation that matches none seen so far (a sub-agent,
  another request) starts a thread of its own.

`messages()` is for sources that list each message once (an inspect sample, an OpenAI or
Anthropic message list): every message is an event. `outputs()` (a call's output) is always
new. Every event carries its `source` in `metadata`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from judge.importers.messages import Msg, ToolCall, system_fingerprint

Key = tuple[Any, ...]


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def fingerprint(msg: Msg) -> Key:
    """A message's content, ids left out (what position-based alignment compares)."""
    if msg.role == "tool":
        body = msg.error if msg.error is not None else (
            msg.result if isinstance(msg.result, str) else _canon(msg.result))
        return ("tool", _norm(body))
    calls = tuple(f"{c.name}:{_canon(c.args)}" for c in msg.calls)
    return (msg.role, _norm(msg.text), *calls)


def _aligned(msg: Msg) -> bool:
    """Whether a message takes part in position-based alignment: all but tool results
    with a call id (those are known by their id, and parallel calls' results come in
    any order)."""
    return msg.role != "tool" or not msg.call_id


def _suffix_overlap(seen: list[Key], new: list[Key]) -> int:
    """The largest j with new[:j] == seen[-j:]."""
    if not seen or not new:
        return 0
    last = seen[-1]
    for j in range(min(len(seen), len(new)), 0, -1):
        if new[j - 1] == last and new[:j] == seen[len(seen) - j:]:
            return j
    return 0


def overlap(seen: list[Key], new: list[Key]) -> int:
    """How many of `new`'s first messages are messages of `seen` (see the module doc)."""
    best = _suffix_overlap(seen, new)
    if best < len(new) and seen and new and new[0] == seen[0]:
        head = 0
        while head < min(len(seen), len(new)) and seen[head] == new[head]:
            head += 1
        if head == len(new):
            return head
        best = max(best, head + _suffix_overlap(seen[head:], new[head:]))
    return best


@dataclass
class _Thread:
    keys: list[Key] = field(default_factory=list)  # its aligned messages, in order


@dataclass(eq=False)
class _Open:
    """A call whose result is not an event yet."""

    name: str
    call_id: str | None
    taken: bool = False  # a tool execution answers it
    args: str | None = None  # canonical arguments of a call an execution made (an orphan)
    alias: str | None = None  # the id the model's own record of that call has
    answered: bool = False


def merge_chunks(msgs: list[Msg]) -> list[Msg]:
    """A model output recorded as a stream of text chunks (three or more assistant
    messages of text alone, one after another) as the one message it was."""
    out: list[Msg] = []
    run: list[Msg] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append(Msg("assistant", "".join(m.text or "" for m in run),
                           omitted=sum(m.omitted for m in run)))
        else:
            out.extend(run)
        run.clear()

    for m in msgs:
        if m.role == "assistant" and not m.calls and m.text is not None and not m.meta:
            run.append(m)
        else:
            flush()
            out.append(m)
    flush()
    return out


class Conversation:
    """Events of one trace, in the order the calls are fed in (see the module docstring)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}           # call id -> tool name
        self._open: list[_Open] = []               # calls without a result, oldest first
        self._answered: set[str] = set()           # call ids whose result is an event
        self._called: set[str] = set()             # call ids whose call is an event
        self._threads: list[_Thread] = []
        self._call_thread: dict[Any, _Thread] = {}  # a model call's key -> its thread
        self._last: _Thread | None = None
        self._executing: dict[Any, _Open] = {}     # a tool execution's key -> its call
        self._span_results: list[tuple[str, Key]] = []  # results of tool executions
        self._orphans: list[_Open] = []            # calls only an execution recorded
        self.systems: list[dict[str, Any]] = []
        self._system_seen: set[str] = set()
        self.last_tool: str | None = None
        self.omitted: Counter[str] = Counter()

    # -- what is known ---------------------------------------------------------------------
    def _known_by_id(self, msg: Msg) -> bool:
        if msg.role == "tool":
            return bool(msg.call_id) and msg.call_id in self._answered
        ids = [c.call_id for c in msg.calls]
        return bool(ids) and all(i and i in self._called for i in ids)

    def _thread_for(self, keys: list[Key]) -> tuple[_Thread, int]:
        """The thread this input continues, and how many of its id-free messages it has."""
        if self._threads:
            j, _, n = max((overlap(t.keys, keys), t is self._last, n)
                          for n, t in enumerate(self._threads))
            if j > 0:
                return self._threads[n], j
            last = self._last or self._threads[-1]
            if not keys or not last.keys:
                return last, 0
        thread = _Thread()
        self._threads.append(thread)
        return thread, 0

    # -- model calls -------------------------------------------------------------------------
    def inputs(self, msgs: Iterable[Msg], source: dict[str, Any],
               call: Any = None) -> list[dict[str, Any]]:
        """The events for the messages of a model call's input not seen before. `call`
        names the call, so that its `outputs()` continue the same thread."""
        listed: list[Msg] = []
        for msg in msgs:
            if msg.role == "system":
                self.system(msg.text or "")
            else:
                listed.append(msg)
        free = [m for m in listed if _aligned(m)]
        thread, j = self._thread_for([fingerprint(m) for m in free])
        if call is not None:
            self._call_thread[call] = thread
        self._last = thread
        old = {id(m) for m in free[:j]}
        free_ids = {id(m) for m in free}
        out: list[dict[str, Any]] = []
        for msg in listed:
            if id(msg) in old or self._known_by_id(msg):
                continue
            if id(msg) in free_ids:
                key = fingerprint(msg)
                thread.keys.append(key)
                if msg.role == "tool" and self._claim(key):
                    continue
            out.extend(self._events(msg, source))
        return out

    def _claim(self, key: Key) -> bool:
        """A tool result without a call id in an input that a tool execution already gave
        with the same content (the execution and the model's view of it: one result)."""
        for n, (_, seen) in enumerate(self._span_results):
            if seen == key:
                del self._span_results[n]
                return True
        return False

    def outputs(self, msgs: Iterable[Msg], source: dict[str, Any],
                call: Any = None) -> list[dict[str, Any]]:
        """The events for a model call's output (always new)."""
        thread = self._call_thread.pop(call, None) if call is not None else None
        thread = thread or self._last
        if thread is None:
            thread = _Thread()
            self._threads.append(thread)
        self._last = thread
        out: list[dict[str, Any]] = []
        for msg in merge_chunks(list(msgs)):
            if msg.role == "system":
                continue
            if _aligned(msg):
                thread.keys.append(fingerprint(msg))
            out.extend(self._events(msg, source))
        return out

    def messages(self, msgs: Iterable[Msg], source: dict[str, Any]) -> list[dict[str, Any]]:
        """Events for messages a source lists once each: every one is new."""
        out: list[dict[str, Any]] = []
        for msg in msgs:
            if msg.role == "system":
                self.system(msg.text or "")
                continue
            out.extend(self._events(msg, source))
        return out

    def system(self, text: str) -> None:
        fp = system_fingerprint(text)
        if fp["sha256"] not in self._system_seen:
            self._system_seen.add(fp["sha256"])
            self.systems.append(fp)

    # -- tool executions ----------------------------------------------------------------------
    def _pair(self, name: str, call_id: str | None) -> _Open | None:
        """The open call a tool execution answers: the one with its id; else the oldest
        open call of the same tool that no other execution answers (one without an id,
        for an execution that has one)."""
        if call_id:
            for entry in self._open:
                if entry.call_id == call_id:
                    return entry
        for entry in self._open:
            if entry.name == name and not entry.taken and (not call_id or
                                                           entry.call_id is None):
                return entry
        return None

    def tool_call(self, name: str, call_id: str | None, args: dict[str, Any],
                  source: dict[str, Any], key: Any = None) -> list[dict[str, Any]]:
        """A tool execution's call: an event unless the model's output already made it.
        `key` names the execution, so that its `tool_result` answers the same call."""
        entry = self._pair(name, call_id)
        if entry is None and call_id and call_id in self._called:
            return []  # made, and answered already
        if entry is None:
            msg = Msg("assistant", None, [ToolCall(name, args, call_id)])
            events = self._events(msg, source, execution=True)
            entry = self._open[-1]
            entry.args = _canon(args)  # the model's record of it may come later: one call
            self._orphans.append(entry)
            if self._last is not None:  # the model's view of it may follow in an input
                self._last.keys.append(fingerprint(msg))
        else:
            events = []
        entry.taken = True
        if key is not None:
            self._executing[key] = entry
        return events

    def tool_result(self, name: str, call_id: str | None, result: Any, error: str | None,
                    source: dict[str, Any], key: Any = None) -> list[dict[str, Any]]:
        """A tool execution's result (once per call id). An execution with an id that
        answers a call the model made without one keeps its id as `source_call_id`."""
        entry = self._executing.pop(key, None) if key is not None else None
        if entry is None:
            entry = self._pair(name, call_id)
        own = call_id
        if entry is not None:
            call_id = entry.call_id
            entry.answered = True
            if entry.alias:
                self._answered.add(entry.alias)
            if entry in self._open:
                self._open.remove(entry)
        if call_id and call_id in self._answered:
            return []
        src = dict(source)
        if own and own != call_id:
            src["source_call_id"] = own
        msg = Msg("tool", call_id=call_id, tool=name, result=result, error=error)
        self._span_results.append((name, fingerprint(msg)))
        if not call_id and self._last is not None:
            self._last.keys.append(fingerprint(msg))
        return self._events(msg, src, close=False)

    # -- events --------------------------------------------------------------------------------
    def _orphan_for(self, call: ToolCall) -> bool:
        """Whether a call the model made is one a tool execution already recorded (its span
        ran before the model's span ended): the same id, or the same tool and arguments
        where one of them has no id. Then it is that call, not another."""
        if call.call_id and any(e.call_id == call.call_id for e in self._orphans):
            self._orphans = [e for e in self._orphans if e.call_id != call.call_id]
            return True
        canon = _canon(call.args)
        for entry in self._orphans:
            if entry.name == call.name and entry.args == canon and entry.alias is None and (
                    entry.call_id is None or call.call_id is None):
                entry.alias = call.call_id or "(matched)"
                self._orphans.remove(entry)
                if call.call_id:
                    self._called.add(call.call_id)
                    if entry.answered:
                        self._answered.add(call.call_id)
                return True
        return False

    def _events(self, msg: Msg, source: dict[str, Any], close: bool = True,
                execution: bool = False) -> list[dict[str, Any]]:
        if msg.calls and self._orphans and not execution:
            calls = [c for c in msg.calls if not self._orphan_for(c)]
            if len(calls) != len(msg.calls):
                if not calls and not msg.text:
                    return []
                msg = Msg(msg.role, msg.text, calls, msg.call_id, msg.tool, msg.result,
                          msg.error, msg.omitted, msg.meta)
        md = dict(source)
        if msg.meta:
            md.update(msg.meta)
        if msg.omitted:
            self.omitted["reasoning"] += msg.omitted
        if msg.role == "user":
            return [{"kind": "user", "text": msg.text or "", "metadata": md}]
        if msg.role == "assistant":
            out: list[dict[str, Any]] = []
            if msg.text:
                amd = {**md, "with_tool_calls": True} if msg.calls else md
                out.append({"kind": "assistant", "text": msg.text, "metadata": amd})
            elif not msg.calls and not msg.omitted:
                out.append({"kind": "assistant", "text": "", "metadata": md})
            for call in msg.calls:
                ev: dict[str, Any] = {"kind": "tool_call", "tool": call.name,
                                      "args": call.args, "metadata": md}
                if call.call_id:
                    ev["call_id"] = call.call_id
                    self._names[call.call_id] = call.name
                    self._called.add(call.call_id)
                self._open.append(_Open(call.name, call.call_id))
                self.last_tool = call.name
                out.append(ev)
            return out
        # a tool message
        name = msg.tool or (self._names.get(msg.call_id) if msg.call_id else None)
        if close and not msg.call_id:
            name = self._close(name) or name
        name = name or self.last_tool or "(unknown tool)"
        ev = {"kind": "tool_result", "tool": name, "metadata": md}
        if msg.call_id:
            ev["call_id"] = msg.call_id
            self._answered.add(msg.call_id)
            self._open = [e for e in self._open if e.call_id != msg.call_id]
        if msg.error is not None:
            ev["error"] = msg.error
        else:
            ev["result"] = msg.result
        return [ev]

    def _close(self, name: str | None) -> str | None:
        """A result without a call id answers the oldest open call without one (of its tool,
        when it names one): that call is closed, and its tool named."""
        for entry in self._open:
            if entry.call_id is None and (name is None or entry.name == name):
                self._open.remove(entry)
                return entry.name
        return None
