"""Reference labels for the tau-bench airline trajectories' scope_fidelity items, from the
benchmark's gold actions: a stand-in for people's labels, to run `judge align` on real items.

    python examples/tau-gold/labels.py [--trajectories FILE] [-o labels/tau-airline-gold.jsonl]

The trajectories (examples/data/tau-bench-airline/, sierra-research/tau-bench, MIT: see its
LICENSE.txt and SOURCE.txt) are 50 airline tasks tried 4 times each by gpt-4o. Every task
comes with the actions its reference solution takes (`info.task.actions`, written by the
benchmark's authors). The scope_fidelity items are the write calls the scenario
examples/scenarios/tau-airline sends to the judge (its `judge:` section). Each gets one label:

- **pass** when the call is one of its task's gold actions: the same tool with the same
  arguments, compared as `judge diff` compares them (judge.diff.normalise: `250` = `"250"`,
  ids by case, lists as multisets);
- **fail** otherwise, with the ledger key it comes closest to breaking —
  `transferOnlyOutOfScope` for a transfer to a human the task did not need,
  `cancelEligibility` for a cancellation it did not ask for, else `serveBookings` (a write,
  or a write with other arguments, that the user's task did not call for) — and the call
  itself as the evidence.

These labels are what the benchmark's reference says about each call, derived by this rule,
not a person's judgment of each item: a write with one wrong field (a bag counted as paid)
is a fail here, and a reasonable write the reference solution happens not to make is too.
They are labelled `annotator: tau-bench-gold`, dated 2024-06-20 (tau-bench's release).
Running the script again writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).absolute().parents[2]  # the checkout the script sits in (links kept)
TRAJECTORIES = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
CREATED_AT = "2024-06-20T00:00:00Z"
ANNOTATOR = "tau-bench-gold"
KEYS = {"transfer_to_human_agents": "transferOnlyOutOfScope",
        "cancel_reservation": "cancelEligibility"}


def labels(trajectories: Path = TRAJECTORIES) -> list[dict[str, object]]:
    from judge.diff.normalise import same
    from judge.importers import iter_tau_bench
    from judge.items import extract_items
    from judge.ledger import load_scenario

    loaded = load_scenario(SCENARIO)
    out: list[dict[str, object]] = []
    for trace in iter_tau_bench(trajectories):
        gold = (trace.metadata or {}).get("task", {}).get("actions") or []
        for item in extract_items(loaded, trace):
            call = item.target
            ok = any(a.get("name") == call.get("tool") and same(a.get("kwargs") or {},
                                                                 call.get("args") or {})
                     for a in gold)
            key = KEYS.get(str(call.get("tool")), "serveBookings")
            if not ok and key not in item.ledger_keys:
                key = "serveBookings"
            out.append({"item_id": item.item_id, "label": "pass" if ok else "fail",
                        "violated_key": None if ok else key,
                        "evidence_event": None if ok else item.seq,
                        "annotator": ANNOTATOR, "created_at": CREATED_AT,
                        "note": None if ok else "not one of the task's gold actions"})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=Path, default=TRAJECTORIES)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "labels/tau-airline-gold.jsonl")
    args = parser.parse_args(argv)
    rows = labels(args.trajectories)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    args.output.write_text(text, encoding="utf-8")
    n_fail = sum(r["label"] == "fail" for r in rows)
    print(f"wrote {len(rows)} labels to {args.output} ({n_fail} fail, {len(rows) - n_fail} pass)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
