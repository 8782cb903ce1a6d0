"""Request size: tokens per judge item vs the whole transcript, on the 200 tau-bench airline
trajectories (examples/data/tau-bench-airline), imported with judge.importers. Tokens are
estimated as characters / 4.

    .venv/bin/python benchmarks/request_size.py [--budget 2000]

Two item sets are measured, with the scope_fidelity prompt:
- "every call": the rubric on every tool call (1,164 items) with an empty ledger, i.e. the
  trace content alone;
- "tau-airline": examples/scenarios/tau-airline as shipped (mutating calls only, the airline
  policy as ~50 reviewed ledger entries shown in every request).
For each: the events block of one item vs every event of its trace (same formatting), and
the rendered request (system + user) vs the same prompt rendered with the whole transcript,
and how much of a request is the prefix every request shares (the system message and the
rubric text come before any item data, so provider prompt caching applies to them).
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
from judge.ledger import load_scenario  # noqa: E402
from judge.ledger.loader import LoadedScenario  # noqa: E402
from judge.ledger.reducer import Ledger  # noqa: E402
from judge.ledger.scenario import RubricUse, Scenario  # noqa: E402
from judge.prompts import load_prompt, render  # noqa: E402
from judge.prompts.redact import Scrubber  # noqa: E402
from judge.prompts.render import events_text  # noqa: E402
from judge.trace import Trace  # noqa: E402

DATA = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def measure(name: str, loaded: LoadedScenario, traces: list[Trace], budget: int) -> None:
    prompt = load_prompt("scope_fidelity")
    slice_tok: list[int] = []
    whole_tok: list[int] = []
    req_tok: list[int] = []
    whole_req_tok: list[int] = []
    own_tok: list[int] = []  # beyond the prefix shared by every request (prompt caching)
    t_items = t_render = 0.0
    for trace in traces:
        t0 = time.perf_counter()
        items = extract_items(loaded, trace, ["scope_fidelity"], token_budget=budget)
        t1 = time.perf_counter()
        requests = [render(prompt, it) for it in items]
        t_render += time.perf_counter() - t1
        t_items += t1 - t0
        if not items:
            continue
        all_events = tuple(event_dict(e) for e in trace.events)
        scrub = Scrubber(None, trace.candidate)
        whole = tokens(events_text(all_events, scrub))
        whole_item = replace(items[-1], events=all_events,
                             slice_seqs=frozenset(int(d["seq"]) for d in all_events))
        wr = render(prompt, whole_item)
        whole_request = tokens(wr.system + wr.messages[0]["content"])
        for it, r in zip(items, requests, strict=True):
            slice_tok.append(tokens(events_text(it.events, scrub, it.seq)))
            whole_tok.append(whole)
            user = r.messages[0]["content"]
            req_tok.append(tokens(r.system + user))
            own_tok.append(tokens(user[user.index("The data blocks of this request"):]))
            whole_req_tok.append(whole_request)
    n = len(req_tok)
    med = statistics.median
    print(f"[{name}] {len(traces)} trajectories, {n} items, token budget {budget}; "
          f"extract {t_items * 1000 / n:.2f} ms/item, render {t_render * 1000 / n:.2f} ms/item")
    print(f"  events : median {med(slice_tok):>5.0f} tokens/item vs whole transcript "
          f"{med(whole_tok):>5.0f} -> {med(whole_tok) / med(slice_tok):.1f}x smaller")
    print(f"  request: median {med(req_tok):>5.0f} tokens/item vs whole-transcript request "
          f"{med(whole_req_tok):>5.0f} -> {med(whole_req_tok) / med(req_tok):.1f}x smaller "
          f"(p90 item {sorted(req_tok)[n * 9 // 10]}, max {max(req_tok)})")
    print(f"  of which {med(req_tok) - med(own_tok):.0f} tokens are a prefix shared by every "
          f"request (system + rubric text; cacheable), median {med(own_tok):.0f} per item")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budget", type=int, default=2000)
    args = ap.parse_args()
    traces = list(iter_tau_bench(DATA))
    every = Scenario(id="tau-airline-every-call", goal="Help the airline customer within the "
                     "airline policy.", judge=[RubricUse(rubric="scope_fidelity", on="tool_call")])
    measure("every call", LoadedScenario(every, Ledger.reduce([]), "<benchmark>"), traces,
            args.budget)
    measure("tau-airline", load_scenario(SCENARIO), traces, args.budget)


if __name__ == "__main__":
    main()
