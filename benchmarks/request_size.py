"""Request size: tokens per judge item vs the whole transcript, on the 200 tau-bench
trajectories (examples/data/tau-bench-airline). Tokens ≈ characters / 4.

    .venv/bin/python benchmarks/request_size.py [--budget 2000]

Figures printed (medians over every scope_fidelity item, i.e. every tool call):
- slice: the events block shown for one item vs every event of its trace, same formatting;
- request: the rendered request (system + user message) for one item vs the same prompt
  rendered with the whole transcript as its events;
- with policy: the whole-transcript request plus the tau-bench policy system prompt, which
  a naive judge would also send (its length is kept in the trace metadata).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.importers import iter_tau_bench  # noqa: E402
from judge.items import extract_items  # noqa: E402
from judge.items.slice import event_dict  # noqa: E402
from judge.ledger.loader import LoadedScenario  # noqa: E402
from judge.ledger.reducer import Ledger  # noqa: E402
from judge.ledger.scenario import RubricUse, Scenario  # noqa: E402
from judge.prompts import load_prompt, render  # noqa: E402
from judge.prompts.redact import Scrubber  # noqa: E402
from judge.prompts.render import events_text  # noqa: E402

DATA = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budget", type=int, default=2000)
    args = ap.parse_args()
    scenario = Scenario(id="tau-airline", goal="Help the airline customer with their request "
                        "within the airline policy.",
                        judge=[RubricUse(rubric="scope_fidelity", on="tool_call")])
    loaded = LoadedScenario(scenario, Ledger.reduce([]), "<benchmark>")
    prompt = load_prompt("scope_fidelity")
    slice_tok: list[int] = []
    whole_tok: list[int] = []
    req_tok: list[int] = []
    whole_req_tok: list[int] = []
    policy_req_tok: list[int] = []
    ratios: list[float] = []
    n_traces = 0
    t0 = time.perf_counter()
    for trace in iter_tau_bench(DATA):
        n_traces += 1
        items = extract_items(loaded, trace, token_budget=args.budget)
        if not items:
            continue
        all_events = tuple(event_dict(e) for e in trace.events)
        scrub = Scrubber(None, trace.candidate)
        whole = tokens(events_text(all_events, scrub))
        policy = int(trace.metadata.get("policy_chars", 0)) // 4
        first = items[0]
        whole_item = replace(first, events=all_events,
                             slice_seqs=frozenset(int(d["seq"]) for d in all_events))
        wr = render(prompt, whole_item)
        whole_request = tokens(wr.system + wr.messages[0]["content"])
        for it in items:
            r = render(prompt, it)
            request = tokens(r.system + r.messages[0]["content"])
            slice_tok.append(tokens(events_text(it.events, scrub)))
            whole_tok.append(whole)
            req_tok.append(request)
            whole_req_tok.append(whole_request)
            policy_req_tok.append(whole_request + policy)
            ratios.append(whole_request / request)
    dt = time.perf_counter() - t0
    med = statistics.median
    print(f"tau-bench airline: {n_traces} trajectories, {len(req_tok)} items "
          f"(scope_fidelity, every tool call), token budget {args.budget}, "
          f"{dt:.1f}s to extract and render")
    print(f"slice    : median {med(slice_tok):>6.0f} tokens/item vs whole transcript "
          f"{med(whole_tok):>6.0f}  -> {med(whole_tok) / med(slice_tok):.1f}x smaller")
    print(f"request  : median {med(req_tok):>6.0f} tokens/item vs whole-transcript request "
          f"{med(whole_req_tok):>6.0f}  -> {med(whole_req_tok) / med(req_tok):.1f}x smaller "
          f"(median per-item ratio {med(ratios):.1f}x)")
    print(f"+ policy : whole-transcript request with the policy system prompt "
          f"{med(policy_req_tok):>6.0f}  -> {med(policy_req_tok) / med(req_tok):.1f}x smaller")
    print(f"max item request: {max(req_tok)} tokens; p90 {sorted(req_tok)[len(req_tok) * 9 // 10]}")


if __name__ == "__main__":
    main()
