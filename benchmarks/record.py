"""What recording costs an agent: judge.record's overhead per tool call, the save, and the
whole script as a user runs it.

    .venv/bin/python benchmarks/record.py [--calls 20000] [--repeat 3]

In-process (best of --repeat, interleaved): a tool called directly vs the same tool wrapped by
`Recorder.tool` (a call and its result recorded: arguments and result copied exactly), per
call; `Recorder.save` of the resulting trace. Whole command (fresh processes, wall and CPU
from `wait4`): `python -c pass`, `python -c "import judge.record"`, and the README's refund
example scaled to --calls tool calls and saved.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.record import Recorder

RESULT = {"orderId": "order-17", "status": "delivered", "paidCents": 4200,
          "items": [{"sku": "MUG-2", "name": "Stoneware mug, set of 2", "qty": 1}],
          "payment": "visa-4242"}


def get_order(orderId: str) -> dict[str, Any]:
    return RESULT


def per_call(calls: int, wrapped: bool) -> float:
    rec = Recorder("bench/1")
    fn = rec.tool("get_order")(get_order) if wrapped else get_order
    start = time.perf_counter()
    for i in range(calls):
        fn(orderId=f"order-{i}")
    return (time.perf_counter() - start) / calls


def save_time(calls: int, directory: Path) -> tuple[float, int]:
    rec = Recorder("bench/2")
    fn = rec.tool("get_order")(get_order)
    for i in range(calls):
        fn(orderId=f"order-{i}")
    start = time.perf_counter()
    path = rec.save(directory / "bench.jsonl")
    return time.perf_counter() - start, path.stat().st_size


SCRIPT = """
from judge.record import Recorder
rec = Recorder(trace_id="bench/script", scenario="refund-once")
@rec.tool("get_order")
def get_order(orderId):
    return {"orderId": orderId, "status": "delivered", "paidCents": 4200}
rec.user("Hi")
for i in range(CALLS):
    get_order(orderId="order-17")
rec.assistant("Done.")
rec.save(OUT)
"""


def command(args: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, args
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    bare, wrapped, saves = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for _ in range(opts.repeat):
            bare.append(per_call(opts.calls, False))
            wrapped.append(per_call(opts.calls, True))
            saves.append(save_time(opts.calls, directory))
        best_bare, best_wrapped = min(bare), min(wrapped)
        print(f"tool call, direct:   {best_bare * 1e6:8.2f} µs")
        print(f"tool call, recorded: {best_wrapped * 1e6:8.2f} µs "
              f"(+{(best_wrapped - best_bare) * 1e6:.2f} µs a call)")
        seconds, size = min(saves)
        print(f"save, {2 * opts.calls:,} events ({size / 2**20:.1f} MiB, .jsonl): "
              f"{seconds:.3f} s")
        script = directory / "agent.py"
        script.write_text(SCRIPT.replace("CALLS", str(opts.calls))
                          .replace("OUT", repr(str(directory / "out.json"))))
        runs: dict[str, list[tuple[float, float]]] = {"python -c pass": [],
                                                      "import judge.record": [],
                                                      "script": []}
        for _ in range(opts.repeat):
            runs["python -c pass"].append(command([sys.executable, "-c", "pass"]))
            runs["import judge.record"].append(command([sys.executable, "-c",
                                                        "import judge.record"]))
            runs["script"].append(command([sys.executable, str(script)]))
        for name, found in runs.items():
            wall, cpu = min(found)
            label = (f"script: {opts.calls:,} recorded calls + save" if name == "script"
                     else name)
            print(f"{label:40s} {wall:.3f} s wall, {cpu:.3f} s CPU")


if __name__ == "__main__":
    main()
