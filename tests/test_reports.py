"""Agreement reports render in every format; HTML is self-contained with embedded plots."""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from calibration_data import synth, write_files, write_jsonl
from typer.testing import CliRunner

from judge.cli.main import app
from judge.reports import build_report, report_from_files, to_csv, to_html, to_json, to_markdown
from judge.stats import compute_agreement

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    labels, verdicts = write_files(tmp_path, 300)
    cal = tmp_path / "calibration"
    assert run("calibrate", "files", "--labels", str(labels), "--verdicts", str(verdicts),
               "-o", str(cal))[0] == 0
    return labels, verdicts, cal


def test_report_from_files_holds_agreement_calibration_and_curves(files) -> None:
    labels, verdicts, cal = files
    report = report_from_files(labels, verdicts, calibration_root=cal, n_boot=200)
    a = report.agreement
    conf = a["confusion"]
    assert conf["tp"] + conf["fp"] + conf["fn"] + conf["tn"] == a["n_items"] == 300
    c = report.calibration
    assert c is not None and c["record"] is not None and c["coverage_on"].startswith("calib")
    cover = c["coverage"]
    assert cover[0]["coverage"] == 1.0
    assert cover[0]["agreement"] == pytest.approx(a["accuracy"])  # all accepted = accuracy
    assert all(x["coverage"] >= y["coverage"] for x, y in itertools.pairwise(cover))
    assert sum(b["count"] for b in c["reliability_raw"]) == 300
    assert {r["key"] for r in report.per_key()} >= {"refundOnce", "budget", "allowList"}
    # without the records folder the curves fall back to raw confidence
    raw = report_from_files(labels, verdicts, n_boot=50)
    assert raw.calibration is not None and raw.calibration["record"] is None
    assert raw.calibration["coverage_on"] == "raw confidence"


def test_every_format_renders(files, tmp_path: Path) -> None:
    labels, verdicts, cal = files
    report = report_from_files(labels, verdicts, calibration_root=cal, n_boot=200)
    md = to_markdown(report)
    for heading in ("## Agreement", "## Confusion matrix", "## Per ledger key",
                    "## Calibration", "Coverage vs agreement", "Reliability"):
        assert heading in md
    acc = report.agreement["accuracy"]
    assert f"| accuracy | {acc:.3f} |" in md
    doc = json.loads(to_json(report))
    assert doc["agreement"]["accuracy"] == acc and doc["calibration"]["threshold"] is not None
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert rows[0].keys() == {"section", "group", "metric", "value", "ci_lo", "ci_hi"}
    acc_row = next(r for r in rows if r["section"] == "agreement" and r["metric"] == "accuracy")
    assert float(acc_row["value"]) == pytest.approx(acc)
    lo, hi = report.agreement["ci"]["accuracy"]
    assert float(acc_row["ci_lo"]) == pytest.approx(lo) and float(acc_row["ci_hi"]) == hi
    assert {r["section"] for r in rows} >= {"confusion", "per_key", "reliability_raw",
                                           "reliability_calibrated", "coverage"}


def test_html_is_self_contained_with_embedded_pngs(files) -> None:
    labels, verdicts, cal = files
    html = to_html(report_from_files(labels, verdicts, calibration_root=cal, n_boot=100))
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3  # confusion, reliability, coverage
    for b64 in images:
        assert base64.b64decode(b64).startswith(PNG_MAGIC)
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)
    assert not re.search(r"https?:|//[a-z0-9]|url\(", text, re.IGNORECASE)
    assert "<script" not in html and "<link" not in html
    assert re.findall(r'src="([^"]*)"', html) and all(
        s.startswith("data:image/png;base64,") for s in re.findall(r'src="([^"]*)"', html))
    assert "<h2>Per ledger key</h2>" in html and "Coverage" not in html.split("<h2>")[0]


def test_review_queue_statistics_from_routes(tmp_path: Path) -> None:
    labels, verdicts = synth(120)
    for i, v in enumerate(verdicts):
        v["route"] = "review" if i % 4 == 0 else "auto_accept"
        v["route_reason"] = "low confidence" if i % 4 == 0 else None
    lp = write_jsonl(tmp_path / "l.jsonl", labels)
    vp = write_jsonl(tmp_path / "v.jsonl", verdicts)
    report = report_from_files(lp, vp, n_boot=50)
    assert report.review == {"n_routed": 120, "by_route": {"auto_accept": 90, "review": 30},
                             "review_reasons": {"low confidence": 30}, "review_share": 0.25,
                             "expected_review_share": None}
    assert "## Review queue" in to_markdown(report) and "<h2>Review queue</h2>" in to_html(report)


def test_degenerate_report_renders_without_nan() -> None:
    # one item, one class, no confidences: every format still renders, JSON has no NaN
    agreement = compute_agreement(["pass"], ["pass"], judge_all=["pass"], n_boot=20)
    report = build_report(agreement, review={"queued": 0, "claimed": 0})
    assert "n/a" in to_markdown(report)
    text = to_json(report)
    assert "NaN" not in text and json.loads(text)["calibration"] is None
    assert to_csv(report).startswith("section,")
    assert "No confidences" in to_html(report)
    curves = build_report(agreement, confidence=np.array([0.9]), agreed=np.array([1.0]))
    assert curves.calibration is not None and curves.calibration["coverage"][0]["coverage"] == 1


@pytest.mark.parametrize("fmt", ["md", "json", "csv", "html"])
def test_cli_writes_each_format(files, tmp_path: Path, fmt: str) -> None:
    labels, verdicts, cal = files
    out = tmp_path / f"report.{fmt}"
    code, _, err = run("report", "agreement", "--labels", str(labels), "--verdicts",
                       str(verdicts), "--format", fmt, "-o", str(out), "--calibration", str(cal),
                       "--n-boot", "100")
    assert code == 0, err
    assert out.stat().st_size > 200


def test_cli_bad_input_one_line(tmp_path: Path) -> None:
    labels, verdicts = synth(50)
    verdicts.append(dict(verdicts[0]))
    lp = write_jsonl(tmp_path / "l.jsonl", labels)
    vp = write_jsonl(tmp_path / "v.jsonl", verdicts)
    code, _out, err = run("report", "agreement", "--labels", str(lp), "--verdicts", str(vp))
    assert code == 2 and "duplicate" in err and len(err.strip().splitlines()) == 1
    code, _, err = run("report", "agreement", "--labels", str(lp))
    assert code == 2


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)",
                                  "\t=1", " =1", "\r=1"])
def test_csv_cells_from_labels_never_start_a_formula(tmp_path: Path, name: str) -> None:
    """An annotator name (from a labels file: hostile) reaches the CSV's group column; a
    spreadsheet must show it as text, not evaluate it."""
    labels, verdicts = write_files(tmp_path, 40)
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    labels.write_text("".join(json.dumps({**r, "annotator": name}) + "\n" for r in rows))
    report = report_from_files(labels, verdicts, n_boot=20)
    text = to_csv(report)
    groups = [r["group"] for r in csv.DictReader(io.StringIO(text, newline=""))
              if r["section"] == "by_annotator"]
    from judge.reports.text import csv_text
    from judge.safe_text import visible
    assert groups and all(g == csv_text(name) for g in groups)
    assert all(not g.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r")) or
               (g.startswith("'") and g[1:] == visible(name)) for g in groups)
    assert all("\r" not in g and "\t" not in g for g in groups)  # one row, one cell
    assert csv_text("order-17") == "order-17" and csv_text("0.10-0.20") == "0.10-0.20"
