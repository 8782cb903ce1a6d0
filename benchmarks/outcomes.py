"""Expected outcomes on the 200 tau-bench airline runs: agreement with tau-bench's reward.

Each run is imported as a user imports it (`judge import tau-bench`; the importer writes the
task's expected outcome into the trace's metadata) and checked against the tau-airline
scenario twice:

- **before**: the scenario without its `outcome:` block (today's checks on main: the policy
  rules); a run is *eligible* when nothing vetoes it;
- **after**: the scenario as shipped (`outcome: {from_trace: true}`); a run is eligible when
  nothing vetoes it and no outcome check failed (`silent_failure`, `argument_drift`,
  `unexpected_effect`, `write_order`, `missing_fact`).

Agreement of "eligible" with "reward 1" per run: accuracy, the confusion matrix and Cohen's
kappa (scikit-learn). Then the ablation the issue ran: from each reward-1 run with a write,
the last write call (and its result) is removed — a run that no longer does the last thing
it had to do — and we count how many of those are caught (not eligible), before and after.
Every remaining disagreement is listed by class, with counts and trace ids (--verbose: the
findings too).

    .venv/bin/python benchmarks/outcomes.py [--verbose]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
JUDGE = str(Path(sys.executable).parent / "judge")
OUTCOME_CHECKS = frozenset({"silent_failure", "argument_drift", "unexpected_effect",
                            "write_order", "missing_fact"})


def _without_outcome(tmp: Path) -> Path:
    doc = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    doc.pop("outcome", None)
    out = tmp / "before" / "scenario.yaml"
    out.parent.mkdir()
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out.parent


def _drop_last_write(events: list[Any], mutating: list[str],
                     effective: bool) -> list[Any] | None:
    """The events without the last write call and its result (None: no such write). With
    `effective`, the last write whose result is not an error (one that changed something)."""
    from judge.checks.matching import any_glob

    calls: list[tuple[int, int | None]] = []  # (call index, result index)
    for i, e in enumerate(events):
        if e.kind != "tool_call" or not any_glob(e.tool or "", mutating):
            continue
        res = next((j for j in range(i + 1, len(events))
                    if events[j].kind == "tool_result"
                    and (events[j].call_id == e.call_id if e.call_id
                         else events[j].tool == e.tool)), None)
        if effective and res is not None and events[res].error is not None:
            continue
        calls.append((i, res))
    if not calls:
        return None
    i, res = calls[-1]
    return [e for k, e in enumerate(events) if k not in (i, res)]


def _agreement(name: str, eligible: list[bool], reward1: list[bool]) -> None:
    from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix

    cm = confusion_matrix(reward1, eligible, labels=[False, True])
    print(f"{name}: accuracy {accuracy_score(reward1, eligible):.3f}, "
          f"kappa {cohen_kappa_score(reward1, eligible):.3f}; "
          f"reward 0: {cm[0][0]} not eligible / {cm[0][1]} eligible; "
          f"reward 1: {cm[1][0]} not eligible / {cm[1][1]} eligible")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", action="store_true", help="the findings of each disagreement")
    a = ap.parse_args()
    from judge.checks import run_checks
    from judge.ledger import load_scenario
    from judge.trace import Trace, iter_traces

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        tau = tmp / "tau.jsonl"
        subprocess.run([JUDGE, "import", "tau-bench", str(TAU), "-o", str(tau)], check=True,
                       capture_output=True)
        traces = list(iter_traces(tau))
        before_sc = load_scenario(_without_outcome(tmp))
    after_sc = load_scenario(SCENARIO)
    mutating = after_sc.scenario.rules.mutating_tools

    def verdicts(t: Trace) -> tuple[bool, bool, Any]:
        b = run_checks(before_sc, t)
        r = run_checks(after_sc, t)
        outcome_fail = any(f.check in OUTCOME_CHECKS for f in r.failures)
        return b.eligible, r.eligible and not outcome_fail, r

    reward1 = [t.metadata["reward"] == 1.0 for t in traces]
    before: list[bool] = []
    after: list[bool] = []
    classes: dict[str, list[str]] = defaultdict(list)
    detail: dict[str, list[str]] = {}
    for t, ok in zip(traces, reward1, strict=True):
        b, e, r = verdicts(t)
        before.append(b)
        after.append(e)
        if e == ok:
            continue
        fails = r.failures
        if ok:
            vetoes = sorted({f.check for f in fails if f.safety_critical})
            outs = sorted({f.check for f in fails if f.check in OUTCOME_CHECKS})
            key = ("reward 1, not eligible: "
                   + ", ".join([*(f"veto {v}" for v in vetoes), *outs]))
        else:
            graded = t.metadata.get("reward_info")
            info = (graded or {}).get("info") or {}
            parts = [k for k in ("r_actions", "r_outputs") if info.get(k) == 0.0]
            key = ("reward 0, eligible: " + (
                "no reward_info (the run ended before tau-bench graded it)" if graded is None
                else "tau-bench " + (" and ".join(parts) or "reward") + " 0"))
        classes[key].append(t.trace_id)
        detail[t.trace_id] = [f"{f.check}: {f.message}" for f in fails]
    print(f"{len(traces)} runs, {sum(reward1)} with reward 1")
    _agreement("before (policy checks only)", before, reward1)
    _agreement("after (with expected outcomes)", after, reward1)
    print("remaining disagreements:")
    for key, ids in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):3d}  {key}  (e.g. {ids[0]})")
        if a.verbose:
            for tid in ids:
                print(f"         {tid}")
                for line in detail[tid][:6]:
                    print(f"           {line[:200]}")

    for effective in (False, True):
        caught_b = caught_a = total = 0
        missed: list[str] = []
        for t, ok in zip(traces, reward1, strict=True):
            if not ok:
                continue
            events = _drop_last_write(t.events, mutating, effective)
            if events is None:
                continue
            cut = Trace.model_validate({
                "trace_id": t.trace_id + "/cut", "scenario": t.scenario,
                "metadata": t.metadata,
                "events": [e.model_dump(exclude_none=True, exclude={"seq"}) for e in events]})
            b, e, _ = verdicts(cut)
            total += 1
            caught_b += not b
            caught_a += not e
            if e:
                missed.append(t.trace_id)
        which = "last successful write" if effective else "last write call"
        print(f"{which} removed from each reward-1 run that has one: caught {caught_b}/{total} "
              f"before, {caught_a}/{total} after"
              + (f"; missed after: {', '.join(missed)}" if missed else ""))

if __name__ == "__main__":
    main()
