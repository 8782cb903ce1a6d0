"""`judge report drift`: a suite's agreement, review share, pass rate and corrected pass rate
across its runs, as one self-contained HTML file (plots as base64 PNG, inline CSS, no scripts),
Markdown (a table, and the same plots as data-URI images) or JSON (DriftReport.to_dict).

Run ids and suite names come from the database: every one is escaped for where it lands
(judge.safe_text: html_text, md_text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from judge.calibration.drift import DriftReport, RunDrift
from judge.safe_text import html_text, json_safe, md_text

COLUMNS = ["run", "started", "verdicts", "audit labelled", "agreement", "95% CI", "baseline",
           "drop (95% CI)", "flag", "review share", "pass rate", "corrected pass rate"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"{ci[0]:.1%} to {ci[1]:.1%}"


def _row(r: RunDrift) -> list[str]:
    drop = "n/a" if r.drop is None else f"{r.drop:+.1%} ({_ci(r.drop_ci)})"
    corrected = _pct(r.corrected_pass_rate)
    if r.corrected_ci:
        corrected += f" ({_ci(r.corrected_ci)})"
    return [r.run_id, (r.started_at or "")[:19], str(r.n_verdicts),
            f"{r.audit_agreed}/{r.audit_labelled}", _pct(r.agreement), _ci(r.agreement_ci),
            _pct(r.baseline), drop, "DROP" if r.flagged else "", _pct(r.review_share),
            _pct(r.pass_rate), corrected]


def summary_lines(report: DriftReport) -> list[str]:
    """What the report says first: how many runs, which were flagged (plain text)."""
    n_est = sum(1 for r in report.runs if r.agreement is not None)
    out = [f"{len(report.runs)} runs of suite {report.suite}; {n_est} with labelled audit "
           f"items; baseline: the pooled {report.window} earlier runs with labelled audit "
           f"items; a drop is flagged when its {report.confidence:.0%} interval lies above 0."]
    for r in report.flagged:
        out.append(f"Run {r.run_id}: agreement {_pct(r.agreement)} against {_pct(r.baseline)} "
                   f"before (drop {_pct(r.drop)}, interval {_ci(r.drop_ci)}).")
    if not report.flagged:
        out.append("No run's agreement fell beyond the intervals.")
    return out


def _figures(report: DriftReport) -> list[tuple[str, str]]:
    """(title, base64 PNG) per plot, x = the runs in time order; none without runs.
    matplotlib loads only here: a JSON report starts without it."""
    if not report.runs:
        return []
    from matplotlib.figure import Figure

    from judge.reports.plots import _png

    runs = report.runs
    x = list(range(len(runs)))
    ticks = [(r.started_at or r.run_id)[:10] for r in runs]
    out: list[tuple[str, str]] = []

    def axes(title: str, ylabel: str) -> tuple[Figure, Any]:
        fig = Figure(figsize=(6.2, 3.4))
        ax = fig.add_subplot()
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.set_xticks(x, ticks, rotation=45, ha="right", fontsize=8)
        return fig, ax

    fig, ax = axes("Agreement with people (audit share)", "agreement")
    pts = [(i, r) for i, r in zip(x, runs, strict=True) if r.agreement is not None]
    for flagged, colour in ((False, "tab:blue"), (True, "tab:red")):
        sel = [(i, r) for i, r in pts if r.flagged is flagged]
        if not sel:
            continue
        ys = [r.agreement or 0.0 for _, r in sel]
        lo = [y - (r.agreement_ci or [y, y])[0] for y, (_, r) in zip(ys, sel, strict=True)]
        hi = [(r.agreement_ci or [y, y])[1] - y for y, (_, r) in zip(ys, sel, strict=True)]
        ax.errorbar([i for i, _ in sel], ys, yerr=[lo, hi], fmt="o", color=colour, capsize=3,
                    label="flagged drop" if flagged else f"{report.confidence:.0%} interval")
    base = [(i, r.baseline) for i, r in pts if r.baseline is not None]
    if base:
        ax.plot([i for i, _ in base], [b for _, b in base], linestyle="--", color="grey",
                label="baseline (earlier runs)")
    ax.set_ylim(0, 1.02)
    if pts:
        ax.legend(loc="lower left", fontsize=8)
    else:  # an empty legend is a matplotlib warning on stderr; say what is missing instead
        ax.text(0.5, 0.5, "no labelled audit items in these runs yet", ha="center",
                va="center", transform=ax.transAxes, color="grey")
    out.append(("agreement", _png(fig)))

    fig, ax = axes("Review share", "share sent to review")
    ax.plot(x, [r.review_share for r in runs], marker="o", color="tab:purple")
    ax.set_ylim(0, 1.02)
    out.append(("review share", _png(fig)))

    fig, ax = axes("Pass rate: observed and corrected", "pass rate")
    ax.plot(x, [r.pass_rate for r in runs], marker="o", color="tab:green",
            label="judge's observed pass rate")
    cor = [(i, r) for i, r in zip(x, runs, strict=True) if r.corrected_pass_rate is not None]
    if cor:
        ys = [r.corrected_pass_rate or 0.0 for _, r in cor]
        lo = [y - (r.corrected_ci or [y, y])[0] for y, (_, r) in zip(ys, cor, strict=True)]
        hi = [(r.corrected_ci or [y, y])[1] - y for y, (_, r) in zip(ys, cor, strict=True)]
        ax.errorbar([i for i, _ in cor], ys, yerr=[lo, hi], fmt="s", color="tab:orange",
                    capsize=3, label="corrected (95% interval)")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower left", fontsize=8)
    out.append(("pass rate", _png(fig)))
    return out


def to_json(report: DriftReport) -> str:
    return json_safe(json.dumps(report.to_dict(), indent=2)) + "\n"


def to_md(report: DriftReport) -> str:
    lines = [f"# Agreement drift: suite {md_text(report.suite)}", "",
             f"Generated {md_text(report.generated_at)}."]
    if report.manifest:
        lines.append(f"Manifest: {md_text(report.manifest)}.")
    lines += [""] + [md_text(x) for x in summary_lines(report)] + [""]
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "---|" * len(COLUMNS))
    lines += ["| " + " | ".join(md_text(c) for c in _row(r)) + " |" for r in report.runs]
    notes = [(r.run_id, r.note) for r in report.runs if r.note]
    if notes:
        lines += [""] + [f"- {md_text(rid)}: {md_text(note)}" for rid, note in notes]
    for title, png in _figures(report):
        lines += ["", f"![{md_text(title)}](data:image/png;base64,{png})"]
    return "\n".join(lines) + "\n"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;
max-width:1100px;color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3}
tr.flag td{background:#fde8e8}
.figs{display:flex;flex-wrap:wrap;gap:1rem}
.note{color:#666;font-size:.9em}
"""


def to_html(report: DriftReport) -> str:
    e = html_text
    parts = [f"<h1>Agreement drift: suite {e(report.suite)}</h1>",
             f"<p class=note>Generated {e(report.generated_at)}"
             + (f"; manifest <code>{e(report.manifest)}</code>" if report.manifest else "")
             + "</p>"]
    parts += [f"<p>{e(x)}</p>" for x in summary_lines(report)]
    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    body = "".join(
        f"<tr{' class=flag' if r.flagged else ''}>"
        + "".join(f"<td>{e(c)}</td>" for c in _row(r)) + "</tr>" for r in report.runs)
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    notes = [(r.run_id, r.note) for r in report.runs if r.note]
    if notes:
        parts.append("<ul class=note>" + "".join(f"<li>{e(rid)}: {e(n)}</li>"
                                               for rid, n in notes) + "</ul>")
    figs = _figures(report)
    if figs:
        parts.append('<div class="figs">' + "".join(
            f'<img alt="{e(t)}" src="data:image/png;base64,{png}">' for t, png in figs)
            + "</div>")
    return ("<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>Agreement drift: {e(report.suite)}</title><style>{CSS}</style></head>"
            "<body>" + "\n".join(parts) + "</body></html>\n")


RENDERERS: dict[str, Callable[[DriftReport], str]] = {"json": to_json, "md": to_md,
                                                       "html": to_html}


def render(report: DriftReport, fmt: str) -> str:
    return RENDERERS[fmt](report)
