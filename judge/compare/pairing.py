"""Two versions task by task: the pairs, what each task's change was, the new failure
signatures, the drift of the candidate's trajectories from the baseline's, and the change in
pass rate with a paired test (docs/formats.md, "`judge compare`").

Tasks are paired by (scenario, task id) — the task id of the per-task repetitions
(judge.suite.tasks). A task's status on a side is what its trials came to: **passing** (every
trial passed), **failing** (none did), **flaky** (they disagree). Its change:

| change | baseline → candidate |
|---|---|
| `fixed` | failing or flaky → passing |
| `broken` | passing → failing or flaky |
| `still_failing` | failing → failing |
| `flaky` | flaky on either side, and neither fixed nor broken (flaky → flaky, failing ↔ flaky) |
| `still_passing` | passing → passing |

**Drift**: each candidate trial is diffed (judge.diff) against each of the baseline's trials
of its task and keeps the nearest (the fewest counted drifts; the earliest trial on a tie),
with the scenario's mutating and read tools: drift is a trajectory no baseline run of the
task took — a version against itself shows none, and a task the baseline did two ways is
not drift for taking either (whether a trial passed is its status's business).
**Signatures**: a failing trial's first-divergence signature (as a run's failure clusters
name it); a signature is *new* when a paired task's candidate trials show it and no baseline
trial of a paired task does.

**Pass rate**: each task's pass share (trials passed / trials), averaged over the paired
tasks, per side. With one trial per task on both sides the change gets the exact McNemar
test and Newcombe's paired interval; otherwise a bootstrap over tasks (judge.stats.paired).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from judge.compare.sides import Side, TaskKey, Trial
from judge.diff import DiffOptions, ReadOnlyPolicy, TraceDiff, diff_traces
from judge.suite.outcome import TraceOutcome
from judge.suite.tasks import TaskResult
from judge.trace import Trace

CHANGES = ("fixed", "broken", "still_failing", "flaky", "still_passing")
FAIL_ON = ("broken", "signature", "drift")
MAX_DRIFTS = 20  # drifts listed per diffed trial (all are counted)


def status(task: TaskResult) -> str:
    """passing | flaky | failing (every trial passed / they disagree / none did)."""
    return "passing" if task.passed == task.n else "flaky" if task.passed else "failing"


def change_of(baseline: TaskResult, candidate: TaskResult) -> str:
    b, c = status(baseline), status(candidate)
    if b == "passing" and c == "passing":
        return "still_passing"
    if c == "passing":
        return "fixed"
    if b == "passing":
        return "broken"
    if b == "failing" and c == "failing":
        return "still_failing"
    return "flaky"


def references_of(task: TaskResult) -> list[TraceOutcome]:
    """The baseline trials the candidate's trials are diffed against: all of them, passing
    ones first (a tie goes to a passing trial)."""
    return sorted(task.trials, key=lambda o: not o.passed)


def nearest_diff(refs: list[tuple[str, Trace]], trace: Trace, opts: DiffOptions
                 ) -> TraceDiff | None:
    """`trace` against the reference it drifts from least (fewest counted drifts, then the
    earliest reference); None without a reference."""
    best: TraceDiff | None = None
    for _rid, ref in refs:
        d = diff_traces(ref, trace, opts)
        if best is None or sum(d.counts.values()) < sum(best.counts.values()):
            best = d
        if not d.drift:
            break
    return best


@dataclass(frozen=True)
class CompareOptions:
    """How to diff (`policies`: read-only tools per scenario, else names), whether lookups
    count, the paired test's bootstrap, and which outcomes fail the command."""

    policies: dict[str, ReadOnlyPolicy] = field(default_factory=dict)
    count_lookups: bool = False
    n_boot: int = 10_000
    seed: int = 0
    confidence: float = 0.95
    fail_on: tuple[str, ...] = ()


def _trial_row(t: Trial) -> dict[str, Any]:
    o = t.outcome
    return {"trial": o.trial, "trace_id": o.trace_id, "passed": o.passed,
            "vetoed": not o.eligible, "hard_failure": t.hard_failure,
            "signature": t.signature, "first_divergence": t.message if not o.passed else None}


def _side_row(task: TaskResult, by_id: dict[str, Trial]) -> dict[str, Any]:
    return {"status": status(task), "passed": task.passed, "trials": task.n,
            "share": task.passed / task.n,
            "results": [_trial_row(by_id[o.trace_id]) for o in task.trials]}


def _diff_row(d: TraceDiff) -> dict[str, Any]:
    return {"trace_id": d.trace_id, "reference": d.baseline_id, "drift": d.drift,
            "counts": d.counts,
            "drifts": [x.to_dict() for x in d.drifts if x.counted][:MAX_DRIFTS]}


def compare_sides(baseline: Side, candidate: Side,
                  opts: CompareOptions | None = None) -> dict[str, Any]:
    """The comparison as one JSON-ready dict (docs/formats.md, "`judge compare`")."""
    from judge.stats.paired import paired_binary, paired_bootstrap

    opts = opts or CompareOptions()
    btasks, ctasks = baseline.tasks(), candidate.tasks()
    bid, cid = baseline.by_id(), candidate.by_id()
    paired = [k for k in btasks if k in ctasks]
    rows: list[dict[str, Any]] = []
    counts = dict.fromkeys(CHANGES, 0)
    drift_total: dict[str, int] = dict.fromkeys(
        ("pairs", "drifted", "presence", "argument", "terminal", "not_diffed"), 0)
    sigs: dict[str, dict[str, dict[str, list[str]]]] = {
        "baseline": defaultdict(lambda: defaultdict(list)),
        "candidate": defaultdict(lambda: defaultdict(list))}
    for key in paired:
        b, c = btasks[key], ctasks[key]
        kind = change_of(b, c)
        counts[kind] += 1
        refs = [(o.trace_id, t) for o in references_of(b)
                if (t := bid[o.trace_id].trace) is not None]
        dopts = DiffOptions(opts.policies.get(key[0], ReadOnlyPolicy()), opts.count_lookups)
        diffs = []
        for o in c.trials:
            trace = cid[o.trace_id].trace
            d = nearest_diff(refs, trace, dopts) if trace is not None else None
            if d is None:
                drift_total["not_diffed"] += 1
                continue
            diffs.append(d)
        task_drift: dict[str, Any] = {
                      "references": [rid for rid, _ in refs],
                      "diffed": len(diffs), "drifted": sum(d.drift for d in diffs),
                      **{k: sum(d.counts[k] > 0 for d in diffs)
                         for k in ("presence", "argument", "terminal")},
                      "diffs": [_diff_row(d) for d in diffs]}
        drift_total["pairs"] += len(diffs)
        for k in ("drifted", "presence", "argument", "terminal"):
            drift_total[k] += task_drift[k]
        task_sigs: dict[str, list[str]] = {"baseline": [], "candidate": []}
        for side, task, by_id in (("baseline", b, bid), ("candidate", c, cid)):
            for o in task.trials:
                s = by_id[o.trace_id].signature
                if s is not None:
                    sigs[side][s]["tasks"].append(_task_name(key))
                    sigs[side][s]["traces"].append(o.trace_id)
                    if s not in task_sigs[side]:
                        task_sigs[side].append(s)
        rows.append({
            "scenario": key[0], "task_id": key[1], "change": kind,
            "baseline": _side_row(b, bid), "candidate": _side_row(c, cid),
            "delta": c.passed / c.n - b.passed / b.n,
            "signatures": {**task_sigs, "new": [s for s in task_sigs["candidate"]
                                                if s not in task_sigs["baseline"]]},
            "drift": task_drift})
    new, resolved, kept = _signature_changes(sigs["baseline"], sigs["candidate"])
    shares_b = [btasks[k].passed / btasks[k].n for k in paired]
    shares_c = [ctasks[k].passed / ctasks[k].n for k in paired]
    single = all(btasks[k].n == 1 and ctasks[k].n == 1 for k in paired)
    if single:
        change, cells = paired_binary([s == 1.0 for s in shares_b], [s == 1.0 for s in shares_c],
                                      opts.confidence)
        mcnemar: dict[str, Any] | None = {"b": cells["b"], "c": cells["c"], "cells": cells}
        boot = None
    else:
        change = paired_bootstrap(shares_b, shares_c, n_boot=opts.n_boot, seed=opts.seed,
                                  confidence=opts.confidence)
        mcnemar, boot = None, {"n_boot": opts.n_boot, "seed": opts.seed}
    pass_rate = {
        "n_tasks": change.n, "baseline": _num(change.baseline),
        "candidate": _num(change.candidate), "change": _num(change.change),
        "ci": list(change.ci) if change.ci is not None else None,
        "confidence": opts.confidence, "p_value": change.p_value, "test": change.test,
        "interval": change.interval, "mcnemar": mcnemar, "bootstrap": boot,
        "trials": "one per task" if single else "several per task: pass shares"}
    from judge.compare.render import change_line

    pass_rate["text"] = change_line(pass_rate)
    task_rate = {"baseline": _share(sum(btasks[k].passed == btasks[k].n for k in paired),
                                    len(paired)),
                 "candidate": _share(sum(ctasks[k].passed == ctasks[k].n for k in paired),
                                     len(paired))}
    report: dict[str, Any] = {
        "baseline": baseline.summary(), "candidate": candidate.summary(),
        "scenarios": sorted({k[0] for k in paired}),
        "paired_tasks": len(paired),
        "baseline_only": [_key_dict(k) for k in btasks if k not in ctasks],
        "candidate_only": [_key_dict(k) for k in ctasks if k not in btasks],
        "counts": counts, "tasks": rows,
        "signatures": {"new": new, "resolved": resolved, "persisting": kept},
        "drift": drift_total, "pass_rate": pass_rate, "task_pass_rate": task_rate,
        "warnings": [*baseline.warnings, *candidate.warnings],
        "errors": [e.message for e in (*baseline.errors, *candidate.errors)],
    }
    report["failed"] = failures(report, opts.fail_on)
    return report


def _signature_changes(before: dict[str, dict[str, list[str]]],
                       after: dict[str, dict[str, list[str]]]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    def row(sig: str, d: dict[str, list[str]]) -> dict[str, Any]:
        tasks = list(dict.fromkeys(d["tasks"]))
        return {"signature": sig, "count": len(d["traces"]), "tasks": tasks,
                "traces": d["traces"]}

    new = sorted((row(s, d) for s, d in after.items() if s not in before),
                 key=lambda r: (-r["count"], r["signature"]))
    gone = sorted((row(s, d) for s, d in before.items() if s not in after),
                  key=lambda r: (-r["count"], r["signature"]))
    return new, gone, sorted(s for s in after if s in before)


def failures(report: dict[str, Any], fail_on: tuple[str, ...]) -> list[str]:
    """Why `--fail-on` fails the command (exit 1): one line per outcome asked about."""
    out: list[str] = []
    if "broken" in fail_on and report["counts"]["broken"]:
        names = [_task_name((r["scenario"], r["task_id"])) for r in report["tasks"]
                 if r["change"] == "broken"]
        out.append(f"{len(names)} task(s) broken: {_listed(names)}")
    if "signature" in fail_on and report["signatures"]["new"]:
        out.append(f"{len(report['signatures']['new'])} new failure signature(s): "
                   + _listed([s["signature"] for s in report["signatures"]["new"]]))
    if "drift" in fail_on and report["drift"]["drifted"]:
        out.append(f"{report['drift']['drifted']} of {report['drift']['pairs']} candidate "
                   "trial(s) took a trajectory no baseline trial of its task took")
    return out


def _listed(names: list[str], limit: int = 8) -> str:
    return ", ".join(names[:limit]) + (f" … (+{len(names) - limit})" if len(names) > limit
                                       else "")


def _task_name(key: TaskKey) -> str:
    return f"{key[0]}/{key[1]}" if key[1] != key[0] else key[0]


def _key_dict(key: TaskKey) -> dict[str, str]:
    return {"scenario": key[0], "task_id": key[1]}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _share(k: int, n: int) -> dict[str, Any]:
    return {"passing": k, "tasks": n, "rate": k / n if n else None}
