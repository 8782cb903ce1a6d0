"""The README's "Record traces from your agent" runs as written: its refund example as a
script, the `judge check` command after it, the driver example, the pytest example."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

pytest_plugins = ["pytester"]


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Record traces from your agent", 1)[1].split("\n## ", 1)[0]


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(), flags=re.S)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = line.split("  #", 1)[0].strip()
    return run(["bash", "-c", f'PATH="{BIN}:$PATH" {command}'], cwd)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


def test_the_refund_example_and_its_check_run_as_shown(project: Path) -> None:
    example = blocks("python")[0]
    (project / "agent.py").write_text(example)
    assert run([sys.executable, "agent.py"], project).returncode == 0
    (check,) = [ln for b in blocks("bash") for ln in b.splitlines() if ln.startswith("judge ")]
    done = shell(check, project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exit 0" in check and "a second refund_order: exit 1" in check
    twice = example.replace('rec.assistant("Done:', 'refund_order(orderId="order-17", '
                            'amountCents=4200)\nrec.assistant("Done:')
    (project / "agent.py").write_text(twice)
    assert run([sys.executable, "agent.py"], project).returncode == 0
    done = shell(check, project)
    assert done.returncode == 1 and "a second refund of an already refunded order" in done.stdout


def test_the_driver_example_is_forced_and_not_complete(project: Path) -> None:
    (project / "driven.py").write_text(blocks("python")[1])
    done = run([sys.executable, "driven.py"], project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "forced max_identical"
    checked = shell("judge check examples/scenarios/refund-once out/looping.json", project)
    assert checked.returncode == 0  # not complete is a task-quality failure, not a veto
    assert "run stopped by its driver (max_identical): a forced termination is not a " \
           "completed task" in checked.stdout


def test_the_pytest_example_runs(pytester: pytest.Pytester) -> None:
    (pytester.path / "examples").symlink_to(ROOT / "examples")
    agent = ("from agent import refund_agent\n\n" + blocks("python")[2]).replace(
        "    ...                                       # run the agent with tools wrapped "
        "by @rec.tool\n", "    refund_agent(rec, refunds=REFUNDS)\n")
    assert "refund_agent(rec" in agent
    pytester.makepyfile(agent="""
def refund_agent(rec, refunds):
    @rec.tool("get_order")
    def get_order(orderId):
        return {"orderId": orderId, "status": "delivered", "paidCents": 4200}

    @rec.tool("refund_order", mutating=True)
    def refund_order(orderId, amountCents):
        return {"status": "confirmed", "refundId": "rf-1", "amountCents": amountCents}

    rec.user("Hi, order-17 arrived broken. I'd like a refund please.")
    get_order(orderId="order-17")
    rec.assistant("I can refund order-17 in full: $42.00. Shall I go ahead?")
    rec.user("Yes, please.")
    for _ in range(refunds):
        refund_order(orderId="order-17", amountCents=4200)
    rec.assistant("Done: refund rf-1 of $42.00 is confirmed.")
""")
    pytester.makepyfile(test_once=agent.replace("REFUNDS", "1"),
                        test_twice=agent.replace("REFUNDS", "2"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_twice.py::test_refunds_once (scenario refund-once*",
                                 "*a second refund of an already refunded order*"])


def test_the_adapter_snippets_name_what_the_adapters_export() -> None:
    code = blocks("python")[3]
    ast.parse(code)
    from judge.record.langchain import JudgeCallbackHandler
    from judge.record.openai_agents import JudgeTracingProcessor

    assert "JudgeTracingProcessor(\"traces/\", scenario=\"refund-once\")" in code
    assert JudgeTracingProcessor("traces/", scenario="refund-once").saved == []
    handler = JudgeCallbackHandler(trace_id="refund-once/lg-1", scenario="refund-once")
    assert handler.recorder.trace_id == "refund-once/lg-1"
