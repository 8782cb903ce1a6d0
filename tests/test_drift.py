"""Agreement drift: Newcombe's interval against the published example, a simulation with known
truth (a known drop is flagged; noise inside the intervals is not, false-flag rate measured),
the report from the store (SQLite and PostgreSQL) in every format, and the release gate's
`max_agreement_drop` through `judge run`."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.calibration.drift import drift_from_store
from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.reports.drift import render
from judge.routing import AUDIT
from judge.stats.drift import drift_points, newcombe_difference
from judge.store import Store, open_store
from judge.suite.gate import AgreementDrop, JudgeContribution, TraceOutcome, evaluate_gate
from judge.suite.manifest import ReleaseRules

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "scenarios"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()[:10]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# -- statistics ------------------------------------------------------------------------------
def test_newcombe_matches_the_published_example() -> None:
    # Newcombe (1998), Stat Med 17:873, table II example (56/70 vs 48/80), method 10
    d, lo, hi = newcombe_difference(56, 70, 48, 80)
    assert d == pytest.approx(0.2)
    assert lo == pytest.approx(0.0524, abs=5e-4) and hi == pytest.approx(0.3339, abs=5e-4)


def test_drift_points_pool_the_window_and_skip_unlabelled_runs() -> None:
    pts = drift_points([45, 0, 46, 30], [50, 0, 50, 50], window=2)
    assert pts[0].baseline is None and pts[0].drop is None and not pts[0].flagged
    assert pts[1].agreement is None and pts[1].baseline == pytest.approx(0.9)
    assert pts[2].baseline_n == 50  # the unlabelled run is not part of any baseline
    assert pts[3].baseline_k == 91 and pts[3].baseline_n == 100
    assert pts[3].drop == pytest.approx(0.91 - 0.6)
    assert pts[3].flagged and pts[3].drop_ci is not None and pts[3].drop_ci[0] > 0


def _simulate(rng: np.random.Generator, p_before: float, p_last: float, n: int,
              runs: int = 8) -> bool:
    k = [*rng.binomial(n, p_before, size=runs - 1).tolist(), int(rng.binomial(n, p_last))]
    return drift_points(k, [n] * runs)[-1].flagged


def test_simulation_flags_a_known_drop_and_rarely_flags_noise() -> None:
    """Nights of 60 labelled audit items at 90% agreement. Same agreement on the last night:
    the false-flag rate is about the interval's one-sided 2.5% (measured, bounded at 5%). A
    drop to 70%: flagged in >= 90% of the sequences."""
    rng = np.random.default_rng(14)
    false_flags = np.mean([_simulate(rng, 0.9, 0.9, 60) for _ in range(2000)])
    assert false_flags <= 0.05, false_flags
    power = np.mean([_simulate(rng, 0.9, 0.7, 60) for _ in range(500)])
    assert power >= 0.9, power
    small = np.mean([_simulate(rng, 0.9, 0.87, 60) for _ in range(500)])
    assert small < 0.2, small  # 3 points is inside the noise of 60 items


def test_gate_rule_fails_only_a_flagged_drop_above_the_limit() -> None:
    outcome = [TraceOutcome("t", "s", eligible=True, quality=1.0, safety_critical_failures=0)]
    rules = ReleaseRules(max_agreement_drop=0.05)
    big = AgreementDrop("run-3", 0.6, 0.9, 0.3, (0.15, 0.45), flagged=True)
    gate = evaluate_gate(outcome, JudgeContribution(), rules, agreement_drop=big)
    assert not gate.passed and "max_agreement_drop" in gate.reasons[0]
    assert "run-3" in gate.reasons[0]
    noise = AgreementDrop("run-3", 0.85, 0.9, 0.05, (-0.05, 0.16), flagged=False)
    assert evaluate_gate(outcome, JudgeContribution(), rules, agreement_drop=noise).passed
    small = AgreementDrop("run-3", 0.87, 0.9, 0.03, (0.01, 0.05), flagged=True)
    assert evaluate_gate(outcome, JudgeContribution(), rules, agreement_drop=small).passed
    # no rule in the manifest: the drop is reported, never gated
    assert evaluate_gate(outcome, JudgeContribution(), ReleaseRules(),
                         agreement_drop=big).passed


# -- the store, the report and the gate ------------------------------------------------------
def store_run(store: Store, run_id: str, agree: list[bool], *, suite: str = "nightly",
              manifest: Path | None = None, prefix: str = "", extra_review: int = 2) -> None:
    """A finished run whose audit share is `agree` (one labelled item each; the judge said
    pass, the person agreed or not) plus `extra_review` unlabelled low-confidence verdicts."""
    config = {"manifest": str(manifest.resolve())} if manifest else {}
    store.save_run(run_id, suite=suite, config=config)
    verdicts, labels = [], []
    for i, ok in enumerate(agree):
        item = f"{prefix}{run_id}/t{i}#1:scope_fidelity"
        verdicts.append(Verdict(item_id=item, label="pass", confidence=0.97, route="review",
                                route_reason=AUDIT, rubric="scope_fidelity"))
        labels.append(HumanLabel(item_id=item, label="pass" if ok else "fail",
                                 violated_key=None if ok else "k", annotator="asha"))
    for i in range(extra_review):
        verdicts.append(Verdict(item_id=f"{prefix}{run_id}/u{i}#1:scope_fidelity",
                                label="fail", violated_key="k", confidence=0.5,
                                route="review", route_reason="low confidence"))
    store.save_verdicts(verdicts, run_id)
    store.add_labels(labels)
    store.finish_run(run_id)


def _history(store: Store, last_agree: int, **kw: object) -> None:
    for night in range(4):
        store_run(store, f"run-{night}", [j >= 3 for j in range(60)], **kw)  # type: ignore
    store_run(store, "run-4", [j < last_agree for j in range(60)], **kw)  # type: ignore


def test_drift_report_from_the_store_flags_the_drop(store_url: str, tmp_path: Path) -> None:
    with open_store(store_url) as store:
        _history(store, last_agree=36)  # 57/60 each night, then 36/60
        store_run(store, "other-suite", [True] * 5, suite="pull_request")
        report = drift_from_store(store, "nightly", n_boot=200)
    assert [r.run_id for r in report.runs] == [f"run-{i}" for i in range(5)]
    last = report.runs[-1]
    assert last.audit_labelled == 60 and last.audit_agreed == 36
    assert last.baseline == pytest.approx(0.95) and last.flagged
    assert [r.run_id for r in report.flagged] == ["run-4"]
    assert last.review_share == 1.0 and last.pass_rate == pytest.approx(60 / 62)
    assert last.n_labelled == 60

    doc = json.loads(render(report, "json"))
    assert doc["runs"][-1]["flagged"] is True and doc["suite"] == "nightly"
    md = render(report, "md")
    assert "| run-4 |" in md and "DROP" in md and "data:image/png;base64," + PNG in md
    html = render(report, "html")
    assert html.count("data:image/png;base64," + PNG) == 3
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")

    out = tmp_path / "drift.html"
    code, _, err = run("report", "drift", "--suite", "nightly", "--db", store_url,
                       "-o", str(out))
    assert code == 0, err
    assert out.read_text().startswith("<!doctype html>")
    code, _, err = run("report", "drift", "--suite", "nope", "--db", store_url)
    assert code == 2 and "no finished run of suite 'nope'" in err


def test_noise_inside_the_intervals_is_not_flagged(store_url: str) -> None:
    with open_store(store_url) as store:
        _history(store, last_agree=55)  # 57/60, then 55/60
        report = drift_from_store(store, "nightly", n_boot=0)
    assert not report.flagged and report.runs[-1].drop == pytest.approx(0.95 - 55 / 60)


def test_hostile_run_ids_are_escaped(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store:
        store_run(store, "<script>alert(1)</script>\x1b[31m|x", [True, False])
        report = drift_from_store(store, "nightly", n_boot=0)
    html, md = render(report, "html"), render(report, "md")
    assert "<script>" not in html and "\x1b" not in html and "\x1b" not in md
    assert "<script>" not in md


def _suite(tmp_path: Path, max_drop: float | None) -> Path:
    release: dict[str, object] = {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}
    if max_drop is not None:
        release["max_agreement_drop"] = max_drop
    doc = {"suites": {"nightly": {"rubrics": ["scope_fidelity"], "release": release,
                                  "scenarios": [{"scenario": str(SCEN / "refund-once"),
                                                 "traces": [str(SCEN / "refund-once/pass.json")]}
                                                ]}}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(("last_agree", "max_drop", "code"),
                         [(36, 0.05, 1), (55, 0.05, 0), (36, None, 0), (36, 0.5, 0)])
def test_judge_run_fails_its_gate_on_a_drop(tmp_path: Path, last_agree: int,
                                            max_drop: float | None, code: int) -> None:
    suite = _suite(tmp_path, max_drop)
    url = f"sqlite:///{tmp_path / 'j.db'}"
    with open_store(url) as store:
        _history(store, last_agree=last_agree, manifest=suite)
        store_run(store, "elsewhere", [False] * 60, manifest=tmp_path / "other.yaml")
    got, out, err = run("run", str(suite), "--allow-outside", "--format", "json", "--db", url)
    assert got == code, out + err
    gate = json.loads(out)["gate"]
    assert gate["passed"] is (code == 0)
    if max_drop is not None:  # the drop is measured whenever the rule is set
        assert gate["agreement_drop"]["run_id"] == "run-4"
        assert gate["agreement_drop"]["flagged"] is (last_agree == 36)
    if code == 1:
        assert any("max_agreement_drop" in r for r in gate["reasons"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), min_size=1, max_size=12),
       st.integers(1, 6))
def test_drift_points_properties(counts: list[tuple[int, int]], window: int) -> None:
    n = [max(a, b) for a, b in counts]
    k = [min(a, b) for a, b in counts]
    pts = drift_points(k, n, window=window)
    assert len(pts) == len(k)
    for p, ki, ni in zip(pts, k, n, strict=True):
        if ni == 0:
            assert p.agreement is None and not p.flagged
            continue
        assert p.ci is not None and 0.0 <= p.ci[0] <= ki / ni <= p.ci[1] <= 1.0
        if p.flagged:  # a flag is a drop whose whole interval lies above 0
            assert p.drop is not None and p.drop_ci is not None
            assert p.drop > 0 and p.drop_ci[0] > 0
        if p.drop_ci is not None:
            assert -1.0 <= p.drop_ci[0] <= p.drop <= p.drop_ci[1] <= 1.0


def test_runs_without_labelled_audit_items_plot_without_a_warning(tmp_path: Path) -> None:
    """Issue 21: `report drift` over runs with no labelled audit item printed matplotlib's
    "No artists with labels found to put in legend" on stderr; the plot now says what is
    missing instead, and nothing is written to stderr."""
    import warnings

    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store:
        for night in range(2):
            store_run(store, f"run-{night}", [])  # only unlabelled verdicts
        report = drift_from_store(store, "nightly", n_boot=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        html = render(report, "html")
    assert "data:image/png;base64," in html
