"""A comparison (judge.compare.pairing's dict) as text for a terminal and as Markdown.

Task ids, trace ids, signatures and messages come from traces: text shows their control
characters as escapes (judge.safe_text.visible), Markdown escapes every one of them as an
inline fragment (`md_text`), so neither output can carry a live escape sequence, a tag, a
link or a broken table from the content.
"""

from __future__ import annotations

from typing import Any

from judge.safe_text import md_code, md_text, visible

LABELS = {"fixed": "fixed", "broken": "broken", "still_failing": "still failing",
          "flaky": "flaky", "still_passing": "still passing"}
SHOWN_TASKS = 25


def pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def points(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}"


def marks(side: dict[str, Any]) -> str:
    """A task's trials in order: ✓ passed, ✗ failed."""
    return "".join("✓" if r["passed"] else "✗" for r in side["results"])


def task_name(row: dict[str, Any]) -> str:
    return row["task_id"] if row["task_id"] == row["scenario"] else \
        f"{row['scenario']}/{row['task_id']}"


def change_line(pr: dict[str, Any]) -> str:
    """The pass-rate change with its interval and test, in words."""
    if not pr["n_tasks"]:
        return "pass rate: no paired task"
    ci = pr["ci"]
    shown = f"[{points(ci[0])}, {points(ci[1])}]" if ci else "n/a"
    if pr["test"] == "mcnemar_exact":
        m = pr["mcnemar"]
        how = (f"exact McNemar p = {pr['p_value']:.3g} ({m['c']} fixed, {m['b']} broken); "
               f"Newcombe interval")
    else:
        b = pr["bootstrap"]
        how = (f"bootstrap over {pr['n_tasks']} tasks, {b['n_boot']:,} resamples: "
               f"p = {pr['p_value']:.3g}")
    what = "pass rate" if pr["test"] == "mcnemar_exact" else \
        "pass rate (trials passed, mean over tasks)"
    return (f"{what}: baseline {pct(pr['baseline'])} → candidate {pct(pr['candidate'])}: "
            f"{points(pr['change'])} points, {pr['confidence']:.0%} CI {shown} ({how})")


def _side(label: str, s: dict[str, Any]) -> str:
    return (f"{label} {s['source']} ({s['traces']} trace(s), {s['tasks']} task(s)"
            + (f"; judge {s['judge']['model']}" if s.get("judge") else "") + ")")


def render_text(r: dict[str, Any], *, limit: int = SHOWN_TASKS) -> str:
    v = visible
    c = r["counts"]
    lines = [v(_side("baseline", r["baseline"])), v(_side("candidate", r["candidate"])),
             f"paired {r['paired_tasks']} task(s) ({v(', '.join(r['scenarios']) or '-')}): "
             + ", ".join(f"{LABELS[k]} {c[k]}" for k in LABELS)]
    for name in ("baseline", "candidate"):
        j = r[name].get("judge")
        if j:
            lines.append(f"judge {v(j['model'])} on the {name}: {j['verdicts']} verdict(s), "
                         f"{j['fail']} fail ({j['standing_fails']} standing), "
                         f"{j['to_review']} to review, {j['unscored']} unscored; stored as "
                         f"run {v(j['run_id'])} ({j['provider_calls']} provider call(s), "
                         f"{j['cache_hits']} from cache)")
    if r["baseline_only"] or r["candidate_only"]:
        lines.append(f"not paired: {len(r['baseline_only'])} task(s) only in the baseline, "
                     f"{len(r['candidate_only'])} only in the candidate")
    lines.append(r["pass_rate"]["text"])
    tr = r["task_pass_rate"]
    lines.append(f"tasks passing every trial: {tr['baseline']['passing']}/"
                 f"{tr['baseline']['tasks']} → {tr['candidate']['passing']}/"
                 f"{tr['candidate']['tasks']}")
    for change in ("fixed", "broken", "flaky", "still_failing"):
        rows = [t for t in r["tasks"] if t["change"] == change]
        if not rows:
            continue
        lines.append(f"{LABELS[change]} ({len(rows)}):")
        for t in rows[:limit]:
            new = t["signatures"]["new"]
            lines.append(f"  {v(task_name(t))}: {marks(t['baseline'])} → "
                         f"{marks(t['candidate'])}"
                         + (f"  new: {v(', '.join(new))}" if new else ""))
        if len(rows) > limit:
            lines.append(f"  … {len(rows) - limit} more (--format json lists every task)")
    sig = r["signatures"]
    lines.append(f"new failure signatures ({len(sig['new'])})"
                 + (":" if sig["new"] else ": none"))
    for s in sig["new"][:limit]:
        lines.append(f"  {v(s['signature'])}: {s['count']} trial(s) of "
                     f"{len(s['tasks'])} task(s) ({v(', '.join(s['tasks'][:6]))}"
                     + (" …" if len(s["tasks"]) > 6 else "") + ")")
    if sig["resolved"]:
        lines.append(f"signatures gone ({len(sig['resolved'])}): "
                     + v(", ".join(s["signature"] for s in sig["resolved"][:limit])))
    d = r["drift"]
    lines.append(f"drift from the nearest baseline trial of the task: {d['drifted']} of "
                 f"{d['pairs']} candidate trial(s) (presence {d['presence']}, argument "
                 f"{d['argument']}, terminal {d['terminal']})"
                 + (f"; {d['not_diffed']} not diffed (no trace)" if d["not_diffed"] else ""))
    for w in r["warnings"]:
        lines.append(f"warning: {v(w)}")
    for f in r["failed"]:
        lines.append(f"FAILED (--fail-on): {v(f)}")
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cells) + " |" for cells in rows]
    return [*out, ""]


def render_markdown(r: dict[str, Any], *, limit: int = 200) -> str:
    c = r["counts"]
    pr = r["pass_rate"]
    lines = ["# judge compare", "",
             f"- baseline: {md_code(r['baseline']['source'])} — {r['baseline']['traces']} "
             f"trace(s), {r['baseline']['tasks']} task(s)",
             f"- candidate: {md_code(r['candidate']['source'])} — "
             f"{r['candidate']['traces']} trace(s), {r['candidate']['tasks']} task(s)",
             f"- paired tasks: {r['paired_tasks']}", "",
             f"**{md_text(pr['text'])}**", ""]
    lines += _table(["change", "tasks"], [[LABELS[k], str(c[k])] for k in LABELS])
    rows = [t for t in r["tasks"] if t["change"] != "still_passing"][:limit]
    if rows:
        lines += ["## Tasks that changed or fail", ""]
        lines += _table(["task", "change", "baseline", "candidate", "new signatures",
                         "drifted trials"],
                        [[md_text(task_name(t)), LABELS[t["change"]], marks(t["baseline"]),
                          marks(t["candidate"]), md_text(", ".join(t["signatures"]["new"]))
                          or "—", f"{t['drift']['drifted']}/{t['drift']['diffed']}"]
                         for t in rows])
    sig = r["signatures"]
    lines += ["## New failure signatures", ""]
    if sig["new"]:
        lines += _table(["signature", "trials", "tasks"],
                        [[md_text(s["signature"]), str(s["count"]),
                          md_text(", ".join(s["tasks"][:12]))] for s in sig["new"]])
    else:
        lines += ["None.", ""]
    d = r["drift"]
    lines += ["## Drift", "",
              f"{d['drifted']} of {d['pairs']} candidate trial(s) drifted from the nearest "
              f"baseline trial of their task (presence {d['presence']}, argument "
              f"{d['argument']}, terminal {d['terminal']}).", ""]
    for f in r["failed"]:
        lines += [f"**Failed (--fail-on):** {md_text(f)}", ""]
    return "\n".join(lines)
