"""Agreement report as Markdown, JSON and CSV (long format: one row per number)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from judge.reports.model import METRICS, AgreementReport
from judge.safe_text import md_code, md_text


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_ci(ci: Any) -> str:
    if not ci:
        return "n/a"
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def to_json(report: AgreementReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GFM table; every cell is escaped (keys, groups and reasons come from label and
    verdict files): no cell can add a column, a line, a tag or a link."""
    out = ["| " + " | ".join(md_text(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    return [*out, ""]


def agreement_rows(report: AgreementReport) -> list[list[str]]:
    a = report.agreement
    ci = a.get("ci") or {}
    reasons = a.get("reasons") or {}
    return [
        [m, fmt(a.get(m)), fmt_ci(ci.get(m)), reasons.get(m, "") if a.get(m) is None else ""]
        for m in METRICS
        if m in a
    ]


def to_markdown(report: AgreementReport) -> str:
    a = report.agreement
    c = a.get("confusion") or {}
    lines = [f"# {md_text(report.title)}", "", f"Generated {report.generated_at}."]
    lines += [f"- {md_text(k)}: {md_code(v)}" for k, v in report.sources.items()] + [""]
    lines += [
        f"Items: {a.get('n_items')} scored and labelled; unscored {a.get('n_unscored')}, "
        f"tied {a.get('n_tied')}, unsure {a.get('n_unsure')}. Positive class: **fail**.", "",
        "## Agreement", "",
    ]
    lines += _table(["metric", "value", "95% CI", "note"], agreement_rows(report))
    lines += ["## Confusion matrix", ""]
    lines += _table(["", "judge fail", "judge pass"], [
        ["human fail", fmt(c.get("tp")), fmt(c.get("fn"))],
        ["human pass", fmt(c.get("fp")), fmt(c.get("tn"))],
    ])
    cpr = a.get("corrected_pass_rate")
    lines += ["## Corrected pass rate", ""]
    if cpr:
        lines += [f"{fmt(cpr.get('estimate'))} (95% CI {fmt_ci(cpr.get('ci'))}), observed "
                  f"judge pass rate {fmt(a.get('p_obs'))} over {a.get('n_judged')} verdicts.", ""]
    else:
        lines += [f"n/a: {md_text((a.get('reasons') or {}).get('corrected_pass_rate', ''))}",
                  ""]
    per_key = report.per_key()
    if per_key:
        lines += ["## Per ledger key", ""]
        lines += _table(
            ["key", "items", "accuracy", "95% CI", "tpr", "tnr", "same key", "same evidence"],
            [[r["key"], fmt(r["n_items"]), fmt(r["accuracy"]), fmt_ci(r["ci_accuracy"]),
              fmt(r["tpr"]), fmt(r["tnr"]), fmt(r["key_agreement"]),
              fmt(r["evidence_agreement"])] for r in per_key])
    for name in ("rubric", "candidate", "key_class", "sensitivity", "annotator", "juror"):
        rows = report.breakdown_rows(name)
        if len(rows) > 1:
            lines += [f"## By {name.replace('_', ' ')}", ""]
            lines += _table(["group", "items", "accuracy", "95% CI", "kappa", "tpr", "tnr"],
                            [[r["group"], fmt(r["n_items"]), fmt(r["accuracy"], 4),
                              fmt_ci(r["ci_accuracy"]), fmt(r["cohen_kappa"]), fmt(r["tpr"]),
                              fmt(r["tnr"])] for r in rows])
    hh = a.get("human_human")
    if hh:
        lines += ["## Human–human agreement", "",
                  f"{hh['n_items']} items, {hh['n_annotators']} annotators: percent agreement "
                  f"{fmt(hh.get('percent_agreement'))}, Cohen's kappa "
                  f"{fmt(hh.get('cohen_kappa'))}, Krippendorff's alpha "
                  f"{fmt(hh.get('krippendorff_alpha'))}.", ""]
    lines += calibration_markdown(report)
    lines += review_markdown(report)
    return "\n".join(lines).rstrip() + "\n"


def calibration_markdown(report: AgreementReport) -> list[str]:
    cal = report.calibration
    if not cal:
        return []
    lines = ["## Calibration", "",
             f"{cal['n']} labelled items with a confidence; agreement {fmt(cal['agreement'])}. "
             f"Raw confidence: ECE {fmt(cal['ece_raw'])}, Brier {fmt(cal['brier_raw'])}."]
    rec = cal.get("record")
    if rec:
        lines += [f"Calibration record: {md_text(rec['method'])}, prompt "
                  f"{md_text(rec['prompt_version'])}, model {md_text(rec['model'])}, threshold "
                  f"{fmt(rec['threshold'], 4)} for target {md_text(rec['target'])}, expected "
                  f"review share {fmt(rec['expected_review_share'])}. "
                  f"Calibrated here: ECE {fmt(cal['ece_calibrated'])}, Brier "
                  f"{fmt(cal['brier_calibrated'])} (in-sample if these labels fitted the "
                  f"record; its held-out ECE is {fmt(rec['held_out_ece'])})."]
    lines.append("")
    for kind in ("raw", "calibrated"):
        bins = cal.get(f"reliability_{kind}")
        if not bins:
            continue
        lines += [f"### Reliability ({kind} confidence)", ""]
        lines += _table(["bin", "items", "mean confidence", "agreement"],
                        [[f"{fmt(b['lo'], 1)}–{fmt(b['hi'], 1)}", str(b["count"]),
                          fmt(b["mean_prob"]), fmt(b["frac_agreed"])] for b in bins])
    lines += [f"### Coverage vs agreement (on {md_text(cal['coverage_on'])})", ""]
    points = cal["coverage"]
    step = max(1, len(points) // 10)
    shown = points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
    lines += _table(["threshold", "auto-accepted share", "items", "agreement"],
                    [[fmt(p["threshold"], 4), fmt(p["coverage"]), str(p["n_accepted"]),
                      fmt(p["agreement"])] for p in shown])
    return lines


def review_markdown(report: AgreementReport) -> list[str]:
    rv = report.review
    if not rv:
        return []
    rows = [[k, fmt(v)] for k, v in flatten(rv).items()]
    return ["## Review queue", "", *_table(["statistic", "value"], rows)]


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif not isinstance(v, list):
            out[name] = v
    return out


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_text(value: str) -> str:
    """A text cell a spreadsheet shows as text, on one row: control characters (a CR, which
    the writer would leave unquoted, breaks the row) are shown as escapes, and a cell that
    would start a formula (an annotator named `=HYPERLINK(...)`) gets a leading apostrophe,
    which spreadsheets hide."""
    from judge.safe_text import visible

    value = visible(value)
    return "'" + value if value.lstrip(" ").startswith(_FORMULA_START) else value


def to_csv(report: AgreementReport) -> str:
    """Columns: section, group, metric, value, ci_lo, ci_hi. Text cells from labels and
    traces (groups: keys, annotators, rubrics) cannot start a spreadsheet formula."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "group", "metric", "value", "ci_lo", "ci_hi"])
    a = report.agreement
    ci = a.get("ci") or {}

    def row(section: str, group: str, metric: str, value: Any, interval: Any = None) -> None:
        lo, hi = (interval or [None, None])[:2]
        w.writerow([csv_text(section), csv_text(group), csv_text(metric),
                    "" if value is None else value,
                    "" if lo is None else lo, "" if hi is None else hi])

    for key in ("n_items", "n_unscored", "n_tied", "n_unsure", *METRICS):
        if key in a:
            row("agreement", "all", key, a.get(key), ci.get(key))
    for key, value in (a.get("confusion") or {}).items():
        row("confusion", "all", key, value)
    cpr = a.get("corrected_pass_rate")
    if cpr:
        row("corrected_pass_rate", "all", "estimate", cpr.get("estimate"), cpr.get("ci"))
    for r in report.per_key():
        row("per_key", r["key"], "n_items", r["n_items"])
        row("per_key", r["key"], "accuracy", r["accuracy"], r["ci_accuracy"])
        for m in ("tpr", "tnr", "key_agreement", "evidence_agreement"):
            row("per_key", r["key"], m, r[m])
    for name in ("rubric", "candidate", "key_class", "sensitivity", "annotator", "juror"):
        for r in report.breakdown_rows(name):
            row(f"by_{name}", r["group"], "n_items", r["n_items"])
            row(f"by_{name}", r["group"], "accuracy", r["accuracy"], r["ci_accuracy"])
            for m in ("cohen_kappa", "tpr", "tnr"):
                row(f"by_{name}", r["group"], m, r[m])
    cal = report.calibration
    if cal:
        for kind in ("raw", "calibrated"):
            for b in cal.get(f"reliability_{kind}") or []:
                group = f"{b['lo']:.2f}-{b['hi']:.2f}"
                row(f"reliability_{kind}", group, "count", b["count"])
                row(f"reliability_{kind}", group, "mean_confidence", b["mean_prob"])
                row(f"reliability_{kind}", group, "agreement", b["frac_agreed"])
        for p in cal["coverage"]:
            group = repr(p["threshold"])
            row("coverage", group, "coverage", p["coverage"])
            row("coverage", group, "agreement", p["agreement"])
    for k, v in flatten(report.review or {}).items():
        row("review", "all", k, v)
    return buf.getvalue()
