"""Render a run summary (the dict `judge.suite.run.summarize` returns) as text, md or html."""

from __future__ import annotations

import html
import json
from typing import Any


def _event_line(e: dict[str, Any], width: int = 110) -> str:
    kind = e.get("kind", "?")
    if kind == "elided":
        return f"    {e.get('text', '…')}"
    body: Any
    if kind in ("user", "assistant", "summary"):
        body = e.get("text", "")
    elif kind == "tool_call":
        body = f"{e.get('tool')}({json.dumps(e.get('args', {}), sort_keys=True)})"
    elif kind == "tool_result":
        body = f"{e.get('tool')} → " + (f"ERROR {e['error']}" if e.get("error")
                                        else json.dumps(e.get("result")))
    else:
        body = f"{e.get('key')} = {json.dumps(e.get('value'))}"
    text = " ".join(str(body).split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"    seq {e.get('seq')} turn {e.get('turn')} {kind}: {text}"


def judge_line(s: dict[str, Any]) -> str:
    j = s["judge"]
    return (f"judge {j['name']}: {j['items']} item(s) — {j['auto_accepted']} auto-accepted, "
            f"{j['review']} sent to review, {j['unscored']} unscored, {j['overruled']} "
            f"overruled by deterministic vetoes; {j['provider_calls']} provider call(s), "
            f"{j['cache_hits']} from cache")


def render_text(s: dict[str, Any], max_clusters: int = 8) -> str:
    lines = [f"suite {s['suite']} — run {s['run_id']}"]
    lines.append("scenarios (passing repetitions):")
    width = max((len(k) for k in s["scenarios"]), default=10)
    for name, sc in sorted(s["scenarios"].items()):
        mark = "ok " if sc["passed"] == sc["total"] else "FAIL"
        lines.append(f"  {mark} {name.ljust(width)}  {sc['text']}")
    clusters = s["clusters"]
    if clusters:
        lines.append(f"failures, clustered by first divergence ({len(clusters)} signature(s)):")
        for c in clusters[:max_clusters]:
            ex = c.get("example") or {}
            lines.append(f"  [{c['count']}×] {c['signature']}")
            if ex.get("message"):
                lines.append(f"    {ex['message']}")
            shown = ", ".join(c["traces"][:4]) + (" …" if c["count"] > 4 else "")
            lines.append(f"    traces: {shown}")
            if c.get("slice"):
                lines.append("    slice from the last passing checkpoint to the divergence:")
                lines.extend("  " + _event_line(e) for e in c["slice"])
        if len(clusters) > max_clusters:
            lines.append(f"  … {len(clusters) - max_clusters} more signature(s) (--format json)")
    lines.append(judge_line(s))
    if s.get("uncalibrated_note"):
        lines.append(f"note: {s['uncalibrated_note']}")
    for err in s.get("input_errors", [])[:10]:
        lines.append(f"input error: {err}")
    g = s["gate"]
    lines.append(f"quality {g['mean_quality']:.2f}, scenario pass rate "
                 f"{g['scenario_pass_rate']:.0%}, safety-critical violations "
                 f"{g['safety_critical']}, review share {g['review_share']:.0%}")
    if g["passed"]:
        lines.append("release gate: PASSED")
    else:
        lines.append("release gate: FAILED — " + "; ".join(g["reasons"]))
    return "\n".join(lines)


def render_markdown(s: dict[str, Any]) -> str:
    g = s["gate"]
    out = [f"# Run {s['run_id']} — suite `{s['suite']}`", "",
           f"**Release gate: {'PASSED' if g['passed'] else 'FAILED'}**", ""]
    out += [f"- {r}" for r in g["reasons"]]
    out += ["", judge_line(s)[0].upper() + judge_line(s)[1:], ""]
    if s.get("uncalibrated_note"):
        out += [f"> {s['uncalibrated_note']}", ""]
    out += ["## Scenarios", "", "| scenario | passing repetitions |", "|---|---|"]
    out += [f"| {k} | {v['text']} |" for k, v in sorted(s["scenarios"].items())]
    out += ["", "## Failures by signature", ""]
    if not s["clusters"]:
        out.append("No failures.")
    for c in s["clusters"]:
        ex = c.get("example") or {}
        out += [f"### {c['signature']} ({c['count']} trace(s))", "",
                ex.get("message", ""), "", "Traces: " + ", ".join(c["traces"][:20]), ""]
        if c.get("slice"):
            out += ["```"] + [_event_line(e).strip() for e in c["slice"]] + ["```", ""]
    out += ["## Totals", "", f"- mean quality {g['mean_quality']:.3f}",
            f"- scenario pass rate {g['scenario_pass_rate']:.1%}",
            f"- safety-critical violations {g['safety_critical']}",
            f"- review share {g['review_share']:.1%}", ""]
    return "\n".join(out)


def render_html(s: dict[str, Any]) -> str:
    md = render_markdown(s)
    body = []
    in_code = False
    for line in md.splitlines():
        if line.startswith("```"):
            body.append("</pre>" if in_code else "<pre>")
            in_code = not in_code
            continue
        esc = html.escape(line)
        if in_code:
            body.append(esc)
        elif line.startswith("### "):
            body.append(f"<h3>{esc[4:]}</h3>")
        elif line.startswith("## "):
            body.append(f"<h2>{esc[3:]}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{esc[2:]}</h1>")
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set("".join(cells)) <= {"-"}:
                continue
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        elif line.startswith("- "):
            body.append(f"<li>{esc[2:]}</li>")
        elif line:
            body.append(f"<p>{esc}</p>")
    doc = "\n".join(body).replace("</tr>\n<tr>", "</tr><tr>")
    doc = doc.replace("<tr>", "<table><tr>", 1) if "<tr>" in doc else doc
    doc = doc.replace("</td></tr>\n<h2>", "</td></tr></table>\n<h2>", 1)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>judge run "
            f"{html.escape(s['run_id'])}</title><style>body{{font-family:sans-serif;"
            "max-width:60em;margin:2em auto}}td{border:1px solid #ccc;padding:2px 8px}"
            "table{border-collapse:collapse}pre{background:#f4f4f4;padding:8px;"
            f"overflow-x:auto}}</style></head><body>{doc}</body></html>")
