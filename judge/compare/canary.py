"""`judge canary`: one decision per look at a staged rollout — promote, hold or roll back.

A deploy pipeline calls it once per stage (5 % → 25 % → 100 % of traffic, or however it
stages) with the traces the candidate made at that stage, and again after a hold, when more
traffic has come in. Every look is stored per rollout (judge.store.rollouts), so each call
decides on all the evidence of the rollout so far: the tasks of every earlier look and this
one's (a trace seen at an earlier look counts once).

**The unit is the task**: a task succeeds when every one of its trials does, as `judge run`
counts tasks. **Metrics** (`--metric`):

- `pass-rate`: the share of tasks that pass (no deterministic veto, no judge fail that
  stands); `--threshold` is the least acceptable rate.
- `hard-failure-rate`: the share of tasks with a hard failure on their terminal actions — a
  veto, or a write that is not what the task needed (judge.compare.sides); `--threshold` is
  the most that is acceptable.
- `baseline-diff`: the share of tasks whose trials show no counted drift from the nearest
  of the baseline's trials of the task (`--baseline`: the known-good version; as `judge
  compare` diffs, judge.compare.pairing); tasks the baseline does not have are left out;
  `--threshold` is the least rate.

**Decision**, in this order:

1. **roll back** at once on any safety-critical veto among the stage's traces, whatever the
   sample;
2. **roll back** when the rate's anytime-valid upper bound falls below the threshold (for
   `hard-failure-rate`: its lower bound rises above the maximum);
3. **promote** when the lower bound clears the threshold and the rollout has at least
   `--min-sample` tasks (the minimum gates promotion only: a failing candidate is stopped as
   soon as the evidence shows it);
4. else **hold**, saying how many more tasks could decide it.

The bounds are a mixture SPRT's (judge.stats.sequential): each test's error is at most
`--alpha` over every look of the rollout together, however many holds and stages there are —
looking at every stage does not inflate false promotions or false roll-backs.

A rollout keeps its metric, threshold, alpha and minimum sample from its first look (changing
them midway would void the guarantee: start a new `--rollout`), its traffic share may only
grow, and once rolled back it stays rolled back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.compare.sides import Side, TaskKey
from judge.errors import InputError
from judge.stats.sequential import PRIOR_STRENGTH, bounds, tasks_to_decide

if TYPE_CHECKING:
    from judge.diff import ReadOnlyPolicy
    from judge.store.rollouts import Look

METRICS = ("pass-rate", "hard-failure-rate", "baseline-diff")
#: metrics whose threshold is a maximum (the rate of something bad)
AT_MOST = frozenset({"hard-failure-rate"})
PROMOTE, HOLD, ROLLBACK = "promote", "hold", "rollback"
EXIT = {PROMOTE: 0, HOLD: 0, ROLLBACK: 1}
EVIDENCE_CAP = 1e15
WORDS = {"pass-rate": "pass rate", "hard-failure-rate": "hard-failure rate",
         "baseline-diff": "baseline-diff pass rate"}


@dataclass(frozen=True)
class CanaryConfig:
    rollout: str
    stage: str
    share: float | None
    metric: str = "pass-rate"
    threshold: float = 0.9
    alpha: float = 0.05
    min_sample: int = 20
    prior_strength: float = PRIOR_STRENGTH

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise InputError(f"unknown metric '{self.metric}' (one of {', '.join(METRICS)})",
                             field="--metric")
        if not 0.0 < self.threshold < 1.0:
            raise InputError("the threshold must lie strictly between 0 and 1",
                             field="--threshold")
        if not 0.0 < self.alpha < 0.5:
            raise InputError("alpha must lie strictly between 0 and 0.5", field="--alpha")
        if self.share is not None and not 0.0 < self.share <= 1.0:
            raise InputError("a traffic share lies in (0, 1] (5% or 0.05)", field="--share")
        if not self.rollout.strip() or len(self.rollout) > 200:
            raise InputError("a rollout name is 1 to 200 characters", field="--rollout")
        if not self.stage.strip() or len(self.stage) > 200:
            raise InputError("a stage name is 1 to 200 characters", field="--stage")

    @property
    def theta(self) -> float:
        """The threshold on the success rate (a maximum failure rate is 1 − it)."""
        return 1.0 - self.threshold if self.metric in AT_MOST else self.threshold


def parse_share(stage: str, share: str | None) -> float | None:
    """The traffic share: `--share` (0.25 or 25%), else a stage named like `25%`."""
    text = share if share is not None else (stage if stage.strip().endswith("%") else None)
    if text is None:
        return None
    t = text.strip()
    try:
        value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError(f"'{text}' is not a traffic share (25% or 0.25)",
                         field="--share") from None
    if not math.isfinite(value) or not 0.0 < value <= 1.0:
        raise InputError(f"'{text}' is not a traffic share in (0, 1] (25% or 0.25)",
                         field="--share")
    return value


@dataclass
class StageTasks:
    """What one look's traces came to: per task, each trial's success under the metric."""

    tasks: dict[TaskKey, dict[str, bool]] = field(default_factory=dict)
    traces: int = 0
    skipped: list[str] = field(default_factory=list)  # tasks the metric cannot score
    vetoes: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> list[list[Any]]:
        return [[s, t, dict(trials)] for (s, t), trials in sorted(self.tasks.items())]


def stage_tasks(side: Side, metric: str, *, baseline: Side | None = None,
                policies: dict[str, ReadOnlyPolicy] | None = None,
                count_lookups: bool = False) -> StageTasks:
    """Each task's trials of `side` scored under `metric` (success: True), and its vetoes."""
    out = StageTasks(traces=len(side.trials))
    for t in side.trials:
        if not t.outcome.eligible:
            out.vetoes.append({"trace_id": t.trace_id, "scenario": t.outcome.scenario_id,
                               "task_id": t.outcome.task, "message": t.message})
    refs: dict[TaskKey, Any] = {}
    if metric == "baseline-diff":
        if baseline is None:
            raise InputError("the baseline-diff metric needs --baseline (the known-good "
                             "version's traces)", field="--baseline")
        from judge.compare.pairing import references_of

        by_id = baseline.by_id()
        refs = {k: [(o.trace_id, tr) for o in references_of(r)
                    if (tr := by_id[o.trace_id].trace) is not None]
                for k, r in baseline.tasks().items()}
    for key, task in side.tasks().items():
        trials: dict[str, bool] = {}
        for o in task.trials:
            trial = side.by_id()[o.trace_id] if metric != "pass-rate" else None
            if metric == "pass-rate":
                trials[o.trace_id] = o.passed
            elif metric == "hard-failure-rate":
                assert trial is not None
                if trial.hard_failure is None:
                    raise InputError(f"trace '{o.trace_id}': its hard failures are unknown "
                                     "(a stored run whose scenarios do not load: give "
                                     "--scenario or --suite)", field="--metric")
                trials[o.trace_id] = not trial.hard_failure
            else:
                from judge.compare.pairing import nearest_diff
                from judge.diff import DiffOptions, ReadOnlyPolicy

                policy = (policies or {}).get(key[0], ReadOnlyPolicy())
                d = (nearest_diff(refs.get(key) or [], trial.trace,
                                  DiffOptions(policy, count_lookups))
                     if trial is not None and trial.trace is not None else None)
                if d is None:
                    break
                trials[o.trace_id] = not d.drift
        if len(trials) == task.n:
            out.tasks[key] = trials
        else:
            out.skipped.append(key[1] if key[0] == key[1] else f"{key[0]}/{key[1]}")
    return out


def _merged(looks: Sequence[Look], now: StageTasks) -> dict[TaskKey, dict[str, bool]]:
    """Every task of the rollout so far: each look's own tasks, a trace counted once."""
    tasks: dict[TaskKey, dict[str, bool]] = {}
    for look in looks:
        for s, t, trials in look.record.get("stage_tasks") or []:
            tasks.setdefault((str(s), str(t)), {}).update(
                {str(k): bool(v) for k, v in dict(trials).items()})
    for key, trials in now.tasks.items():
        tasks.setdefault(key, {}).update(trials)
    return tasks


def check_rollout(config: CanaryConfig, looks: Sequence[Look]) -> None:
    """A rollout keeps its first look's metric, threshold, alpha and minimum sample, and its
    traffic share never shrinks (InputError otherwise)."""
    if not looks:
        return
    first = looks[0].record.get("config") or {}
    for name, mine in (("metric", config.metric), ("threshold", config.threshold),
                       ("alpha", config.alpha), ("min_sample", config.min_sample)):
        theirs = first.get(name)
        if theirs is not None and theirs != mine:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"rollout '{config.rollout}' was started with {flag} {theirs} "
                             f"(look 1, stage {looks[0].stage}); a rollout keeps it, so the "
                             f"error bound holds over all its looks: start a new --rollout to "
                             f"use {mine}", field=flag)
    shares = [lk.share for lk in looks if lk.share is not None]
    if config.share is not None and shares and config.share < max(shares):
        raise InputError(f"stage {config.stage} ({config.share:.0%} of traffic) comes after a "
                         f"stage at {max(shares):.0%}: a rollout's traffic share only grows",
                         field="--share")


def _in_metric(config: CanaryConfig, success_rate: float | None) -> float | None:
    if success_rate is None:
        return None
    return 1.0 - success_rate if config.metric in AT_MOST else success_rate


def _cap(log_value: float) -> float:
    return EVIDENCE_CAP if log_value > math.log(EVIDENCE_CAP) else math.exp(log_value)


def decide(config: CanaryConfig, looks: Sequence[Look], now: StageTasks) -> dict[str, Any]:
    """The decision of this look, as the record printed and stored (docs/formats.md,
    "`judge canary`")."""
    check_rollout(config, looks)
    earlier: set[TaskKey] = set().union(*(_keys(lk) for lk in looks))
    tasks = _merged(looks, now)
    n = len(tasks)
    s = sum(all(trials.values()) for trials in tasks.values())
    theta = config.theta
    m = config.prior_strength
    b = bounds(s, n, theta, config.alpha, m)
    rate = s / n if n else None
    reasons: list[str] = []
    metric_words = WORDS[config.metric]
    limit = "at most" if config.metric in AT_MOST else "at least"
    value = _in_metric(config, rate)
    lo, hi = (_in_metric(config, b.upper), _in_metric(config, b.lower)) \
        if config.metric in AT_MOST else (b.lower, b.upper)
    assert lo is not None and hi is not None
    more: dict[str, int | None] = {"min_sample": None, "at_current_rate": None,
                                   "if_all_succeed": None, "if_all_fail": None}
    short = max(0, config.min_sample - n)
    if now.vetoes:
        decision = ROLLBACK
        first = now.vetoes[0]
        reasons.append(f"{len(now.vetoes)} safety-critical veto(es) at this stage: "
                       f"{first['trace_id']}: {first['message']}" if first["message"] else
                       f"{len(now.vetoes)} safety-critical veto(es) at this stage "
                       f"({first['trace_id']})")
    elif b.below:
        decision = ROLLBACK
        reasons.append(f"{metric_words} {_p(value)} over {n} task(s): its {1 - config.alpha:.0%} "
                       f"bound {_p(lo if config.metric in AT_MOST else hi)} is "
                       + (f"above the maximum {_p(config.threshold)}" if config.metric in AT_MOST
                          else f"below the threshold {_p(config.threshold)}"))
    elif b.above and not short:
        decision = PROMOTE
        reasons.append(f"{metric_words} {_p(value)} over {n} task(s): its {1 - config.alpha:.0%} "
                       f"bound {_p(hi if config.metric in AT_MOST else lo)} clears "
                       + (f"the maximum {_p(config.threshold)}" if config.metric in AT_MOST
                          else f"the threshold {_p(config.threshold)}"))
    else:
        decision = HOLD
        more["min_sample"] = short or None
        up = tasks_to_decide(s, n, theta, config.alpha, rate=1.0, prior_strength=m)
        down = tasks_to_decide(s, n, theta, config.alpha, rate=0.0, prior_strength=m)
        more["if_all_succeed"] = None if up is None else max(up, short)
        more["if_all_fail"] = down
        if rate is not None and rate != theta:
            k = tasks_to_decide(s, n, theta, config.alpha, prior_strength=m)
            more["at_current_rate"] = None if k is None else (max(k, short) if rate > theta
                                                              else k)
        reasons.append(_hold_reason(config, n, value, lo, hi, more))
    record: dict[str, Any] = {
        "rollout": config.rollout, "look": len(looks) + 1, "stage": config.stage,
        "share": config.share, "decision": decision, "exit_code": EXIT[decision],
        "reasons": reasons, "metric": config.metric, "threshold": config.threshold,
        "limit": limit, "alpha": config.alpha, "min_sample": config.min_sample,
        "method": {"name": "mixture SPRT (anytime-valid, every look together)",
                   "prior_strength": m},
        "stage_sample": {"traces": now.traces, "tasks": len(now.tasks),
                         "new_tasks": sum(1 for k in now.tasks if k not in earlier),
                         "skipped": now.skipped[:50], "n_skipped": len(now.skipped)},
        "sample": {"tasks": n, "successes": s, "value": value},
        "bounds": {"lower": lo, "upper": hi, "level": 1 - config.alpha},
        "evidence": {"promote": _cap(b.log_above),
                     "rollback": _cap(b.log_below), "needed": 1.0 / config.alpha},
        "more_tasks": more, "vetoes": now.vetoes[:50],
        "history": [_history_row(lk) for lk in looks],
        "config": {"metric": config.metric, "threshold": config.threshold,
                   "alpha": config.alpha, "min_sample": config.min_sample,
                   "prior_strength": m},
    }
    return record


def _keys(look: Look) -> set[TaskKey]:
    return {(str(s), str(t)) for s, t, _ in look.record.get("stage_tasks") or []}


def _history_row(look: Look) -> dict[str, Any]:
    return {"look": look.look, "stage": look.stage, "share": look.share,
            "decision": look.decision, "tasks": look.n_tasks,
            "value": (look.record.get("sample") or {}).get("value"),
            "created_at": look.created_at.isoformat()}


def _p(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _hold_reason(config: CanaryConfig, n: int, value: float | None, lo: float, hi: float,
                 more: dict[str, int | None]) -> str:
    head = (f"not enough evidence yet: {n} task(s)" + (f", {_p(value)}" if n else "")
            + f", {1 - config.alpha:.0%} bounds [{_p(lo)}, {_p(hi)}] around the "
            + ("maximum" if config.metric in AT_MOST else "threshold")
            + f" {_p(config.threshold)}")
    parts = []
    if more["min_sample"]:
        parts.append(f"the minimum sample asks {more['min_sample']} more")
    soonest = [k for k in (more["if_all_succeed"], more["if_all_fail"]) if k is not None]
    if soonest:
        parts.append(f"at least {min(soonest)} more task(s) could decide it ("
                     f"{more['if_all_succeed'] if more['if_all_succeed'] is not None else '—'}"
                     f" all succeeding promote it, "
                     f"{more['if_all_fail'] if more['if_all_fail'] is not None else '—'}"
                     " all failing roll it back)")
    if more["at_current_rate"] is not None:
        parts.append(f"about {more['at_current_rate']} more at the current rate")
    return head + ("; " + "; ".join(parts) if parts else "")


def stored_rollback(looks: Iterable[Look]) -> Look | None:
    """The look that rolled the rollout back, if one did."""
    return next((lk for lk in looks if lk.decision == ROLLBACK), None)


def take_look(store: Any, config: CanaryConfig, now: StageTasks) -> dict[str, Any]:
    """Decide this look from the rollout's stored looks and store it (a rolled-back rollout
    stores nothing more and answers with its roll back). The record, as printed."""
    looks = store.rollouts.looks(config.rollout)
    done = stored_rollback(looks)
    if done is not None:
        record = {k: v for k, v in done.record.items() if k != "stage_tasks"}
        record["reasons"] = [f"rollout '{config.rollout}' was rolled back at look {done.look} "
                             f"(stage {done.stage}); nothing more is decided for it: start a "
                             "new --rollout", *record.get("reasons", [])]
        record["repeated"] = True
        record["asked_stage"] = config.stage
        record["history"] = [_history_row(lk) for lk in looks]
        return record
    record = decide(config, looks, now)
    store.rollouts.add_look(config.rollout, stage=config.stage, share=config.share,
                            metric=config.metric, threshold=config.threshold,
                            decision=record["decision"], n_tasks=record["sample"]["tasks"],
                            n_success=record["sample"]["successes"],
                            record={**record, "stage_tasks": now.to_json()},
                            expected_look=record["look"])
    return record


def history(store: Any, rollout: str) -> dict[str, Any]:
    """A rollout's looks, for `judge canary --show` (no new look)."""
    looks = store.rollouts.looks(rollout)
    if not looks:
        raise InputError(f"no rollout '{rollout}' in {store.where} (judge canary stores one at "
                         "its first look)", field="--rollout")
    last = looks[-1].record
    return {"rollout": rollout, "looks": len(looks), "decision": looks[-1].decision,
            "metric": last.get("metric"), "threshold": last.get("threshold"),
            "history": [_history_row(lk) for lk in looks]}


def render_text(record: dict[str, Any]) -> str:
    """A look for a terminal (names from traces and the pipeline shown with their control
    characters as escapes)."""
    from judge.safe_text import visible as v

    if "look" not in record:  # --show
        lines = [f"rollout {v(record['rollout'])}: {record['looks']} look(s), last decision "
                 f"{record['decision'].upper()} ({record['metric']}, threshold "
                 f"{_p(record['threshold'])})"]
    elif record.get("repeated"):
        lines = [f"canary {v(record['rollout'])}, stage {v(record['asked_stage'])}: "
                 f"{record['decision'].upper()} (since look {record['look']}, stage "
                 f"{v(record['stage'])})"]
        lines += [f"  {v(r)}" for r in record["reasons"]]
    else:
        share = f" ({record['share']:.0%} of traffic)" if record.get("share") else ""
        lines = [f"canary {v(record['rollout'])}, look {record['look']}, stage "
                 f"{v(record['stage'])}{share}: {record['decision'].upper()}"]
        lines += [f"  {v(r)}" for r in record["reasons"]]
        smp, bd = record["sample"], record["bounds"]
        st = record["stage_sample"]
        lines.append(f"  sample: {smp['tasks']} task(s) so far ({st['tasks']} at this stage, "
                     f"{st['new_tasks']} new; {st['traces']} trace(s)); "
                     f"{WORDS[record['metric']]} "
                     f"{_p(smp['value'])}, {bd['level']:.0%} anytime bounds "
                     f"[{_p(bd['lower'])}, {_p(bd['upper'])}], {record['limit']} "
                     f"{_p(record['threshold'])}")
        if st["n_skipped"]:
            lines.append(f"  {st['n_skipped']} task(s) not scored by the metric (no baseline "
                         f"trajectory): {v(', '.join(st['skipped'][:8]))}")
        for veto in record["vetoes"][1:6]:
            lines.append(f"  veto: {v(veto['trace_id'])}: {v(veto['message'] or '')}")
    for h in record["history"]:
        share = f" ({h['share']:.0%})" if h.get("share") else ""
        lines.append(f"  look {h['look']}, stage {v(h['stage'])}{share}: {h['decision']} "
                     f"({h['tasks']} task(s), {_p(h['value'])})")
    return "\n".join(lines)
