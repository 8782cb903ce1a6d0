"""The bounded driver: a run it stops is `forced`, names the limit, and is not complete for
`judge check`; the call that would pass a limit is never made."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judge.record import Call, Limits, Recorder, Run, Step, drive, drive_async

ROOT = Path(__file__).resolve().parent.parent
REFUND_ONCE = ROOT / "examples" / "scenarios" / "refund-once"
JUDGE = str(Path(sys.executable).parent / "judge")


def refund_tools(rec: Recorder, made: list[str] | None = None) -> None:
    made = made if made is not None else []

    @rec.tool("get_order")
    def get_order(orderId: str) -> dict[str, Any]:
        made.append("get_order")
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    @rec.tool("refund_order", mutating=True)
    def refund_order(orderId: str, amountCents: int) -> dict[str, Any]:
        made.append("refund_order")
        return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

    @rec.tool("get_refund_status")
    def get_refund_status(refundId: str) -> dict[str, Any]:
        made.append("get_refund_status")
        return {"refundId": refundId, "status": "pending_settlement"}


def scripted(*steps: Step, then: Step | None = None) -> Callable[[Run], Step]:
    """A step function answering `steps` in order, then `then` for ever."""
    queue = list(steps)

    def next_step(run: Run) -> Step:
        if queue:
            return queue.pop(0)
        assert then is not None, "the agent ran out of steps"
        return then

    return next_step


LOOKUP = Step(calls=[Call("get_order", {"orderId": "order-17"})])
OFFER = Step(say="I can refund order-17 in full: $42.00. Shall I go ahead?", done=True)
REFUND = Step(calls=[Call("refund_order", {"orderId": "order-17", "amountCents": 4200})])
DONE = Step(say="Done: refund rf-1 of $42.00 is confirmed.", done=True)
STATUS = Step(calls=[Call("get_refund_status", {"refundId": "rf-1"})])


def check(trace: Path, fmt: str = "json") -> tuple[int, Any]:
    done = subprocess.run([JUDGE, "check", str(REFUND_ONCE), str(trace), "--format", fmt],
                          capture_output=True, text=True, timeout=120)
    if fmt != "json":
        return done.returncode, done.stdout
    (report,) = json.loads(done.stdout)["reports"]
    return done.returncode, report


def test_a_run_the_agent_finishes_is_finished_and_complete(tmp_path: Path) -> None:
    rec = Recorder("refund-once/driven", scenario="refund-once")
    refund_tools(rec)
    rec.user("Hi, order-17 arrived broken. I'd like a refund please.")
    first = drive(scripted(LOOKUP, OFFER), rec.tools, limits=Limits(max_steps=5))
    assert (first.termination, first.limit, first.steps, first.calls) == ("finished", None, 2, 1)
    rec.user("Yes, please.")
    second = drive(scripted(REFUND, DONE), rec.tools, limits=Limits(max_steps=5))
    assert not second.forced and second.mutations == 1
    assert rec.metadata["termination"] == "finished"
    assert rec.metadata["limits"] == {"max_steps": 5, "max_mutations": 5, "max_identical": 3,
                                      "timeout_s": 60.0}
    code, report = check(rec.save(tmp_path / "t.json"))
    assert code == 0
    assert report["completion"]["complete"] is True and "forced" not in report["completion"]


def test_a_driver_stopped_run_is_forced_and_not_complete(tmp_path: Path) -> None:
    """The refund went through, then the agent polled the status until max_steps: the
    terminal predicate held, but a run its driver had to stop is not a success."""
    rec = Recorder("refund-once/looping", scenario="refund-once")
    refund_tools(rec)
    rec.user("Hi, order-17 arrived broken. I'd like a refund please.")
    drive(scripted(LOOKUP, OFFER), rec.tools)
    rec.user("Yes, please.")
    result = drive(scripted(REFUND, then=STATUS), rec.tools,
                   limits=Limits(max_steps=6, max_identical=None))
    assert result.forced and result.limit == "max_steps" and result.steps == 6
    meta = rec.metadata
    assert meta["termination"] == "forced" and meta["termination_limit"] == "max_steps"
    assert meta["termination_reason"] == "6 steps taken without finishing (max_steps=6)"
    assert meta["drive"] == {"steps": 6, "calls": 6, "mutations": 1}
    saved = rec.save(tmp_path / "t.json")
    code, report = check(saved)
    assert code == 0  # not complete is a task-quality failure, not a veto
    assert report["completion"]["complete"] is False
    assert report["completion"]["forced"] == "max_steps"
    assert report["completion"]["seq"] == 7  # where the predicate held
    failure = next(f for f in report["findings"] if f["check"] == "completion")
    assert failure["message"] == ("run stopped by its driver (max_steps): the terminal "
                                  "predicate held at turn 2 (seq 7), but a forced termination "
                                  "is not a completed task")
    _, text = check(saved, "text")
    assert "completed at turn" not in text
    # the same events without the driver's mark are complete: the mark is what decides
    doc = json.loads(saved.read_text())
    doc["metadata"]["termination"] = "finished"
    (tmp_path / "unmarked.json").write_text(json.dumps(doc))
    assert check(tmp_path / "unmarked.json")[1]["completion"]["complete"] is True


def test_the_call_past_max_mutations_is_never_made(tmp_path: Path) -> None:
    made: list[str] = []
    rec = Recorder("refund-once/greedy", scenario="refund-once")
    refund_tools(rec, made)
    rec.user("Refund order-17, and again to be sure.")
    result = drive(scripted(LOOKUP, then=REFUND), rec.tools,
                   limits=Limits(max_mutations=1, max_identical=None))
    assert result.limit == "max_mutations" and made == ["get_order", "refund_order"]
    assert rec.metadata["termination_reason"] == ("`refund_order` would be mutating call 2 "
                                                  "(max_mutations=1)")
    assert [e["tool"] for e in rec.events if e["kind"] == "tool_call"] == ["get_order",
                                                                           "refund_order"]


def test_max_identical_stops_a_loop_of_equal_calls() -> None:
    made: list[str] = []
    rec = Recorder("t/identical")
    refund_tools(rec, made)
    result = drive(scripted(then=LOOKUP), rec.tools, limits=Limits(max_identical=3))
    assert result.limit == "max_identical" and made == ["get_order"] * 3
    assert rec.metadata["termination_reason"] == ("`get_order` called with the same arguments "
                                                  "4 times (max_identical=3)")
    # different arguments are different calls
    rec2 = Recorder("t/varied")
    refund_tools(rec2)
    varied = (Step(calls=[Call("get_order", {"orderId": f"order-{i}"})])
              for i in itertools.count())
    assert drive(lambda run: next(varied), rec2.tools,
                 limits=Limits(max_steps=7)).limit == "max_steps"


def test_timeout_is_checked_before_each_step_and_call() -> None:
    now = itertools.count(0.0, 1.0)  # every reading is a second later
    rec = Recorder("t/slow")
    refund_tools(rec)
    result = drive(scripted(then=STATUS), rec.tools, clock=lambda: next(now),
                   limits=Limits(timeout_s=4.5, max_identical=None))
    assert result.limit == "timeout_s" and result.forced
    assert rec.metadata["termination_reason"] == "the run took longer than 4.5 s (timeout_s=4.5)"


def test_until_stops_when_the_terminal_predicate_holds() -> None:
    rec = Recorder("t/until")
    refund_tools(rec)

    def refunded(run: Run) -> bool:
        return any(o.call.tool == "refund_order" and o.result["status"] == "confirmed"
                   for o in run.last) or any(
            e["kind"] == "tool_result" and e["tool"] == "refund_order"
            and e["result"]["status"] == "confirmed" for e in run.events)

    result = drive(scripted(LOOKUP, REFUND, then=STATUS), rec.tools, until=refunded)
    assert result.termination == "finished" and result.calls == 2
    assert rec.metadata["termination_reason"] == "the terminal predicate (until) holds"


def test_failed_and_unknown_calls_are_news_for_the_next_step() -> None:
    rec = Recorder("t/errors")

    @rec.tool
    def flaky(n: int) -> int:
        raise TimeoutError("upstream timed out")

    seen: list[list[str]] = []

    def next_step(run: Run) -> Step:
        seen.append([f"{o.call.tool}:{type(o.error).__name__}" for o in run.last])
        if run.steps == 0:
            return Step(calls=[Call("flaky", {"n": 1}), Call("teleport", {"to": "Mars"})])
        return Step(say="Sorry, that did not work.", done=True)

    assert drive(next_step, rec.tools).termination == "finished"
    assert seen == [[], ["flaky:TimeoutError", "teleport:LookupError"]]
    errors = [e["error"] for e in rec.events if e["kind"] == "tool_result"]
    assert errors == ["TimeoutError: upstream timed out",
                      "LookupError: no tool named 'teleport' (tools: flaky)"]


def test_a_step_that_raises_marks_the_run_error_and_the_with_block_saves_it(
        tmp_path: Path) -> None:
    def broken(run: Run) -> Step:
        if run.steps:
            raise RuntimeError("model API down")
        return LOOKUP

    with pytest.raises(RuntimeError, match="model API down"), \
            Recorder("t/broken", path=tmp_path / "b.json") as rec:
        refund_tools(rec)
        drive(broken, rec.tools)
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["metadata"]["termination"] == "error"
    assert doc["metadata"]["error"] == "RuntimeError: model API down"
    assert doc["metadata"]["drive"]["steps"] == 1


def test_bad_arguments_are_refused_with_a_clear_message() -> None:
    rec = Recorder("t/bad")
    refund_tools(rec)
    with pytest.raises(ValueError, match="max_steps must be a whole number"):
        Limits(max_steps=0)
    with pytest.raises(ValueError, match="timeout_s must be a finite number"):
        Limits(timeout_s=float("nan"))
    with pytest.raises(TypeError, match=r"must return a judge\.record\.Step"):
        drive(lambda run: "done", rec.tools)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="must be a mapping"):
        Call("get_order", ["order-17"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Step\.calls must be a list"):
        drive(lambda run: Step(calls=Call("get_order")), rec.tools)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a recorded tool"):
        drive(scripted(DONE), {"plain": lambda: 1})
    other = Recorder("t/other")
    refund_tools(other)
    with pytest.raises(ValueError, match="same Recorder"):
        drive(scripted(DONE), [rec.tools["get_order"], other.tools["refund_order"]])
    # plain functions are recorded when the recorder is named
    plain = Recorder("t/plain")
    assert drive(scripted(Step(calls=[Call("echo", {"x": 1})]), DONE),
                 {"echo": lambda x: x}, recorder=plain).calls == 1
    assert plain.events[1]["result"] == 1


async def test_drive_async_cancels_a_tool_still_running_at_the_timeout() -> None:
    rec = Recorder("t/async")

    @rec.tool
    async def wait_for_courier(order: str) -> str:
        await asyncio.sleep(30)
        return "arrived"

    async def next_step(run: Run) -> Step:
        return Step(calls=[Call("wait_for_courier", {"order": "o-1"})])

    result = await drive_async(next_step, rec.tools, limits=Limits(timeout_s=0.2))
    assert result.limit == "timeout_s"
    assert rec.events[-1]["error"] == "CancelledError"
    assert "what was running was cancelled" in rec.metadata["termination_reason"]


async def test_drive_async_runs_sync_and_async_steps_and_tools() -> None:
    rec = Recorder("t/mixed")
    refund_tools(rec)

    @rec.tool
    async def notify(text: str) -> str:
        return "sent"

    steps = iter([LOOKUP, Step(calls=[Call("notify", {"text": "hi"})]), DONE])
    result = await drive_async(lambda run: next(steps), rec.tools)
    assert (result.termination, result.calls) == ("finished", 2)
    with pytest.raises(TypeError, match="is async: use drive_async"):
        drive(scripted(Step(calls=[Call("notify", {"text": "x"})])), rec.tools)


def test_a_hostile_or_missing_limit_name_is_shown_inert(tmp_path: Path) -> None:
    doc = json.loads((REFUND_ONCE / "pass.json").read_text())
    doc["metadata"] = {"termination": "forced", "termination_limit": "\x1b[31mmax\nsteps" * 9}
    (tmp_path / "evil.json").write_text(json.dumps(doc))
    code, text = check(tmp_path / "evil.json", "text")
    assert code == 0 and "\x1b" not in text
    assert "run stopped by its driver (\\x1b[31mmax steps" in text
    doc["metadata"] = {"termination": "forced", "termination_limit": 7}
    (tmp_path / "bare.json").write_text(json.dumps(doc))
    report = check(tmp_path / "bare.json")[1]
    assert report["completion"]["forced"] == "a limit"
    assert report["eligible"] is True  # not complete is a task-quality failure, not a veto
