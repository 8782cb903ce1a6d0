"""What changed since the previous run of the same suite (same manifest and suite name, the
newest earlier run that finished): scenarios that started or stopped failing, traces that
did, failure signatures that are new or gone, and judge verdicts that flipped — with whether
the judge's prompt version or model changed between the runs for that item.

A scenario *fails* when not every one of its tasks is as expected (as the release gate counts
it: judge.suite.tasks).
A verdict *flips* when an item graded in both runs is `pass` in one and `fail` in the other
(unscored verdicts are left out). Item ids are stable across reruns and prompt versions
(formats §3), so the same item of the same trace is compared.

Pure functions over the stored summaries and verdicts; the store lookup is the caller's.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from judge.formats import Verdict, parse_item_id


def _trace_of(item_id: str) -> str:
    try:
        return parse_item_id(item_id)[0]
    except ValueError:
        return item_id


def _failing(scenarios: dict[str, Any]) -> dict[str, bool]:
    return {s: sc.get("passed") != sc.get("total") for s, sc in scenarios.items()}


def _versions(verdicts: list[Verdict]) -> tuple[dict[str, set[str]], set[str]]:
    prompts: dict[str, set[str]] = defaultdict(set)
    models: set[str] = set()
    for v in verdicts:
        if v.label == "unscored" and not v.prompt_version:
            continue
        prompts[v.rubric or "?"].add(v.prompt_version or "?")
        models.add(v.model or "?")
    return prompts, models


def no_previous() -> dict[str, Any]:
    return {"previous_run": None, "previous_finished_at": None, "started_failing": [],
            "stopped_failing": [], "still_failing": [], "new_scenarios": [],
            "missing_scenarios": [], "traces_started_failing": [],
            "traces_stopped_failing": [], "new_signatures": [], "resolved_signatures": [],
            "judge_changed": {"prompt_versions": {}, "models": None}, "verdict_flips": [],
            "flipped_after_prompt_or_model_change": []}


def changes_since(previous: dict[str, Any] | None, previous_verdicts: list[Verdict],
                  summary: dict[str, Any], verdicts: list[Verdict]) -> dict[str, Any]:
    """The `changes` section of a run summary: `summary` (this run's, without it) against
    the previous run (`get_run`'s dict, with its stored summary) and both runs' verdicts."""
    out = no_previous()
    if previous is None:
        return out
    before: dict[str, Any] = previous.get("summary") or {}
    finished = previous.get("finished_at")
    out["previous_run"] = previous.get("run_id")
    out["previous_finished_at"] = (finished.isoformat() if isinstance(finished, datetime)
                                   else finished)
    was, now = _failing(before.get("scenarios") or {}), _failing(summary["scenarios"])
    out["started_failing"] = sorted(s for s, f in now.items() if f and was.get(s) is False)
    out["stopped_failing"] = sorted(s for s, f in now.items() if not f and was.get(s) is True)
    out["still_failing"] = sorted(s for s, f in now.items() if f and was.get(s) is True)
    out["new_scenarios"] = sorted(set(now) - set(was))
    out["missing_scenarios"] = sorted(set(was) - set(now))

    passed_before = {t["trace_id"]: t["passed"] for t in before.get("traces") or []}
    scenario_of = {t["trace_id"]: t["scenario"] for t in before.get("traces") or []}
    for t in summary["traces"]:
        scenario_of[t["trace_id"]] = t["scenario"]
        was_passing = passed_before.get(t["trace_id"])
        if was_passing is True and not t["passed"]:
            out["traces_started_failing"].append(
                {"trace_id": t["trace_id"], "scenario": t["scenario"],
                 "first_divergence": t.get("first_divergence")})
        elif was_passing is False and t["passed"]:
            out["traces_stopped_failing"].append(
                {"trace_id": t["trace_id"], "scenario": t["scenario"]})

    sigs_before = {c["signature"] for c in before.get("clusters") or []}
    sigs_now = {c["signature"] for c in summary["clusters"]}
    out["new_signatures"] = [{"signature": c["signature"], "count": c["count"],
                              "traces": c["traces"]}
                             for c in summary["clusters"] if c["signature"] not in sigs_before]
    out["resolved_signatures"] = sorted(sigs_before - sigs_now)

    p_before, m_before = _versions(previous_verdicts)
    p_now, m_now = _versions(verdicts)
    out["judge_changed"] = {
        "prompt_versions": {r: {"before": sorted(p_before.get(r, ())),
                                "after": sorted(p_now.get(r, ()))}
                            for r in sorted(set(p_before) & set(p_now))
                            if p_before[r] != p_now[r]},
        "models": ({"before": sorted(m_before), "after": sorted(m_now)}
                   if m_before and m_now and m_before != m_now else None)}

    old = {v.item_id: v for v in previous_verdicts if v.label in ("pass", "fail")}
    flips: list[dict[str, Any]] = []
    for v in verdicts:
        o = old.get(v.item_id)
        if o is None or v.label not in ("pass", "fail") or o.label == v.label:
            continue
        trace_id = _trace_of(v.item_id)
        prompt_changed = (o.prompt_version, o.prompt_hash) != (v.prompt_version, v.prompt_hash)
        flips.append({"item_id": v.item_id, "trace_id": trace_id,
                      "scenario": scenario_of.get(trace_id), "rubric": v.rubric,
                      "before": o.label, "after": v.label,
                      "prompt_version": {"before": o.prompt_version, "after": v.prompt_version},
                      "model": {"before": o.model, "after": v.model},
                      "prompt_changed": prompt_changed, "model_changed": o.model != v.model})
    flips.sort(key=lambda f: f["item_id"])
    out["verdict_flips"] = flips
    out["flipped_after_prompt_or_model_change"] = sorted(
        {f["scenario"] or f["trace_id"] for f in flips
         if f["prompt_changed"] or f["model_changed"]})
    return out
