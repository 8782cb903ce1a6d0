"""inspect_ai's model_graded_qa on the same items, for benchmarks/run.py (not a judge
dependency: `pip install inspect_ai`). Each sample's input is the text judge renders for an
item; a solver copies it to the output without a model call, so the only model calls are
the grader's, one per item, against the same fake server.

    python benchmarks/inspect_grader.py BODIES.jsonl BASE_URL CONCURRENCY LOG_DIR
"""

from __future__ import annotations

import json
import os
import sys

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import Generate, Solver, TaskState, solver


@solver
def echo() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content("none", state.input_text)
        return state

    return solve


def main(path: str, base_url: str, concurrency: int, log_dir: str) -> None:
    with open(path, encoding="utf-8") as fh:
        bodies = [json.loads(line) for line in fh]
    samples = [Sample(input=b["messages"][-1]["content"], target="pass", id=i)
               for i, b in enumerate(bodies)]
    os.environ["FAKE_BASE_URL"] = base_url
    os.environ["FAKE_API_KEY"] = "not-needed"
    model = "openai-api/fake/bench-grader"
    task = Task(dataset=samples, solver=echo(), scorer=model_graded_qa(model=model))
    logs = eval(task, model=model, max_connections=concurrency, max_samples=concurrency,
                log_dir=log_dir, display="none", fail_on_error=False)
    print(json.dumps({"samples": len(samples), "status": logs[0].status}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
