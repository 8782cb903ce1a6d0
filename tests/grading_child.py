"""A grading run in its own process, for the SIGKILL test (tests/test_store_grading_kill.py).

    python tests/grading_child.py DB_URL CALL_LOG RUN_ID N_TRACES DELAY_S

Grades scope-fidelity items of the first N tau-bench airline trajectories with the heuristic
judge through the engine, the database call cache and `route_and_save` as each verdict comes;
items with a stored verdict are skipped (a rerun). Every provider call appends the item id to
CALL_LOG before it is made.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.grading.engine import grade_items  # noqa: E402
from judge.importers.tau_bench import iter_tau_bench  # noqa: E402
from judge.items import extract_items  # noqa: E402
from judge.ledger import load_scenario  # noqa: E402
from judge.pipeline.route import route_and_save  # noqa: E402
from judge.prompts import load_prompt  # noqa: E402
from judge.providers.base import JudgeRequest, ModelParams, Provider, ProviderResponse  # noqa: E402
from judge.providers.heuristic import HeuristicProvider  # noqa: E402
from judge.routing import RoutingPolicy  # noqa: E402
from judge.store import open_store  # noqa: E402

TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"


def items_of(n_traces: int) -> list:
    scenario = load_scenario(ROOT / "examples" / "scenarios" / "tau-airline")
    out = []
    for k, trace in enumerate(iter_tau_bench(TAU)):
        if k >= n_traces:
            break
        out.extend(extract_items(scenario, trace, ["scope_fidelity"]))
    return out


class LoggedProvider(Provider):
    def __init__(self, inner: Provider, log: str, delay: float) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.display_name = inner.display_name
        self.remote = False
        self.log = log
        self.delay = delay

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (request.item_id + "\n").encode())
        finally:
            os.close(fd)
        await asyncio.sleep(self.delay)
        return await self.inner.generate(request)


def main() -> None:
    url, log, run_id, n_traces, delay = sys.argv[1:6]
    store = open_store(url)
    store.save_run(run_id)
    done = store.stored_item_ids(run_id)
    pending = [it for it in items_of(int(n_traces)) if it.item_id not in done]
    prompt = load_prompt("scope_fidelity")
    policy = RoutingPolicy(audit_share=0.1)

    def on_result(verdict) -> None:
        route_and_save(store, [verdict], run_id, policy=policy)

    asyncio.run(grade_items(pending, prompt, LoggedProvider(HeuristicProvider(), log,
                                                            float(delay)),
                            store.calls, params=ModelParams(), concurrency=4, rpm=None,
                            retries=0, on_result=on_result))
    store.finish_run(run_id)
    print(f"graded {len(pending)}")


if __name__ == "__main__":
    main()
