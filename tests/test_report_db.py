"""`judge report agreement --rubric R` from the database: stored verdicts and labels, the
calibration record, routing and live review-queue statistics, in every format."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from db_calibration_data import RUBRIC, airline_items, human, judge_answer, seed_database
from typer.testing import CliRunner

from judge.calibration.lookup import find_calibration
from judge.calibration.regrade import calibrate_rubric
from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.pipeline.route import route_and_save
from judge.prompts import load_prompt
from judge.providers.scripted import ScriptedProvider
from judge.reports import report_from_store
from judge.routing import RoutingPolicy
from judge.settings import Settings
from judge.store import open_store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _verdicts(model: str = "scripted") -> list[Verdict]:
    prompt = load_prompt(RUBRIC)
    return [Verdict(item_id=it.item_id, rubric=RUBRIC, prompt_version=prompt.version,
                    prompt_hash=prompt.hash, model=model,
                    **judge_answer(it)) for it in airline_items()]  # type: ignore[arg-type]


@pytest.fixture()
def routed(store_url: str) -> tuple[str, list[Verdict]]:
    """Calibrated from the labels, then a routed run of the same judge on every item
    (SQLite and a throwaway PostgreSQL server, see conftest_store)."""
    url = store_url
    seed_database(url)
    from db_calibration_data import scripted_judge

    with open_store(url) as store:
        calibrate_rubric(store, RUBRIC, ScriptedProvider(default=scripted_judge(),
                                                         spec="scripted"), Settings.load())
        out = route_and_save(store, _verdicts(), "run-nightly", policy=RoutingPolicy(
            audit_share=0.1, double_share=0.0))
    return url, out


def test_report_holds_agreement_record_routing_and_queue(routed) -> None:  # type: ignore[no-untyped-def]
    url, verdicts = routed
    items = airline_items()
    with open_store(url) as store:
        report = report_from_store(store, RUBRIC, n_boot=100)
        record = find_calibration(store, RUBRIC, load_prompt(RUBRIC).hash, "scripted")
    a = report.agreement
    truth = {it.item_id: human(it) for it in items}
    assert a["n_items"] == len(items)
    assert a["accuracy"] == pytest.approx(np.mean([truth[v.item_id] == v.label
                                                   for v in verdicts]))
    cal = report.calibration
    assert cal is not None and cal["record"] is not None
    assert cal["record"]["threshold"] == record.threshold and cal["coverage_on"].startswith("cal")
    review = report.review
    assert review is not None
    n_review = sum(v.route == "review" for v in verdicts)
    assert review["n_routed"] == len(items)
    assert review["by_route"] == {"auto_accept": len(items) - n_review, "review": n_review}
    assert review["expected_review_share"] == record.expected_review_share
    assert 0 < n_review < len(items) and "audit" in review["review_reasons"]
    q = review["queue"]
    assert q["total"] == n_review == q["by_state"]["open"] and q["by_state"]["done"] == 0
    assert sum(q["pending_by_reason"].values()) == n_review
    assert report.sources["database"] == store.where


def test_queue_statistics_are_live(routed) -> None:  # type: ignore[no-untyped-def]
    url, verdicts = routed
    queued = [v.item_id for v in verdicts if v.route == "review"]
    with open_store(url) as store:
        store.add_labels([HumanLabel(item_id=i, label="pass", annotator="ben")
                          for i in queued[:5]])
        claimed = store.queue.claim("carol")
        q = report_from_store(store, RUBRIC, n_boot=50).review["queue"]  # type: ignore[index]
    assert claimed is not None
    assert q["by_state"] == {"open": len(queued) - 6, "claimed": 1, "done": 5}
    assert sum(q["pending_by_reason"].values()) == len(queued) - 5


def test_prompt_version_and_model_filters(routed) -> None:  # type: ignore[no-untyped-def]
    url, _ = routed
    with open_store(url) as store:
        store.save_verdicts(_verdicts(model="heuristic")[:50], "run-other")
        only = report_from_store(store, RUBRIC, model="heuristic", n_boot=50)
        both = report_from_store(store, RUBRIC, n_boot=50)
    assert only.agreement["n_items"] == 50 and only.calibration is not None
    assert only.calibration["record"] is None  # no record for that model
    # newest verdict per item mixes two models: no single record applies
    assert both.agreement["n_items"] == len(airline_items())
    assert both.calibration is not None and both.calibration["record"] is None


def test_cli_every_format(routed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, _ = routed
    base = ("report", "agreement", "--rubric", RUBRIC, "--db", url, "--n-boot", "50")
    code, out, err = run(*base, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["agreement"]["n_items"] == len(airline_items())
    assert doc["calibration"]["record"]["model"] == "scripted"
    assert doc["review"]["queue"]["total"] > 0
    code, md, _ = run(*base, "--format", "md")
    assert code == 0 and "## Review queue" in md and "queue.by_state.open" in md
    code, text, _ = run(*base, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert code == 0 and any(r["metric"] == "queue.total" for r in rows)
    html_path = tmp_path / "out" / "report.html"
    code, _, err = run(*base, "--format", "html", "-o", str(html_path))
    assert code == 2 and "does not exist" in err  # -o makes no directories (judge.outputs)
    html_path.parent.mkdir()
    code, _, err = run(*base, "--format", "html", "-o", str(html_path),
                       "--prompt-version", load_prompt(RUBRIC).version, "--model", "scripted")
    assert code == 0, err
    html = html_path.read_text()
    assert "http://" not in html and "https://" not in html  # readable offline
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) >= 2 and all(base64.b64decode(i).startswith(PNG_MAGIC) for i in images)


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    seed_database(url, n_labelled=10)
    code, out, err = run("report", "agreement", "--rubric", RUBRIC, "--db", url)
    assert code == 2 and out == "" and "no stored verdicts" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run("report", "agreement", "--labels", "x.jsonl", "--verdicts", "y.jsonl",
                       "--db", url)
    assert code == 2 and "database mode" in err
    code, _, err = run("report", "agreement")
    assert code == 2 and "--rubric" in err
