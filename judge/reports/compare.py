"""The `judge compare` page (`--format html`): two versions on the same tasks, on the page
shell and stylesheet the run and agreement reports share (judge.reports.page).

It takes the comparison as its JSON-ready dict (docs/formats.md, "`judge compare`"), not the
library objects that built it; every task id, trace id, signature and message in it came
from traces and reaches the page through the template's escaping.
"""

from __future__ import annotations

from typing import Any

from judge.reports.page import png, render

LABELS = {"fixed": "fixed", "broken": "broken", "still_failing": "still failing",
          "flaky": "flaky", "still_passing": "still passing"}
TAGS = {"fixed": "fixed", "broken": "new", "still_failing": "new", "flaky": "flaky",
        "still_passing": "fixed"}
MAX_TASKS = 200
MAX_DETAILS = 12


def _details(t: dict[str, Any]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for side in ("baseline", "candidate"):
        for r in t[side]["results"]:
            if r.get("first_divergence"):
                out.append({"at": f"{side} {r['trace_id']}", "text": r["first_divergence"]})
    for d in t["drift"]["diffs"]:
        for x in d["drifts"][:3]:
            out.append({"at": f"drift {d['trace_id']}", "text": x.get("message", "")})
    return out[:MAX_DETAILS]


def _task(t: dict[str, Any]) -> dict[str, Any]:
    name = t["task_id"] if t["task_id"] == t["scenario"] else f"{t['scenario']}/{t['task_id']}"
    return {"name": name, "label": LABELS[t["change"]], "tag": TAGS[t["change"]],
            "base": t["baseline"]["results"], "cand": t["candidate"]["results"],
            "new": t["signatures"]["new"], "drifted": t["drift"]["drifted"],
            "diffed": t["drift"]["diffed"], "details": _details(t)}


def to_html(report: dict[str, Any]) -> str:
    """The page (one self-contained file)."""
    from judge.reports.plots import compare_png

    pr = report["pass_rate"]
    c = report["counts"]
    rows = [t for t in report["tasks"] if t["change"] != "still_passing"]
    pairs = [(t["baseline"]["share"], t["candidate"]["share"]) for t in report["tasks"]]
    headline = (f"{report['paired_tasks']} paired task(s): {c['fixed']} fixed, "
                f"{c['broken']} broken, {c['flaky']} flaky, {c['still_failing']} still "
                f"failing")
    if report["failed"]:
        headline = "FAILED (--fail-on): " + headline
    cards = [("paired tasks", str(report["paired_tasks"])), ("fixed", str(c["fixed"])),
             ("broken", str(c["broken"])), ("flaky", str(c["flaky"])),
             ("still failing", str(c["still_failing"])),
             ("new failure signatures", str(len(report["signatures"]["new"]))),
             ("drifted trials", f"{report['drift']['drifted']}/{report['drift']['pairs']}")]
    return render(
        "compare.html.j2", title=f"judge compare {report['baseline']['source']} → "
        f"{report['candidate']['source']}", kind="compare report", generated_at=None,
        r=report, headline=headline, change=pr["text"], cards=cards,
        figure=png(compare_png(pairs, pr["change"], pr["ci"], pr["confidence"])),
        sides=[("baseline", report["baseline"]), ("candidate", report["candidate"])],
        tasks=[_task(t) for t in rows[:MAX_TASKS]],
        more_tasks=max(0, len(rows) - MAX_TASKS))
