"""Agreement report as ONE self-contained HTML file: inline CSS, plots as base64 PNG, no
scripts and no external URLs, so it reads offline. Every value from labels, verdicts or
records is escaped (`judge.safe_text.html_text`: control characters shown, then HTML).
The page shell and stylesheet are the ones every report shares (judge.reports.page)."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from judge.reports.model import AgreementReport
from judge.reports.page import render
from judge.reports.text import agreement_rows, flatten, fmt, fmt_ci
from judge.safe_text import html_text as escape  # visible, then HTML-escaped


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{b64}">'


def to_html(report: AgreementReport) -> str:
    # matplotlib loads only for HTML: md, json and csv reports start without it
    from judge.reports.plots import confusion_png

    a = report.agreement
    c = a.get("confusion") or {}
    parts: list[str] = [f"<h1>{escape(report.title)}</h1>",
                        f"<p class=note>Generated {escape(report.generated_at)}</p>"]
    if report.sources:
        parts.append("<ul>" + "".join(f"<li>{escape(k)}: <code>{escape(v)}</code></li>"
                                      for k, v in report.sources.items()) + "</ul>")
    parts.append(
        f"<p>Items: {a.get('n_items')} scored and labelled; unscored {a.get('n_unscored')}, "
        f"tied {a.get('n_tied')}, unsure {a.get('n_unsure')}. Positive class: <b>fail</b>.</p>")
    parts += ["<h2>Agreement</h2>",
              _table(["metric", "value", "95% CI", "note"], agreement_rows(report))]
    cpr = a.get("corrected_pass_rate")
    if cpr:
        parts.append(f"<p>Corrected pass rate {fmt(cpr.get('estimate'))} "
                     f"(95% CI {fmt_ci(cpr.get('ci'))}); observed {fmt(a.get('p_obs'))} over "
                     f"{a.get('n_judged')} verdicts.</p>")
    else:
        why = (a.get("reasons") or {}).get("corrected_pass_rate", "")
        parts.append(f"<p>Corrected pass rate: n/a ({escape(why)})</p>")
    parts += ["<h2>Confusion matrix</h2>", '<div class="figs">',
              _table(["", "judge fail", "judge pass"],
                     [["human fail", fmt(c.get("tp")), fmt(c.get("fn"))],
                      ["human pass", fmt(c.get("fp")), fmt(c.get("tn"))]]),
              _img(confusion_png(c), "confusion matrix"), "</div>"]
    per_key = report.per_key()
    if per_key:
        parts += ["<h2>Per ledger key</h2>", _table(
            ["key", "items", "accuracy", "95% CI", "tpr", "tnr", "same key", "same evidence"],
            [[r["key"], fmt(r["n_items"]), fmt(r["accuracy"]), fmt_ci(r["ci_accuracy"]),
              fmt(r["tpr"]), fmt(r["tnr"]), fmt(r["key_agreement"]),
              fmt(r["evidence_agreement"])] for r in per_key])]
    for name in ("rubric", "candidate", "key_class", "sensitivity", "annotator", "juror"):
        rows = report.breakdown_rows(name)
        if len(rows) > 1:
            parts += [f"<h2>By {escape(name.replace('_', ' '))}</h2>", _table(
                ["group", "items", "accuracy", "95% CI", "kappa", "tpr", "tnr"],
                [[r["group"], fmt(r["n_items"]), fmt(r["accuracy"], 4), fmt_ci(r["ci_accuracy"]),
                  fmt(r["cohen_kappa"]), fmt(r["tpr"]), fmt(r["tnr"])] for r in rows])]
    hh = a.get("human_human")
    if hh:
        parts.append(f"<h2>Human–human agreement</h2><p>{hh['n_items']} items, "
                     f"{hh['n_annotators']} annotators: percent agreement "
                     f"{fmt(hh.get('percent_agreement'))}, Cohen's kappa "
                     f"{fmt(hh.get('cohen_kappa'))}, Krippendorff's alpha "
                     f"{fmt(hh.get('krippendorff_alpha'))}.</p>")
    parts += _calibration(report.calibration)
    if report.review:
        parts += ["<h2>Review queue</h2>", _table(
            ["statistic", "value"], [[k, fmt(v)] for k, v in flatten(report.review).items()])]
    # every part above is built from escaped values: it is markup, not content
    return render("page.html.j2", title=report.title, kind="agreement report",
                  generated_at=None, body=Markup("\n".join(parts)))


def _calibration(cal: dict[str, Any] | None) -> list[str]:
    from judge.reports.plots import coverage_png, reliability_png

    if not cal:
        return ["<h2>Calibration</h2><p>No confidences on labelled items.</p>"]
    rec = cal.get("record")
    text = (f"{cal['n']} labelled items with a confidence; agreement {fmt(cal['agreement'])}. "
            f"Raw confidence: ECE {fmt(cal['ece_raw'])}, Brier {fmt(cal['brier_raw'])}.")
    if rec:
        text += (f" Calibration record: {rec['method']}, prompt "  # escaped once, below
                 f"{rec['prompt_version']}, model {rec['model']}, "
                 f"threshold {fmt(rec['threshold'], 4)} for target {rec['target']}, expected "
                 f"review share {fmt(rec['expected_review_share'])}; calibrated here: ECE "
                 f"{fmt(cal['ece_calibrated'])}, Brier {fmt(cal['brier_calibrated'])} "
                 f"(in-sample if these labels fitted the record; its held-out ECE is "
                 f"{fmt(rec['held_out_ece'])}).")
    else:
        text += " No calibration record for these verdicts: curves use raw confidence."
    target = rec["target"] if rec else None
    return ["<h2>Calibration</h2>", f"<p>{escape(text)}</p>", '<div class="figs">',
            _img(reliability_png(cal), "reliability diagram"),
            _img(coverage_png(cal, target), "coverage versus agreement"), "</div>"]
