"""The run report as a page (`judge report run RUN_ID --format html`, `out/nightly.html`).

It answers the morning questions from one stored run, at a glance: did we pass (the gate
banner, each release rule with its threshold and measured value), what broke (scenarios as
bars of tasks as expected, with their trials and flaky tasks, worst severity; each task's
trials, flaky ones — whose trials disagree — marked; state leakage — facts of another user,
tenant or session — clustered apart, by first leak; failure clusters by first divergence
with each minimal slice folded under it), since when (what changed since the
previous finished run of the same suite and manifest; trend lines over the earlier runs), and
how much a person must look at (the judge's share: auto-accepted, review, overruled by a veto,
unscored; each prompt version's calibration state and what to do next).

`run_report` gathers (the stored summary, the run's verdicts, the suite's earlier runs,
labels and calibration records); `to_html` renders the shared page (judge.reports.page).
Everything from a trace, a label or a manifest reaches the page through the template's
escaping. Fields other helpers add to the summary (`changes`, per-scenario `flaky` and
`worst_severity`) are used when present and computed here when not.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from judge.formats import Verdict
from judge.labels import reference_labels
from judge.labels.report import rubric_of
from judge.trace.describe import event_text

if TYPE_CHECKING:
    from judge.store import Store

#: least to most severe; a cluster of judge fails (no deterministic divergence) is its own,
#: and a veto is "safety-critical" (judge.suite.components, issue 11)
SEVERITIES = ("informational", "task-quality", "judge-fail", "costly", "unsafe",
              "safety-critical")
#: the judge's share, in the order the chart stacks it
SHARES = ("auto-accepted", "review", "overruled by veto", "unscored")
MIN_PER_CLASS = 30  # judge.calibration.build.MIN_PER_CLASS, without importing numpy here


@dataclass
class PromptState:
    """One (rubric, prompt version, model) of the run's verdicts and its calibration now."""

    rubric: str
    version: str
    prompt_hash: str | None
    model: str
    items: int
    shares: dict[str, int]
    state: str  # calibrated | stale | none
    why: str
    next_step: str  # what to do, in words
    command: str | None = None  # the command that does it


@dataclass
class RunPoint:
    """One run of the suite on the trend lines."""

    run_id: str
    started_at: datetime | None
    scenario_pass_rate: float
    trace_pass_rate: float | None
    review_share: float
    agreement: float | None  # judge vs reference labels on this run's labelled items
    n_labelled: int


@dataclass
class RunReport:
    summary: dict[str, Any]
    started_at: datetime | None = None
    shares: dict[str, int] = field(default_factory=dict)
    prompts: list[PromptState] = field(default_factory=list)
    history: list[RunPoint] = field(default_factory=list)  # oldest first, this run last
    previous: dict[str, Any] | None = None  # the previous run's summary
    previous_id: str | None = None
    failing_since: dict[str, tuple[str, int]] = field(default_factory=dict)


# -- gathering -----------------------------------------------------------------------------
def share_of(v: Verdict) -> str:
    """Which part of the judge's share one verdict is (each verdict in exactly one)."""
    if v.overruled or v.route == "veto":
        return "overruled by veto"
    if v.label == "unscored":
        return "unscored"
    if v.route == "auto_accept":
        return "auto-accepted"
    return "review"


def run_report(store: Store, run_id: str, summary: dict[str, Any], *,
               history: int = 12) -> RunReport:
    """Everything the page shows about `run_id` (whose stored `summary` the caller read)."""
    run = store.get_run(run_id) or {}
    verdicts = store.run_verdicts(run_id)
    report = RunReport(summary=summary, started_at=run.get("started_at"))
    report.shares = dict(Counter(share_of(v) for v in verdicts))
    report.prompts = prompt_states(store, verdicts)
    suite = summary.get("suite")
    if not suite:
        return report
    manifest = (run.get("config") or {}).get("manifest")
    earlier = store.suite_runs(str(suite), manifest=manifest, before=run_id, limit=history)
    earlier = [r for r in earlier if r.get("summary")]
    if earlier:
        report.previous, report.previous_id = earlier[0]["summary"], earlier[0]["run_id"]
    runs = [*reversed(earlier), {**run, "run_id": run_id, "summary": summary}]
    # agreement needs only the labelled items: every label, then each earlier run's verdicts
    # on those items (never every verdict of every run)
    refs = {i: r for i, r in reference_labels(store.labels_for()).labels.items()
            if r.label != "unsure"}
    report.history = [_point(r, verdicts if r["run_id"] == run_id else
                             store.run_verdicts_of(r["run_id"], refs) if refs else [], refs)
                      for r in runs]
    report.failing_since = failing_since([r["summary"] for r in runs],
                                         [r["run_id"] for r in runs])
    return report


def _point(run: dict[str, Any], verdicts: Sequence[Verdict],
           refs: dict[str, Any]) -> RunPoint:
    s = run["summary"]
    g = s.get("gate") or {}
    traces = s.get("traces") or []
    agreed = labelled = 0
    for v in verdicts:
        ref = refs.get(v.item_id)
        if ref is None or ref.label == "unsure" or v.label == "unscored":
            continue
        labelled += 1
        agreed += ref.label == v.label
    return RunPoint(
        run_id=run["run_id"], started_at=run.get("started_at"),
        scenario_pass_rate=float(g.get("scenario_pass_rate", 0.0)),
        trace_pass_rate=(sum(1 for t in traces if t.get("passed")) / len(traces)
                         if traces else None),
        review_share=float(g.get("review_share", 0.0)),
        agreement=agreed / labelled if labelled else None, n_labelled=labelled)


def failing_since(summaries: Sequence[dict[str, Any]],
                  run_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """For each scenario failing in the last summary: the first run of its current failing
    streak and the streak's length in runs (summaries oldest first)."""
    out: dict[str, tuple[str, int]] = {}
    if not summaries:
        return out
    for name, sc in (summaries[-1].get("scenarios") or {}).items():
        if _passing(sc):
            continue
        streak = 0
        for s in reversed(summaries):
            old = (s.get("scenarios") or {}).get(name)
            if old is None or _passing(old):
                break
            streak += 1
        out[name] = (run_ids[len(summaries) - streak], streak)
    return out


def _passing(sc: dict[str, Any]) -> bool:
    return bool(sc.get("total")) and sc.get("passed") == sc.get("total")


def prompt_states(store: Store, verdicts: Sequence[Verdict]) -> list[PromptState]:
    """Each (rubric, prompt version, hash, model) of the verdicts with its calibration state
    now — calibrated, stale (judge.calibration.staleness: labels grew since the record) or
    none — and what to do next."""
    from judge.calibration.lookup import find_calibration
    from judge.calibration.staleness import stale_rubrics

    groups: dict[tuple[str, str, str | None, str], list[Verdict]] = defaultdict(list)
    for v in verdicts:
        groups[(rubric_of(v.item_id, v), v.prompt_version or "?", v.prompt_hash,
                v.model or "unknown")].append(v)
    counts: dict[str, Counter[str]] = {}
    out = []
    for (rubric, version, phash, model), vs in sorted(groups.items(),
                                                      key=lambda kv: str(kv[0])):
        shares = dict(Counter(share_of(v) for v in vs))
        record = find_calibration(store, rubric, phash, model) if phash else None
        if rubric not in counts:
            refs = reference_labels(store.labels_for(rubric=rubric)).labels
            counts[rubric] = Counter(r.label for r in refs.values())
        labelled = counts[rubric]["pass"] + counts[rubric]["fail"]
        if record is None:
            need = {k: max(0, MIN_PER_CLASS - counts[rubric][k]) for k in ("pass", "fail")}
            todo = (f"label {need['fail']} more fail and {need['pass']} more pass item(s) "
                    "with judge label, then fit" if any(need.values()) else "fit a calibration")
            out.append(PromptState(
                rubric, version, phash, model, len(vs), shares, "none",
                f"no calibration record: every verdict goes to review ({labelled} item(s) "
                "labelled)", todo, f"judge calibrate fit --rubric {rubric}"))
            continue
        reasons = stale_rubrics([record], [(rubric, version, phash, model)],
                                {rubric: labelled})
        if reasons:
            out.append(PromptState(rubric, version, phash, model, len(vs), shares, "stale",
                                   reasons[0], "refit on the new labels",
                                   f"judge calibrate fit --rubric {rubric}"))
        elif record.threshold is None:
            out.append(PromptState(
                rubric, version, phash, model, len(vs), shares, "calibrated",
                f"{record.method}: no threshold reaches agreement {record.target:.0%}, so "
                f"every verdict goes to review ({record.n_labelled} labels, "
                f"{record.created_at:%Y-%m-%d})",
                "write a better prompt version and compare the two, or label more",
                f"judge calibrate compare {version} NEW_VERSION --rubric {rubric}"))
        else:
            out.append(PromptState(
                rubric, version, phash, model, len(vs), shares, "calibrated",
                f"{record.method}, threshold {record.threshold:.3f} for agreement "
                f"{record.target:.0%} ({record.n_labelled} labels, "
                f"{record.created_at:%Y-%m-%d})",
                "nothing: confident verdicts are auto-accepted"))
    return out


# -- what the page shows -------------------------------------------------------------------
def _rules(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Each release rule: threshold (None when the run predates stored rules), measured
    value, whether it held."""
    g = s["gate"]
    rel = s.get("release") or {}

    def rule(name: str, op: str, key: str, measured: float, fmt: str) -> dict[str, Any]:
        limit = rel.get(key)
        held = None if limit is None else (measured <= limit if op == "≤" else
                                           measured >= limit)
        def shown(x: float) -> str:
            return f"{x:.0%}" if fmt == "pct" else f"{x:.2f}" if fmt == "f" else f"{int(x)}"

        return {"name": name, "threshold": "—" if limit is None else f"{op} {shown(limit)}",
                "measured": shown(measured), "held": held}

    tasks = "task_pass_rate" in g
    rows = [rule("safety-critical violations", "≤", "max_safety_critical",
                 g["safety_critical"], "int"),
            rule("scenario pass rate (tasks as expected, mean over scenarios)" if tasks
                 else "scenario pass rate (every repetition passes)", "≥",
                 "min_scenario_pass_rate", g["scenario_pass_rate"], "pct"),
            rule("mean quality", "≥", "quality_floor", g["mean_quality"], "f"),
            rule("review share", "≤", "max_review_share", g["review_share"], "pct")]
    missing = g.get("missing_repetitions") or {}
    rows.append({"name": "expected trials of each task found" if tasks
                 else "expected repetitions found", "threshold": "all",
                 "measured": f"{len(missing)} scenario(s) short" if missing else "all",
                 "held": not missing})
    ef = g.get("expected_failures") or {}
    if ef.get("caught") or ef.get("missed"):
        missed = len(ef.get("missed") or [])
        rows.append({"name": "tasks designed to fail are caught", "threshold": "all",
                     "measured": f"{ef.get('caught', 0)} caught, {missed} missed",
                     "held": not missed})
    return rows


def _other_reasons(s: dict[str, Any]) -> list[str]:
    """Gate reasons no rule row shows (no traces, --require-calibrated, …)."""
    shown = ("safety-critical violation", "scenario pass rate", "mean quality",
             "review share", "expected repetitions", "expected trial", "no trace found",
             "is expected to fail, but")
    return [r for r in s["gate"].get("reasons", []) if not any(k in r for k in shown)]


def _scenarios(report: RunReport) -> list[dict[str, Any]]:
    s = report.summary
    worst: dict[str, str] = {}  # for summaries without `repetitions`: from the traces
    for t in s.get("traces") or []:
        div = t.get("first_divergence") or {}
        sev = t.get("worst_severity") or div.get("severity") or (
            "judge-fail" if not t.get("passed") else None)
        if sev and _rank(sev) > _rank(worst.get(t.get("scenario", ""), "")):
            worst[t["scenario"]] = sev
    reps = s.get("repetitions") or {}
    comps = [str(c) for c in s.get("components") or {}]
    rows = []
    for name, sc in sorted((s.get("scenarios") or {}).items()):
        rep = reps.get(name) or {}
        passed, total = int(sc.get("passed", 0)), int(sc.get("total", 0))
        flaky = rep.get("flaky")
        if flaky is None:
            flaky = 0 < passed < total
        since = report.failing_since.get(name)
        ef = rep.get("expected_failures") or {}
        rows.append({"name": name, "passed": passed, "total": total,
                     "width": f"{100 * passed / total:.1f}" if total else "0",
                     "flaky": bool(flaky),
                     "flaky_tasks": len(rep.get("flaky_tasks") or []),
                     "trials": (f"{rep.get('passed', 0)}/{rep.get('total', 0)}"
                                if "tasks" in rep else None),
                     "caught": len(ef.get("caught") or []),
                     "missed": len(ef.get("missed") or []),
                     "severity": rep.get("worst_severity") if rep else worst.get(name),
                     "since": since,
                     "components": [rate_text((rep.get("components") or {}).get(c))
                                    for c in comps]})
    return rows


def _tasks(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenarios with more than one task or trial, each task with its trials in order
    (passed or not, and the trace), for the page's tasks section."""
    out = []
    for name, ts in sorted((s.get("tasks") or {}).items()):
        if not isinstance(ts, dict) or not (len(ts) > 1 or any(
                int(t.get("trials") or 0) > 1 for t in ts.values())):
            continue
        rows = [{"task": tid, "expect": t.get("expect"), "status": t.get("status"),
                 "passed": t.get("passed"), "trials": t.get("trials"),
                 "results": [{"passed": bool(r.get("passed")), "trace": r.get("trace_id"),
                              "trial": r.get("trial")} for r in t.get("results") or []]}
                for tid, t in ts.items()]
        counts = Counter(str(r["status"]) for r in rows)
        out.append({"name": name, "rows": rows, "counts": dict(counts),
                    "open": any(r["status"] not in ("passing", "caught") for r in rows)})
    return out


def rate_text(r: Any) -> str:
    """A component rate as `3/4 (75%)`, or `n/a` when nothing was measured."""
    if not isinstance(r, dict) or not r.get("denominator"):
        return "n/a"
    return f"{r.get('numerator')}/{r['denominator']} ({r.get('rate') or 0:.0%})"


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


def changes(report: RunReport) -> dict[str, list[str]] | None:
    """What changed since the previous run, as labelled lists of lines: from the summary's
    own `changes` (judge.suite.changes, written by `judge run`) when it has them, else
    computed from the two summaries (scenarios that started or stopped failing, new and gone
    failure signatures). None when there is no previous run."""
    own = report.summary.get("changes")
    if isinstance(own, dict) and "previous_run" in own:
        return _stored_changes(own) if own.get("previous_run") else None
    prev = report.previous
    if prev is None:
        return None
    now_sc, old_sc = report.summary.get("scenarios") or {}, prev.get("scenarios") or {}
    old_sigs = {c.get("signature") for c in prev.get("clusters") or []}
    return {
        "started failing": sorted(k for k, v in now_sc.items()
                                  if not _passing(v) and k in old_sc and _passing(old_sc[k])),
        "stopped failing": sorted(k for k, v in now_sc.items()
                                  if _passing(v) and k in old_sc and not _passing(old_sc[k])),
        "new scenarios": sorted(set(now_sc) - set(old_sc)),
        "new failure signatures": [f"{c['signature']} ({c.get('count', 0)} trace(s))"
                                   for c in report.summary.get("clusters") or []
                                   if c.get("signature") not in old_sigs],
        "signatures gone": sorted(str(x) for x in old_sigs - {
            c.get("signature") for c in report.summary.get("clusters") or []}),
    }


def _stored_changes(ch: dict[str, Any]) -> dict[str, list[str]]:
    """The summary's `changes` section (judge.suite.changes) as labelled lines."""
    def strs(key: str) -> list[str]:
        return [str(x) for x in ch.get(key) or []]

    def dicts(key: str) -> list[dict[str, Any]]:
        return [x for x in ch.get(key) or [] if isinstance(x, dict)]

    judge = ch.get("judge_changed") or {}
    moved = [f"prompt {r}: {', '.join(map(str, pv.get('before', [])))} → "
             f"{', '.join(map(str, pv.get('after', [])))}"
             for r, pv in (judge.get("prompt_versions") or {}).items()]
    if judge.get("models"):
        m = judge["models"]
        moved.append(f"model: {', '.join(map(str, m.get('before', [])))} → "
                     f"{', '.join(map(str, m.get('after', [])))}")
    flips = [f"{f.get('item_id')}: {f.get('before')} → {f.get('after')}"
             + (" (prompt or model changed)" if f.get("prompt_changed")
                or f.get("model_changed") else "") for f in dicts("verdict_flips")]
    return {
        "started failing": strs("started_failing"),
        "stopped failing": strs("stopped_failing"),
        "new scenarios": strs("new_scenarios"),
        "scenarios no longer run": strs("missing_scenarios"),
        "traces started failing": [str(t.get("trace_id")) for t in
                                   dicts("traces_started_failing")],
        "traces stopped failing": [str(t.get("trace_id")) for t in
                                   dicts("traces_stopped_failing")],
        "new failure signatures": [f"{c.get('signature')} ({c.get('count', 0)} trace(s))"
                                   for c in dicts("new_signatures")],
        "signatures gone": strs("resolved_signatures"),
        "judge changed": moved,
        "flipped after a prompt or model change": strs(
            "flipped_after_prompt_or_model_change"),
        "verdicts flipped": flips,
    }


def event_line(e: dict[str, Any], width: int = 400) -> tuple[str, str]:
    """(where, what) of one slice event, shortened (the template escapes both)."""
    kind = e.get("kind", "?")
    if kind == "elided":
        return "", str(e.get("text", "…"))
    text = event_text(e, width)
    return f"seq {e.get('seq')} · turn {e.get('turn')} · {kind}", text


def _clusters(s: dict[str, Any], limit: int, family: str | None = None) -> list[dict[str, Any]]:
    """Cluster rows for the page: the leakage clusters (`family="leakage"`), or every other
    (`family=None`), at most `limit`."""
    out = []
    chosen = [c for c in s.get("clusters") or []
              if (c.get("family") == "leakage") == (family == "leakage")]
    for c in chosen[:limit]:
        ex = c.get("example") or {}
        seq = ex.get("seq")
        out.append({
            "signature": c.get("signature"), "severity": c.get("consequence"),
            "count": c.get("count", len(c.get("traces") or [])),
            "traces": (c.get("traces") or [])[:6], "more": max(0, len(c.get("traces") or [])
                                                               - 6),
            "seq": seq, "message": ex.get("message"),
            "slice": [{"judged": seq is not None and e.get("seq") == seq,
                       "at": event_line(e)[0], "text": event_line(e)[1]}
                      for e in c.get("slice") or []]})
    return out


def _cards(s: dict[str, Any], traces: list[dict[str, Any]],
           shares: dict[str, int]) -> list[tuple[str, str]]:
    """The figures at the top: traces, the failing ones (of tasks expected to pass), the
    designed failures caught, signatures, verdicts that need a person."""
    designed = [t for t in traces if t.get("expect") == "fail"]
    cards = [("traces checked", str(len(traces))),
             ("traces failing", str(sum(1 for t in traces
                                        if not t.get("passed") and t.get("expect") != "fail")))]
    if designed:
        caught = sum(1 for t in designed if not t.get("passed"))
        cards.append(("designed failures caught", f"{caught}/{len(designed)}"))
    if s.get("flaky_tasks") is not None:
        cards.append(("flaky tasks", str(len(s["flaky_tasks"]))))
    if s.get("leaking_traces"):
        cards.append(("traces leaking another owner's facts", str(s["leaking_traces"])))
    return [*cards, ("failure signatures", str(len(s.get("clusters") or []))),
            ("verdicts to review", str(shares["review"] + shares["unscored"]))]


def to_html(report: RunReport, *, max_clusters: int = 40) -> str:
    """The page (one self-contained file)."""
    from judge.reports.page import png, render
    from judge.reports.plots import share_png, trend_png

    s = report.summary
    g = s["gate"]
    traces = s.get("traces") or []
    # a summary stored by an older judge may lack some of these
    j = {"name": "unknown", "model": "unknown", "provider_calls": 0, "cache_hits": 0,
         **(s.get("judge") or {})}
    shares = {k: report.shares.get(k, 0) for k in SHARES}
    if not any(shares.values()) and s.get("judge"):  # a summary without stored verdicts: its counts
        shares = {"auto-accepted": j.get("auto_accepted", 0), "review": j.get("review", 0),
                  "overruled by veto": j.get("overruled", 0),
                  "unscored": j.get("unscored", 0)}
    n_items = sum(shares.values())
    trend = report.history if len(report.history) >= 2 else []
    return render(
        "run.html.j2", title=f"judge run {s['run_id']} — {s['suite']}", kind="run report",
        generated_at=f"run started {report.started_at:%Y-%m-%d %H:%M} UTC"
        if report.started_at else None,
        s=s, gate=g, rules=_rules(s), other_reasons=_other_reasons(s),
        cards=_cards(s, traces, shares),
        scenarios=_scenarios(report), tasks=_tasks(s), has_tasks="tasks" in s, judge=j,
        components=[(str(k), rate_text(r)) for k, r in (s.get("components") or {}).items()],
        shares=shares, n_items=n_items,
        share_img=png(share_png(shares)) if n_items else None, prompts=report.prompts,
        clusters=_clusters(s, max_clusters),
        more_clusters=max(0, sum(1 for c in s.get("clusters") or []
                                 if c.get("family") != "leakage") - max_clusters),
        leak_clusters=_clusters(s, max_clusters, "leakage"),
        leaking_traces=s.get("leaking_traces"),
        changes=changes(report),
        previous_id=(s.get("changes") or {}).get("previous_run") or report.previous_id,
        trend=trend, trend_img=png(trend_png(trend)) if trend else None,
        input_errors=(s.get("input_errors") or [])[:20])
