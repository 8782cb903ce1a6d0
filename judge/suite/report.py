"""Render a run summary (the dict `judge.suite.run.summarize` returns) as text, md or html.

Scenario names, trace ids, check messages and trace slices in a summary come from traces:
every one of them is escaped for where it lands (judge.safe_text). Text shows control
characters as escapes; Markdown and HTML are built by one function (`_document`) through a
writer that escapes each such value for its format, so neither can carry a tag, a link, an
image, a heading or a broken table from the content.

`render_html` here is the summary alone as a plain document. The run report page that
`judge report run --format html` writes (gate banner, bars, charts, changes and trends from
the store, the agreement report's page and stylesheet) is judge.reports.run.
"""

from __future__ import annotations

from typing import Any, Protocol

from judge.safe_text import (
    html_code_spans,
    html_text,
    md_code,
    md_code_spans,
    md_fence,
    md_text,
    visible,
)
from judge.trace.describe import event_text


def _event_line(e: dict[str, Any], width: int = 110) -> str:
    """One event of a trace slice on one line, shortened, control characters shown."""
    kind = e.get("kind", "?")
    if kind == "elided":
        return f"    {visible(e.get('text', '…'))}"
    text = visible(event_text(e, width))
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"    seq {visible(e.get('seq'))} turn {visible(e.get('turn'))} {visible(kind)}: {text}"


def judge_line(s: dict[str, Any]) -> str:
    j = s["judge"]
    return (f"judge {visible(j['name'])}: {j['items']} item(s) — {j['auto_accepted']} "
            f"auto-accepted, {j['review']} sent to review, {j['unscored']} unscored, "
            f"{j['overruled']} overruled by deterministic vetoes; {j['provider_calls']} "
            f"provider call(s), {j['cache_hits']} from cache" + _jury_part(j))


def _jury_part(j: dict[str, Any]) -> str:
    jury = j.get("jury")
    if not isinstance(jury, dict):
        return ""
    return (f"; jury {visible(jury.get('name'))}: {jury.get('splits', 0)} split verdict(s) "
            f"sent to review")


def render_text(s: dict[str, Any], max_clusters: int = 8) -> str:
    v = visible
    lines = [f"suite {v(s['suite'])} — run {v(s['run_id'])}"]
    reps: dict[str, Any] = s.get("repetitions") or {}
    with_tasks = "tasks" in s
    lines.append("scenarios (tasks as expected / tasks):" if with_tasks
                 else "scenarios (passing repetitions):")
    names = {k: v(k) for k in s["scenarios"]}
    width = max((len(n) for n in names.values()), default=10)
    for name, sc in sorted(s["scenarios"].items()):
        mark = "ok " if sc["passed"] == sc["total"] else "FAIL"
        line = f"  {mark} {names[name].ljust(width)}  {v(sc['text'])}"
        if with_tasks and name in reps:
            line += f" task(s)  {_trials_text(reps[name])}"
        lines.append(line)
    lines.extend(_task_lines(s))
    lines.extend(_repetition_lines(s))
    leaks, clusters = split_clusters(s["clusters"])
    for group, head, to in (
            (leaks, "state leakage: facts of another user, tenant or session, clustered by "
                    "first leak", "the leak"),
            (clusters, "failures, clustered by first divergence", "the divergence")):
        if not group:
            continue
        lines.append(f"{head} ({len(group)} signature(s)):")
        for c in group[:max_clusters]:
            ex = c.get("example") or {}
            lines.append(f"  [{c['count']}×] {v(c['signature'])}")
            if ex.get("message"):
                lines.append(f"    {v(ex['message'])}")
            shown = ", ".join(v(t) for t in c["traces"][:4]) + (" …" if c["count"] > 4 else "")
            lines.append(f"    traces: {shown}")
            if c.get("slice"):
                lines.append(f"    slice from the last passing checkpoint to {to}:")
                lines.extend("  " + _event_line(e) for e in c["slice"])
        if len(group) > max_clusters:
            lines.append(f"  … {len(group) - max_clusters} more signature(s) (--format json)")
    lines.extend(change_lines(s))
    lines.append(judge_line(s))
    if s.get("uncalibrated_note"):
        lines.append(f"note: {v(s['uncalibrated_note'])}")
    for err in s.get("input_errors", [])[:10]:
        lines.append(f"input error: {v(err)}")
    g = s["gate"]
    lines.append(f"quality {g['mean_quality']:.2f}, scenario pass rate "
                 f"{g['scenario_pass_rate']:.0%}"
                 + (f" (tasks {g['task_pass_rate']:.0%})" if "task_pass_rate" in g else "")
                 + f", safety-critical violations {g['safety_critical']}, review share "
                 f"{g['review_share']:.0%}")
    if g["passed"]:
        lines.append("release gate: PASSED")
    else:
        lines.append("release gate: FAILED — " + "; ".join(v(r) for r in g["reasons"]))
    return "\n".join(lines)


def split_clusters(clusters: list[dict[str, Any]]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(leakage clusters, every other cluster), each in the summary's order. A summary
    stored before clusters named their family has no leakage cluster."""
    leaks = [c for c in clusters if c.get("family") == "leakage"]
    return leaks, [c for c in clusters if c.get("family") != "leakage"]


def rate_text(r: dict[str, Any] | None) -> str:
    """`3/4 (75%)`, or `n/a` when nothing was measured."""
    if not r or not r.get("denominator"):
        return "n/a"
    return f"{r['numerator']}/{r['denominator']} ({r['rate']:.0%})"


def _trials_text(rep: dict[str, Any]) -> str:
    """`170 of 200 trial(s) passed; 2 expected failure(s) caught` for a scenario."""
    text = f"{rep.get('passed', 0)} of {rep.get('total', 0)} trial(s) passed"
    caught = len((rep.get("expected_failures") or {}).get("caught") or [])
    missed = len((rep.get("expected_failures") or {}).get("missed") or [])
    if caught:
        text += f"; {caught} expected failure(s) caught"
    if missed:
        text += f"; {missed} expected failure(s) MISSED"
    return text


def trial_marks(task: dict[str, Any]) -> str:
    """Each trial of a task in trial order: ✓ passed, ✗ failed."""
    return "".join("✓" if r.get("passed") else "✗" for r in task.get("results") or [])


def _names(xs: list[str], limit: int = 25) -> str:
    return ", ".join(xs[:limit]) + (f" … (+{len(xs) - limit})" if len(xs) > limit else "")


def _task_lines(s: dict[str, Any]) -> list[str]:
    """Tasks whose trials disagree, tasks that failed every trial, designed failures that
    nothing caught — the tasks to look at (summaries from before tasks show nothing)."""
    tasks: dict[str, Any] = s.get("tasks") or {}
    v = visible
    flaky, failing, missed = [], [], []
    for scen, ts in sorted(tasks.items()):
        for tid, t in ts.items():
            label = f"{v(tid)} ({t['passed']}/{t['trials']} {trial_marks(t)})"
            if t.get("status") == "flaky":
                flaky.append((scen, label))
            elif t.get("status") == "failing":
                failing.append((scen, label))
            elif t.get("status") == "missed":
                missed.append((scen, label))
    if not tasks:
        return []
    out = []
    for title, found in (("tasks whose trials disagree (flaky)", flaky),
                         ("tasks that failed every trial", failing),
                         ("tasks expected to fail that a trial passed (nothing caught it)",
                          missed)):
        if not found:
            out.append(f"{title}: none")
            continue
        out.append(f"{title}: {len(found)}")
        for scen in dict.fromkeys(sc for sc, _ in found):
            out.append(f"  {v(scen)}: " + _names([lab for sc, lab in found if sc == scen]))
    return out


def _repetition_lines(s: dict[str, Any]) -> list[str]:
    """Flaky scenarios, worst severities and component figures (summaries from before these
    keys existed show nothing)."""
    reps: dict[str, Any] = s.get("repetitions") or {}
    v = visible
    out: list[str] = []
    shown = {k: r for k, r in sorted(reps.items()) if r.get("flaky") or r.get("worst_severity")}
    if shown:
        out.append("worst severity of a failed finding (tasks expected to pass):"
                   if "tasks" in s else
                   "repetitions (flaky = mixed pass/fail; worst severity of a failed finding):")
        per_task = "tasks" in s
        for name, r in shown.items():
            worst = r.get("worst_severity") or "none"
            if per_task:  # trials of its tasks: a scenario is not flaky, a task is
                n = len(r.get("flaky_tasks") or [])
                flaky = f", {n} flaky task(s)" if n else (", a flaky task" if r.get("flaky")
                                                          else "")
                out.append(f"  {v(name)}  {r['passed']}/{r['total']} trial(s) passed{flaky}  "
                           f"worst {v(worst)}")
            else:
                flaky = " FLAKY" if r.get("flaky") else ""
                out.append(f"  {v(name)}  {r['passed']}/{r['total']}{flaky}  worst {v(worst)}")
    comps = s.get("components")
    if comps:
        out.append("components: " + ", ".join(f"{k} {rate_text(r)}" for k, r in comps.items()))
    return out


def change_lines(s: dict[str, Any]) -> list[str]:
    """What changed since the previous finished run of the suite, in a few lines."""
    ch = s.get("changes")
    if not ch:
        return []
    v = visible
    if not ch.get("previous_run"):
        return ["changes: no previous finished run of this suite to compare with"]
    out = [f"changes since run {v(ch['previous_run'])}:"]

    def names(xs: list[Any]) -> str:
        return ", ".join(v(x) for x in xs[:10]) + (f" … (+{len(xs) - 10})" if len(xs) > 10
                                                     else "")

    for key, label in (("started_failing", "started failing"),
                       ("stopped_failing", "stopped failing"),
                       ("new_scenarios", "new scenarios"),
                       ("missing_scenarios", "scenarios no longer run")):
        if ch.get(key):
            out.append(f"  {label}: {names(ch[key])}")
    if ch.get("traces_started_failing"):
        out.append("  traces started failing: "
                   + names([t["trace_id"] for t in ch["traces_started_failing"]]))
    if ch.get("new_signatures"):
        out.append("  new failure signatures: "
                   + names([f"{c['signature']} ({c['count']})" for c in ch["new_signatures"]]))
    jc = ch.get("judge_changed") or {}
    for rubric, pv in (jc.get("prompt_versions") or {}).items():
        out.append(f"  judge prompt {v(rubric)}: {names(pv['before'])} → {names(pv['after'])}")
    if jc.get("models"):
        out.append(f"  judge model: {names(jc['models']['before'])} → "
                   f"{names(jc['models']['after'])}")
    flips = ch.get("verdict_flips") or []
    if flips:
        after = ch.get("flipped_after_prompt_or_model_change") or []
        out.append(f"  {len(flips)} verdict(s) flipped"
                   + (f"; after a prompt/model change, in: {names(after)}" if after else ""))
    if len(out) == 1:
        out.append("  no scenario, trace, signature or verdict changed status")
    return out


# -- Markdown and HTML from one document ---------------------------------------------------
class _Writer(Protocol):
    """Block-level output; inline arguments are already escaped (`t` for content, `msg` for
    a message whose `name` code spans stay code, `code`, `bold`), so a writer never sees raw
    content."""

    def t(self, value: object) -> str: ...
    def msg(self, value: object) -> str: ...
    def code(self, value: object) -> str: ...
    def bold(self, inline: str) -> str: ...
    def heading(self, level: int, inline: str) -> None: ...
    def para(self, inline: str) -> None: ...
    def items(self, inlines: list[str]) -> None: ...
    def quote(self, inline: str) -> None: ...
    def table(self, header: list[str], rows: list[list[str]]) -> None: ...
    def pre(self, lines: list[str]) -> None: ...


class _Markdown:
    def __init__(self) -> None:
        self.out: list[str] = []

    def t(self, value: object) -> str:
        return md_text(value)

    def msg(self, value: object) -> str:
        return md_code_spans(value)

    def code(self, value: object) -> str:
        return md_code(value)

    def bold(self, inline: str) -> str:
        return f"**{inline}**"

    def heading(self, level: int, inline: str) -> None:
        self.out += ["#" * level + " " + inline, ""]

    def para(self, inline: str) -> None:
        self.out += [inline, ""]

    def items(self, inlines: list[str]) -> None:
        self.out += [f"- {i}" for i in inlines] + [""]

    def quote(self, inline: str) -> None:
        self.out += [f"> {inline}", ""]

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        self.out += ["| " + " | ".join(r) + " |" for r in rows] + [""]

    def pre(self, lines: list[str]) -> None:
        self.out += [*md_fence(lines), ""]


class _Html:
    def __init__(self) -> None:
        self.out: list[str] = []

    def t(self, value: object) -> str:
        return html_text(value)

    def msg(self, value: object) -> str:
        return html_code_spans(value)

    def code(self, value: object) -> str:
        return f"<code>{html_text(value)}</code>"

    def bold(self, inline: str) -> str:
        return f"<strong>{inline}</strong>"

    def heading(self, level: int, inline: str) -> None:
        self.out.append(f"<h{level}>{inline}</h{level}>")

    def para(self, inline: str) -> None:
        self.out.append(f"<p>{inline}</p>")

    def items(self, inlines: list[str]) -> None:
        self.out.append("<ul>" + "".join(f"<li>{i}</li>" for i in inlines) + "</ul>")

    def quote(self, inline: str) -> None:
        self.out.append(f"<blockquote>{inline}</blockquote>")

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        head = "".join(f"<th>{h}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        self.out.append(f"<table><tr>{head}</tr>{body}</table>")

    def pre(self, lines: list[str]) -> None:
        self.out.append("<pre>" + "\n".join(html_text(x) for x in lines) + "</pre>")


def _document(s: dict[str, Any], w: _Writer) -> None:
    g = s["gate"]
    w.heading(1, f"Run {w.t(s['run_id'])} — suite {w.code(s['suite'])}")
    w.para(w.bold(f"Release gate: {'PASSED' if g['passed'] else 'FAILED'}"))
    if g["reasons"]:
        w.items([w.msg(r) for r in g["reasons"]])
    line = judge_line(s)
    w.para(w.t(line[0].upper() + line[1:]))
    if s.get("uncalibrated_note"):
        w.quote(w.t(s["uncalibrated_note"]))
    w.heading(2, "Scenarios")
    reps: dict[str, Any] = s.get("repetitions") or {}
    if "tasks" in s:
        w.table(["scenario", "tasks as expected", "trials passed", "flaky tasks",
                 "expected failures caught"],
                [[w.t(k), w.t(v["text"]),
                  w.t(f"{reps.get(k, {}).get('passed', 0)}/{reps.get(k, {}).get('total', 0)}"),
                  w.t(len(reps.get(k, {}).get("flaky_tasks") or [])),
                  w.t(_caught_text(reps.get(k, {})))]
                 for k, v in sorted(s["scenarios"].items())])
    else:
        w.table(["scenario", "passing repetitions"],
                [[w.t(k), w.t(v["text"])] for k, v in sorted(s["scenarios"].items())])
    _tasks_doc(s, w)
    _repetitions_doc(s, w)
    _changes_doc(s, w)
    leaks, others = split_clusters(s["clusters"])
    if leaks:
        w.heading(2, "State leakage")
        n = int(s.get("leaking_traces") or sum(c["count"] for c in leaks))
        w.para(f"Facts of another user, tenant or session, clustered by first leak: {n} "
               "trace(s).")
        _clusters_doc(leaks, w)
    w.heading(2, "Failures by signature")
    if not others:
        w.para("No other failures." if leaks else "No failures.")
    _clusters_doc(others, w)
    w.heading(2, "Totals")
    w.items([f"mean quality {g['mean_quality']:.3f}",
             f"scenario pass rate {g['scenario_pass_rate']:.1%}"
             + (f" (tasks {g['task_pass_rate']:.1%})" if "task_pass_rate" in g else ""),
             f"safety-critical violations {g['safety_critical']}",
             f"review share {g['review_share']:.1%}"]
            + [f"{k} {rate_text(r)}" for k, r in (s.get("components") or {}).items()])


def _clusters_doc(clusters: list[dict[str, Any]], w: _Writer) -> None:
    for c in clusters:
        ex = c.get("example") or {}
        w.heading(3, f"{w.t(c['signature'])} ({c['count']} trace(s))")
        if ex.get("message"):
            w.para(w.msg(ex["message"]))
        w.para("Traces: " + ", ".join(w.t(t) for t in c["traces"][:20]))
        if c.get("slice"):
            w.pre([_event_line(e).strip() for e in c["slice"]])


def _caught_text(rep: dict[str, Any]) -> str:
    ef = rep.get("expected_failures") or {}
    caught, missed = len(ef.get("caught") or []), len(ef.get("missed") or [])
    if not caught and not missed:
        return "—"
    return f"{caught}/{caught + missed}"


def _tasks_doc(s: dict[str, Any], w: _Writer) -> None:
    """Every task of every scenario with more than one task or trial: its trials (✓ ✗ in
    trial order), how many passed and what that makes it."""
    tasks: dict[str, Any] = s.get("tasks") or {}
    shown = {k: ts for k, ts in sorted(tasks.items())
             if len(ts) > 1 or any(t.get("trials", 0) > 1 for t in ts.values())}
    if not shown:
        return
    w.heading(2, "Tasks and trials")
    w.para("A task passes when every trial passes; it is flaky when its trials disagree. "
           "A task expected to fail is caught when every trial fails.")
    for scen, ts in shown.items():
        w.heading(3, f"{w.t(scen)}: {len(ts)} task(s)")
        w.table(["task", "expected", "trials", "passed", "status"],
                [[w.t(tid), w.t(t.get("expect")), w.t(trial_marks(t)),
                  w.t(f"{t.get('passed')}/{t.get('trials')}"), w.t(t.get("status"))]
                 for tid, t in ts.items()])


def _repetitions_doc(s: dict[str, Any], w: _Writer) -> None:
    reps: dict[str, Any] = s.get("repetitions") or {}
    if not reps:
        return
    w.heading(2, "Repetitions and components")
    flaky = s.get("flaky") or []
    w.para(("Scenarios with a flaky task (its trials disagree): " if "tasks" in s else
            "Flaky (mixed pass/fail across repetitions): ")
           + (", ".join(w.t(x) for x in flaky) if flaky else "none") + ".")
    from judge.suite.components import COMPONENTS

    per_task = "tasks" in s
    w.table(["scenario", "trials passing" if per_task else "passing",
             "flaky tasks" if per_task else "flaky", "worst severity", *COMPONENTS],
            [[w.t(k), f"{r['passed']}/{r['total']}",
              (str(len(r.get("flaky_tasks") or [])) if per_task
               else "yes" if r.get("flaky") else "no"),
              w.t(r.get("worst_severity") or "none"),
              *[w.t(rate_text((r.get("components") or {}).get(c))) for c in COMPONENTS]]
             for k, r in sorted(reps.items())])


def _changes_doc(s: dict[str, Any], w: _Writer) -> None:
    ch = s.get("changes")
    if not ch:
        return
    w.heading(2, "Changes since the previous run")
    if not ch.get("previous_run"):
        w.para("No previous finished run of this suite to compare with.")
        return
    w.para(f"Compared with run {w.code(ch['previous_run'])}.")
    rows = [[label, ", ".join(w.t(x) for x in ch.get(key) or []) or "—"]
            for key, label in (("started_failing", "started failing"),
                               ("stopped_failing", "stopped failing"),
                               ("new_scenarios", "new scenarios"),
                               ("missing_scenarios", "no longer run"))]
    rows.append(["traces started failing", ", ".join(
        w.t(t["trace_id"]) for t in (ch.get("traces_started_failing") or [])[:50]) or "—"])
    rows.append(["new failure signatures", ", ".join(
        w.t(c["signature"]) for c in ch.get("new_signatures") or []) or "—"])
    rows.append(["flipped after a prompt/model change", ", ".join(
        w.t(x) for x in ch.get("flipped_after_prompt_or_model_change") or []) or "—"])
    w.table(["change", "what"], rows)
    flips = ch.get("verdict_flips") or []
    if flips:
        w.table(["item", "before", "after", "prompt version", "model"],
                [[w.t(f["item_id"]), w.t(f["before"]), w.t(f["after"]),
                  w.t(f"{f['prompt_version']['before']} → {f['prompt_version']['after']}"),
                  w.t(f"{f['model']['before']} → {f['model']['after']}")]
                 for f in flips[:100]])


def render_markdown(s: dict[str, Any]) -> str:
    w = _Markdown()
    _document(s, w)
    return "\n".join(w.out)


def render_html(s: dict[str, Any]) -> str:
    w = _Html()
    _document(s, w)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>judge run "
            f"{html_text(s['run_id'])}</title><style>body{{font-family:sans-serif;"
            "max-width:60em;margin:2em auto}td,th{border:1px solid #ccc;padding:2px 8px}"
            "table{border-collapse:collapse}pre{background:#f4f4f4;padding:8px;"
            "overflow-x:auto}</style></head><body>\n" + "\n".join(w.out)
            + "\n</body></html>")
