"""The conversation a stream of model calls adds up to (judge.importers.conversation): every
distinct message once, every repetition kept — decided by ids and positions, never by
content alone. Properties over generated agent runs with loops, sliding windows and tool
executions recorded beside the model's own calls."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from judge.importers.conversation import Conversation, overlap
from judge.importers.messages import Msg, ToolCall

SETTINGS = settings(max_examples=200, deadline=None)

# a small vocabulary, so that identical messages (loops) are common
TEXTS = ["ok", "yes", "ls", "again", "done", "hmm"]
TOOLS = ["bash", "search"]


@st.composite
def runs(draw: Any) -> list[list[Msg]]:
    """An agent run as its model calls' outputs (each a list of messages), with the user
    turns and tool results between them; ids on the calls (and results) or none at all."""
    with_ids = draw(st.booleans())
    steps = draw(st.integers(1, 8))
    run: list[list[Msg]] = []
    n = 0
    for _ in range(steps):
        before: list[Msg] = []
        if draw(st.booleans()):
            before.append(Msg("user", draw(st.sampled_from(TEXTS))))
        if draw(st.booleans()):
            n += 1
            cid = f"c{n}" if with_ids else None
            call = ToolCall(draw(st.sampled_from(TOOLS)), {"cmd": draw(st.sampled_from(TEXTS))},
                            cid)
            out = Msg("assistant", draw(st.sampled_from([None, *TEXTS])), [call])
            result = Msg("tool", call_id=cid, tool=call.name,
                         result=draw(st.sampled_from(TEXTS)))
            run.append([*before, out, result])
        else:
            run.append([*before, Msg("assistant", draw(st.sampled_from(TEXTS)))])
    return run


def _events_of(msgs: list[Msg]) -> list[tuple[Any, ...]]:
    conv = Conversation()
    return [_key(e) for e in conv.messages(msgs, {})]


def _key(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e["kind"], e.get("text"), e.get("tool"), str(e.get("args")), e.get("call_id"),
            str(e.get("result")))


def _feed(run: list[list[Msg]], window: int | None) -> list[tuple[Any, ...]]:
    """The run as a span exporter records it: each model call's input is the history so
    far (all of it, or the last `window` messages), its output the assistant message."""
    conv = Conversation()
    history: list[Msg] = []
    out: list[dict[str, Any]] = []
    for k, step in enumerate(run):
        *before, answer = step if step[-1].role != "tool" else step[:-1]
        history.extend(before)
        shown = history if window is None else history[-window:]
        out += conv.inputs(list(shown), {}, call=k)
        out += conv.outputs([answer], {}, call=k)
        history.append(answer)
        if step[-1].role == "tool":
            history.append(step[-1])
    # the final input restates the last result (as the next call would)
    shown = history if window is None else history[-window:]
    out += conv.inputs(list(shown), {}, call="end")
    return [_key(e) for e in out]


@SETTINGS
@given(run=runs())
def test_whole_histories_give_each_message_once(run: list[list[Msg]]) -> None:
    assert _feed(run, None) == _events_of([m for step in run for m in step])


@SETTINGS
@given(run=runs(), window=st.integers(4, 12))
def test_sliding_windows_give_each_message_once_where_ids_tell(run: list[list[Msg]],
                                                               window: int) -> None:
    """A window that still shows the last message seen continues the alignment: nothing is
    lost, nothing said twice (a window shorter than a loop's period cannot be told from
    new messages without ids; runs here keep ids on every call)."""
    has_ids = any(c.call_id for step in run for m in step for c in m.calls)
    if not has_ids:
        return
    expected = _events_of([m for step in run for m in step])
    got = _feed(run, window)
    assert [k for k in got if k[0] in ("tool_call", "tool_result")] == \
        [k for k in expected if k[0] in ("tool_call", "tool_result")]


def test_five_identical_calls_are_five_calls() -> None:
    conv = Conversation()
    msgs = [Msg("user", "guess")]
    for i in range(5):
        msgs += [Msg("assistant", None, [ToolCall("bash", {"cmd": "ls"}, f"c{i}")]),
                 Msg("tool", call_id=f"c{i}", result="bin boot")]
    events = conv.messages(msgs, {})
    assert [e["kind"] for e in events].count("tool_call") == 5
    assert [e["kind"] for e in events].count("tool_result") == 5


def test_identical_calls_without_ids_are_told_apart_by_position() -> None:
    """No ids anywhere: a history that grows by one identical call each time is one new
    call each time (by position), not "already seen"."""
    conv = Conversation()
    history = [Msg("user", "guess")]
    calls = 0
    for k in range(4):
        events = conv.inputs(list(history), {}, call=k)
        out = Msg("assistant", None, [ToolCall("bash", {"cmd": "ls"})])
        events += conv.outputs([out], {}, call=k)
        calls += sum(e["kind"] == "tool_call" for e in events)
        history += [out, Msg("tool", result="bin boot")]
        assert sum(e["kind"] == "tool_result" for e in
                   conv.inputs(list(history), {}, call=f"r{k}")) == 1
    assert calls == 4


def test_a_tool_execution_and_the_models_call_are_one_call() -> None:
    conv = Conversation()
    conv.inputs([Msg("user", "go")], {}, call=1)
    out = conv.outputs([Msg("assistant", None, [ToolCall("bash", {"cmd": "ls"}, "x1")])], {},
                       call=1)
    assert conv.tool_call("bash", None, {"cmd": "ls"}, {}, key="span") == []
    (res,) = conv.tool_result("bash", None, "bin", None, {}, key="span")
    assert res["call_id"] == "x1" and len(out) == 1
    # the next call's input restates the call and its result: nothing new
    again = conv.inputs([Msg("user", "go"), Msg("assistant", None, [
        ToolCall("bash", {"cmd": "ls"}, "x1")]), Msg("tool", call_id="x1", result="bin")],
        {}, call=2)
    assert again == []


def test_overlap_whole_history_window_and_pinned_task() -> None:
    seen = [("u", 1), ("a", 2), ("u", 3), ("a", 4)]
    assert overlap(seen, [*seen, ("u", 5)]) == 4          # the whole history
    assert overlap(seen, [("u", 3), ("a", 4), ("u", 5)]) == 2  # a sliding window
    assert overlap(seen, [("u", 1), ("a", 4), ("u", 5)]) == 2  # pinned task + window
    assert overlap(seen, [("u", 9)]) == 0                      # another conversation
