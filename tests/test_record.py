"""judge.record's Recorder: what it writes is a trace `judge check` reads as the agent ran.

The refund example of issue #24 runs as a script (the README's copy of it runs in
tests/test_record_readme.py); each trace is then checked by the real `judge check` command.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from judge.record import Recorder
from judge.record.recorder import write_atomic
from judge.trace import load_traces

ROOT = Path(__file__).resolve().parent.parent
REFUND_ONCE = ROOT / "examples" / "scenarios" / "refund-once"
JUDGE = str(Path(sys.executable).parent / "judge")

EXAMPLE = '''
from judge.record import Recorder

rec = Recorder(trace_id="refund-once/live-1", scenario="refund-once")

@rec.tool("get_order")
def get_order(orderId: str) -> dict:
    return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

@rec.tool("refund_order", mutating=True)
def refund_order(orderId: str, amountCents: int) -> dict:
    return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

rec.user("Hi, order-17 arrived broken. I'd like a refund please.")
get_order(orderId="order-17")
rec.assistant("I can refund order-17 in full: $42.00. Shall I go ahead?")
rec.user("Yes, please.")
refund_order(orderId="order-17", amountCents=4200)
rec.assistant("Done: refund rf-1 of $42.00 is confirmed.")
rec.save("out/live-1.json")          # a judge trace (formats §1), written atomically
'''


def judge_check(*traces: Path, scenario: Path = REFUND_ONCE,
                fmt: str = "text") -> subprocess.CompletedProcess[str]:
    return subprocess.run([JUDGE, "check", str(scenario), *map(str, traces), "--format", fmt],
                          capture_output=True, text=True, timeout=120)


def run_script(source: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = cwd / "agent.py"
    script.write_text(source)
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_the_issue_example_as_a_script_writes_a_trace_judge_check_passes(
        tmp_path: Path) -> None:
    done = run_script(EXAMPLE, tmp_path)
    assert done.returncode == 0, done.stderr
    trace = tmp_path / "out" / "live-1.json"
    checked = judge_check(trace)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no divergence from the reviewed ledger and rules" in checked.stdout
    assert "completed at turn 2 (seq 7)" in checked.stdout
    doc = json.loads(trace.read_text())
    assert [(e["seq"], e["turn"], e["kind"]) for e in doc["events"]] == [
        (1, 1, "user"), (2, 1, "tool_call"), (3, 1, "tool_result"), (4, 1, "assistant"),
        (5, 2, "user"), (6, 2, "tool_call"), (7, 2, "tool_result"), (8, 2, "assistant")]
    assert [e.get("call_id") for e in doc["events"] if e["kind"].startswith("tool")] == [
        "c1", "c1", "c2", "c2"]
    assert [e["metadata"]["clock"] for e in doc["events"]] == list(range(1, 9))
    assert doc["events"][6]["result"] == {"status": "confirmed", "refundId": "rf-1",
                                          "amountCents": 4200}
    assert doc["metadata"]["recorder"] == {"mode": "live", "mutating_tools": ["refund_order"]}


def test_refunding_twice_exits_1_with_the_double_refund_diagnosis(tmp_path: Path) -> None:
    twice = EXAMPLE.replace(
        'rec.assistant("Done:',
        'refund_order(orderId="order-17", amountCents=4200)\nrec.assistant("Done:')
    done = run_script(twice, tmp_path)
    assert done.returncode == 0, done.stderr
    checked = judge_check(tmp_path / "out" / "live-1.json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[1].startswith("  a second refund of an already refunded order at turn 2 "
                               "(seq 8) [rule `second-refund`, key `refundOnce`]")
    assert "VETOED: forbidden (seq 8)" in checked.stdout


def test_a_with_block_that_raises_still_saves_the_trace(tmp_path: Path) -> None:
    source = EXAMPLE.replace('rec = Recorder(trace_id="refund-once/live-1", '
                             'scenario="refund-once")',
                             'rec = Recorder(trace_id="refund-once/live-1", '
                             'scenario="refund-once", path="out/crashed.json")')
    body = source.split("rec.user(", 1)[1].rsplit("rec.save(", 1)[0]
    head = source.split("rec.user(", 1)[0]
    crashing = head + "with rec:\n" + textwrap.indent(
        "rec.user(" + body + 'raise RuntimeError("the agent crashed")\n', "    ")
    done = run_script(crashing, tmp_path)
    assert done.returncode == 1 and "RuntimeError: the agent crashed" in done.stderr
    saved = tmp_path / "out" / "crashed.json"
    doc = json.loads(saved.read_text())
    assert doc["metadata"]["termination"] == "error"
    assert doc["metadata"]["error"] == "RuntimeError: the agent crashed"
    assert len(doc["events"]) == 8
    assert judge_check(saved).returncode == 0  # what happened before the crash is sound


def test_a_with_block_saves_on_a_clean_exit_and_on_ctrl_c(tmp_path: Path) -> None:
    with Recorder("t/1", path=tmp_path / "a.json") as rec:
        rec.user("hi")
    assert json.loads((tmp_path / "a.json").read_text())["events"][0]["text"] == "hi"
    assert "termination" not in json.loads((tmp_path / "a.json").read_text())["metadata"]
    with pytest.raises(KeyboardInterrupt), Recorder("t/2", path=tmp_path / "b.json") as rec:
        rec.user("hi")
        raise KeyboardInterrupt
    assert json.loads((tmp_path / "b.json").read_text())["metadata"]["termination"] == \
        "interrupted"
    with pytest.raises(ValueError, match="needs path="), Recorder("t/3"):
        pass


def test_a_raising_tool_records_an_error_result_and_re_raises(tmp_path: Path) -> None:
    rec = Recorder("t/err")

    @rec.tool("charge", mutating=True)
    def charge(amount: int) -> dict[str, Any]:
        raise ValueError(f"card declined for {amount}")

    rec.user("pay")
    with pytest.raises(ValueError, match="card declined for 5"):
        charge(5)
    call, result = rec.events[1:]
    assert call == {"seq": 2, "turn": 1, "kind": "tool_call", "tool": "charge",
                    "args": {"amount": 5}, "call_id": "c1", "metadata": {"clock": 2}}
    assert result["error"] == "ValueError: card declined for 5"
    assert result["result"] is None and result["call_id"] == "c1"
    (loaded,) = load_traces([rec.save(tmp_path / "t.json")])
    assert loaded.events[2].failed


def test_results_and_arguments_are_exact_copies_taken_at_the_call() -> None:
    rec = Recorder("t/copy")
    box: dict[str, Any] = {"items": [1, 2]}

    @rec.tool
    def lookup(query: dict[str, Any], limit: int = 10) -> dict[str, Any]:
        return box

    out = lookup({"q": "mug"})
    assert out is box  # the agent gets the tool's own object back
    box["items"].append(3)  # ... and changing it later does not rewrite history
    out["new"] = True
    call, result = rec.events
    assert call["args"] == {"query": {"q": "mug"}}  # as given: defaults not filled in
    assert result["result"] == {"items": [1, 2]}
    assert "lossy" not in result["metadata"]


class Status(Enum):
    OK = "ok"


class Order(BaseModel):
    id: str
    placed: datetime


@dataclass
class Line:
    sku: str
    qty: int


def test_values_json_cannot_hold_exactly_are_listed_as_lossy() -> None:
    rec = Recorder("t/lossy")

    @rec.tool
    def odd() -> dict[str, Any]:
        return {"status": Status.OK, "order": Order(id="o-1", placed=datetime(2026, 1, 2,
                                                                              tzinfo=UTC)),
                "line": Line("MUG-2", 2), "cents": Decimal("4200"), "tuple": (1, 2),
                "price": Decimal("42.10"), "nan": float("nan"), 7: "int key",
                "blob": b"\xff\x00", "tags": {"b", "a"}, "obj": object(),
                "bad": "\ud800"}

    odd()
    result = rec.events[1]
    assert result["result"]["status"] == "ok"
    assert result["result"]["order"] == {"id": "o-1", "placed": "2026-01-02T00:00:00Z"}
    assert result["result"]["line"] == {"sku": "MUG-2", "qty": 2}
    assert result["result"]["cents"] == 4200 and result["result"]["tuple"] == [1, 2]
    assert result["result"]["tags"] == ["a", "b"]
    assert result["result"]["bad"] == "\\ud800"
    assert result["metadata"]["lossy"] == [
        "result.price", "result.nan", "result.7", "result.blob", "result.tags",
        "result.obj", "result.bad"]
    json.dumps(result, allow_nan=False)  # strictly JSON


def test_a_cycle_and_deep_nesting_do_not_break_the_recorder(tmp_path: Path) -> None:
    rec = Recorder("t/deep")
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    deep: list[Any] = []
    for _ in range(500):
        deep = [deep]
    rec.state_write("cyclic", cyclic)
    rec.state_write("deep", deep)
    events = rec.events
    assert events[0]["value"] == {"self": "<cycle>"}
    assert events[1]["metadata"]["lossy"][0].startswith("value[0][0]")
    (loaded,) = load_traces([rec.save(tmp_path / "deep.json")])  # within the depth limit
    assert len(loaded.events) == 2


async def test_async_tools_record_concurrent_calls_in_the_order_they_happened() -> None:
    rec = Recorder("t/async")

    @rec.tool("slow")
    async def slow(n: int) -> int:
        await asyncio.sleep(0.05 if n == 1 else 0.0)
        return n * 10

    rec.user("go")
    assert await asyncio.gather(slow(1), slow(2)) == [10, 20]
    kinds = [(e["kind"], e.get("call_id"), e.get("result")) for e in rec.events[1:]]
    assert kinds == [("tool_call", "c1", None), ("tool_call", "c2", None),
                     ("tool_result", "c2", 20), ("tool_result", "c1", 10)]
    assert asyncio.iscoroutinefunction(slow)  # frameworks still see an async function


async def test_an_async_tool_that_raises_or_is_cancelled_records_the_error() -> None:
    rec = Recorder("t/async-err")

    @rec.tool
    async def hang() -> None:
        await asyncio.sleep(10)

    task = asyncio.ensure_future(hang())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rec.events[-1]["error"] == "CancelledError"


def test_summary_state_write_and_snapshot_record_their_kinds(tmp_path: Path) -> None:
    rec = Recorder("t/kinds", candidate={"model": "m", "agent": "a"}, metadata={"run": 3})
    rec.user("hi")
    rec.state_write("memory.address", {"city": "Lyon"})
    rec.summary("The customer wants a refund.", reason="handoff")
    rec.snapshot({"orders": {"o-1": {"refunded": True}}}, phase="end")
    (loaded,) = load_traces([rec.save(tmp_path / "k.jsonl")])
    assert (tmp_path / "k.jsonl").read_text().count("\n") == 1
    assert [e.kind.value for e in loaded.events] == ["user", "state_write", "summary",
                                                     "state_snapshot"]
    assert loaded.events[1].value == {"city": "Lyon"}
    assert loaded.events[2].reason == "handoff"
    assert loaded.events[3].phase == "end"
    assert loaded.candidate == {"model": "m", "agent": "a"}
    assert loaded.metadata["run"] == 3
    with pytest.raises(TypeError, match="collection"):
        rec.snapshot({"orders": ["not", "records"]})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="phase"):
        rec.snapshot({}, phase="middle")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a str"):
        rec.user(42)  # type: ignore[arg-type]


def test_sandbox_external_tools_never_run_and_answer_their_stand_in(tmp_path: Path) -> None:
    sent: list[str] = []
    rec = Recorder("t/sandbox", mode="sandbox",
                   state={"orders": {"o-1": {"status": "packed"}}})

    @rec.tool("send_whatsapp", external=True, stand_in={"status": "queued"})
    def send_whatsapp(to: str, text: str) -> dict[str, Any]:
        sent.append(text)
        return {"status": "delivered"}

    @rec.tool("book_courier", external=True,
              stand_in=lambda order, slot: {"booking": f"bk-{order}", "slot": slot})
    async def book_courier(order: str, slot: str) -> dict[str, Any]:
        sent.append(order)
        return {}

    @rec.tool("mark_shipped", mutating=True)
    def mark_shipped(order: str) -> dict[str, Any]:
        assert rec.state is not None
        rec.state["orders"][order]["status"] = "shipped"
        return {"ok": True}

    rec.user("ship o-1 and tell me")
    first = send_whatsapp(to="+33 6 00 00 00 00", text="shipping today")
    first["status"] = "changed by the agent"
    assert send_whatsapp(to="x", text="again") == {"status": "queued"}  # a fresh copy
    assert asyncio.run(book_courier(order="o-1", slot="am")) == {"booking": "bk-o-1",
                                                                  "slot": "am"}
    mark_shipped(order="o-1")
    assert sent == []  # no external function ran
    assert [i["tool"] for i in rec.intents] == ["send_whatsapp", "send_whatsapp",
                                                "book_courier"]
    (loaded,) = load_traces([rec.save(tmp_path / "s.json")])
    kinds = [(e.kind.value, e.tool, (e.metadata or {}).get("intent"),
              (e.metadata or {}).get("stand_in")) for e in loaded.events]
    assert kinds[0] == ("state_snapshot", None, None, None)
    assert kinds[2:4] == [("tool_call", "send_whatsapp", True, None),
                          ("tool_result", "send_whatsapp", None, True)]
    assert loaded.events[0].phase == "start"
    assert loaded.events[0].state == {"orders": {"o-1": {"status": "packed"}}}
    assert loaded.events[-1].phase == "end"
    assert loaded.events[-1].state == {"orders": {"o-1": {"status": "shipped"}}}
    assert loaded.metadata["recorder"] == {"mode": "sandbox", "mutating_tools": ["mark_shipped"],
                                           "external_tools": ["book_courier",
                                                              "send_whatsapp"]}


def test_live_mode_runs_external_tools_and_sandbox_needs_a_stand_in() -> None:
    ran: list[str] = []
    rec = Recorder("t/live")

    @rec.tool("notify", external=True)
    def notify(text: str) -> str:
        ran.append(text)
        return "sent"

    assert notify("hello") == "sent" and ran == ["hello"]
    assert rec.intents == []
    with pytest.raises(ValueError, match="needs stand_in= in sandbox mode"):
        Recorder("t/s", mode="sandbox").tool("notify", external=True)(notify)
    with pytest.raises(ValueError, match="already recorded"):
        rec.tool("notify")(notify)
    with pytest.raises(ValueError, match="mode must be"):
        Recorder("t/x", mode="dry-run")  # type: ignore[arg-type]


def test_explicit_calls_for_adapters_check_their_call_ids() -> None:
    rec = Recorder("t/ids")
    assert rec.tool_call("a", {}, call_id="call_9") == "call_9"
    assert rec.tool_call("b", {}) == "c1"
    with pytest.raises(ValueError, match="already used"):
        rec.tool_call("a", {}, call_id="call_9")
    rec.tool_result("call_9", {"ok": 1})
    with pytest.raises(ValueError, match="already has its result"):
        rec.tool_result("call_9", {})
    with pytest.raises(ValueError, match="no tool call"):
        rec.tool_result("nope", {})


def test_save_is_atomic_and_refuses_a_trace_judge_would_not_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "t.json"
    target.write_text("old")
    os.chmod(target, 0o640)

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]  # no temporary left
    write_atomic(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640
    rec = Recorder("t/bad", scenario="s")
    rec.metadata["when"] = datetime(2026, 1, 1)  # set by hand, past the copy
    rec.metadata["x"] = float("nan")
    saved = json.loads(rec.save(tmp_path / "ok.json").read_text())
    assert saved["metadata"]["when"] == "2026-01-01T00:00:00" and saved["metadata"]["x"] == "nan"
    rec.candidate = "not an object"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="the recorded trace is not valid: candidate"):
        rec.save(tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_a_custom_clock_stamps_every_event() -> None:
    ticks = iter([10.0, 10.5, 12.25])
    rec = Recorder("t/clock", clock=lambda: next(ticks))

    @rec.tool
    def ping() -> str:
        return "pong"

    rec.user("ping?")
    ping()
    assert [e["metadata"]["clock"] for e in rec.events] == [10.0, 10.5, 12.25]


def test_judge_record_is_pure_python_without_network_clients_or_frameworks() -> None:
    """judge.record needs no SDK, no HTTP client and no agent framework; each adapter
    imports its own framework when it is imported itself."""
    probe = ("import sys, json; import judge.record; print(json.dumps(sorted(m for m in "
             "sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx', 'aiohttp', "
             "'requests', 'urllib3', 'agents', 'langchain_core', 'langgraph', 'sqlalchemy', "
             "'judge') and not m.startswith(('judge.record', 'judge.trace', 'judge.errors')) "
             "and m != 'judge')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert json.loads(done.stdout) == []
