"""The run report page (`judge report run RUN_ID --format html`): gate banner with each rule,
scenario bars, the judge's share with calibration states, clusters with their slices, and —
across two runs of one suite where a scenario starts failing — the changes and trend lines.
The store's `suite_runs` on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.reports.run import changes, failing_since, prompt_states, run_report, to_html
from judge.store import Store, open_store
from tests.calibration_data import MODEL, write_files

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "scenarios"
REFUND = SCEN / "refund-once"


class Page(HTMLParser):
    """The elements of a page, each with its attributes and its text (own and nested)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[list[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text: list[str] = []
        self.elements.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in ("img", "meta", "br", "input", "link"):
            self._open.append(text)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for t in self._open:
            t.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[tuple[dict[str, str], str]]:
        return [(a, "".join(t)) for g, a, t in self.elements
                if g == tag and (cls is None or cls in a.get("class", "").split())]


def write_suite(path: Path, traces: list[Path]) -> Path:
    path.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity", "summary_fidelity"],
        "scenarios": [{"scenario": str(REFUND), "traces": [str(t) for t in traces]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.5,
                    "quality_floor": 0.6}}}}))
    return path


def judge(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout


def run_and_report(suite: Path, url: str, out: Path) -> tuple[str, str]:
    code, stdout = judge("run", suite, "--allow-outside", "--format", "json", "--db", url)
    assert code in (0, 1), stdout
    run_id = json.loads(stdout)["run_id"]
    code, _ = judge("report", "run", run_id, "--format", "html", "--db", url, "-o", out)
    assert code == 0
    return run_id, out.read_text(encoding="utf-8")


def test_two_runs_where_a_scenario_starts_failing(store_url: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    write_suite(suite, [REFUND / "pass.json"])
    first_id, first = run_and_report(suite, store_url, tmp_path / "first.html")
    page = Page(first)
    # one run: a passing gate banner, each rule with threshold and measured value, no trend
    (banner, text), = page.find("section", "banner")
    assert "pass" in banner["class"].split() and "Release gate: PASSED" in text
    rules = [t for _a, t in page.find("tr")][1:6]
    assert "scenario pass rate" in rules[1] and "≥ 50%" in rules[1] and "100%" in rules[1]
    assert "mean quality" in rules[2] and "≥ 0.60" in rules[2]
    assert "Since the last run" not in first and not page.find("img", None)[1:]
    (bar, _), = page.find("span", "bar")
    assert bar["title"] == "1 of 1"

    # the manifest now adds a trace that fails: the scenario starts failing
    write_suite(suite, [REFUND / "pass.json", REFUND / "fail-second-refund.json"])
    second_id, second = run_and_report(suite, store_url, tmp_path / "second.html")
    page = Page(second)
    (banner, text), = page.find("section", "banner")
    assert "fail" in banner["class"].split() and "Release gate: FAILED" in text
    assert "broken" in text and "safety-critical violations" in text
    changed = " ".join(t for _a, t in page.find("li"))
    assert "started failing (1): refund-once" in changed
    assert re.search(r"new failure signatures \(\d+\): forbidden:refundOnce", changed)
    assert f"Compared with run {first_id}" in " ".join(t for _a, t in page.find("p", "note"))
    # scenario bar: the scenario's one task (its traces name none), failing; its two trials
    # disagree (1 of 2 passed): a flaky task; worst severity, failing since this run
    (bar, _), = page.find("span", "bar")
    assert bar["title"] == "0 of 1"
    row = next(t for _a, t in page.find("tr") if t.startswith("refund-once"))
    assert "1/2" in row and "1 flaky task(s)" in row
    assert "safety-critical" in row and "flaky" in row and f"for 1 run(s), since {second_id}" in row
    # the judge's share and each prompt version's calibration state
    imgs = [a for a, _t in page.find("img")]
    assert {a["alt"].split(":")[0] for a in imgs} == {"judge share", "trend lines"}
    assert all(a["src"].startswith("data:image/png;base64,") for a in imgs)
    rows = [t for _a, t in page.find("tr")]
    rubrics = [(i, t.split("v")[0]) for i, t in enumerate(rows)
               if t.startswith(("scope_fidelity", "summary_fidelity"))]
    assert rubrics  # refund-once has no summaries: scope_fidelity items only
    for i, rubric in rubrics:
        assert rows[i].endswith("none")
        assert "no calibration record" in rows[i + 1]
        assert rows[i + 1].endswith(f"judge calibrate fit --rubric {rubric}")
    # the failure cluster: signature, traces, first seq, its slice with the judged event
    cluster = next(t for _a, t in page.find("tr") if t.startswith("forbidden:refundOnce"))
    assert "refund-once/fail-second-refund" in cluster
    (_judged, judged_text), = page.find("li", "judged")
    seq = re.search(r"forbidden:refundOnce\S*\s+unsafe\s*1\s*(\d+)", cluster)
    assert seq is not None and judged_text.startswith(f"seq {seq.group(1)} ")
    assert len(page.find("details")) >= 1

    # a third run with nothing changed says so, and the failing streak grows
    _third_id, third = run_and_report(suite, store_url, tmp_path / "third.html")
    assert "Nothing changed" in third
    assert f"for 2 run(s), since {second_id}" in third


def test_run_report_trend_agreement_from_labels(store: Store, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite.yaml",
                        [REFUND / "pass.json", REFUND / "fail-second-refund.json"])
    ids = [json.loads(judge("run", suite, "--allow-outside", "--format", "json", "--db",
                            store.url)[1])["run_id"]
           for _ in range(2)]
    verdicts = [v for v in store.run_verdicts(ids[1]) if v.label != "unscored"]
    assert len(verdicts) >= 2
    # one label agrees with the judge, one disagrees: agreement 50% on both runs
    store.add_labels([
        HumanLabel(item_id=verdicts[0].item_id, label=verdicts[0].label,
                   violated_key=verdicts[0].violated_key, annotator="asha"),
        HumanLabel(item_id=verdicts[1].item_id, annotator="asha",
                   label="pass" if verdicts[1].label == "fail" else "fail",
                   violated_key=None if verdicts[1].label == "fail" else "refundOnce")])
    summary = store.get_run(ids[1])["summary"]  # type: ignore[index]
    report = run_report(store, ids[1], summary)
    assert [p.run_id for p in report.history] == ids
    got = store.run_verdicts_of(ids[0], [verdicts[1].item_id, verdicts[0].item_id, "x#1:y"])
    assert sorted(v.item_id for v in got) == sorted([verdicts[0].item_id, verdicts[1].item_id])
    assert [(p.agreement, p.n_labelled) for p in report.history] == [(0.5, 2), (0.5, 2)]
    assert report.previous_id == ids[0]
    html = to_html(report)
    assert "trend lines" in html and len(html) < 400_000


def test_prompt_states_calibrated_stale_none(store: Store, tmp_path: Path) -> None:
    from judge.calibration.from_files import calibrate_files

    labels, verdicts = write_files(tmp_path, n=300)
    (record,) = calibrate_files(labels, verdicts)
    store.save_calibration(record)

    def verdict(phash: str) -> Verdict:
        return Verdict(item_id="t1/run-1#3:scope_fidelity", label="pass", confidence=0.9,
                       rubric="scope_fidelity", prompt_version="v2", prompt_hash=phash,
                       model=MODEL, route="review", route_reason="low confidence")

    (calibrated,) = prompt_states(store, [verdict("sha256:abc")])
    assert calibrated.state == "calibrated" and calibrated.shares == {"review": 1}
    (none,) = prompt_states(store, [verdict("sha256:other")])
    assert none.state == "none" and none.command == "judge calibrate fit --rubric " \
        "scope_fidelity" and "30 more fail and 30 more pass" in none.next_step
    # labels grew by more than 20% since the record: stale, refit
    grown = int(record.n_labelled * 1.3) + 1
    store.add_labels([HumanLabel(item_id=f"g{i}/run-1#3:scope_fidelity", label="pass",
                                 annotator="asha") for i in range(grown)])
    (stale,) = prompt_states(store, [verdict("sha256:abc")])
    assert stale.state == "stale" and "labels grew" in stale.why


def _summary(scen: dict[str, tuple[int, int]], sigs: list[str]) -> dict[str, Any]:
    return {"scenarios": {k: {"passed": p, "total": t} for k, (p, t) in scen.items()},
            "clusters": [{"signature": s, "count": 1} for s in sigs]}


def test_changes_and_failing_streaks_from_summaries() -> None:
    from judge.reports.run import RunReport

    old = _summary({"a": (2, 2), "b": (0, 1), "c": (1, 1)}, ["x", "y"])
    new = _summary({"a": (1, 2), "b": (1, 1), "c": (1, 1), "d": (0, 1)}, ["x", "z"])
    got = changes(RunReport(summary=new, previous=old))
    assert got == {"started failing": ["a"], "stopped failing": ["b"], "new scenarios": ["d"],
                   "new failure signatures": ["z (1 trace(s))"], "signatures gone": ["y"]}
    assert changes(RunReport(summary=new)) is None
    # a summary that carries its own `changes` (judge.suite.changes) is shown from them
    own = {**new, "changes": {
        "previous_run": "run-1", "started_failing": ["a"], "stopped_failing": [],
        "still_failing": ["b"], "new_scenarios": [], "missing_scenarios": ["e"],
        "traces_started_failing": [{"trace_id": "a/2", "scenario": "a"}],
        "traces_stopped_failing": [], "new_signatures": [
            {"signature": "z", "count": 2, "traces": ["a/2", "a/3"]}],
        "resolved_signatures": ["y"],
        "judge_changed": {"prompt_versions": {"scope_fidelity": {"before": ["v1"],
                                                                 "after": ["v2"]}},
                          "models": None},
        "verdict_flips": [{"item_id": "a/2#4:scope_fidelity", "before": "pass",
                           "after": "fail", "prompt_changed": True}],
        "flipped_after_prompt_or_model_change": ["a"]}}
    got = changes(RunReport(summary=own, previous=old))
    assert got is not None and {k: v for k, v in got.items() if v} == {
        "started failing": ["a"], "scenarios no longer run": ["e"],
        "traces started failing": ["a/2"], "new failure signatures": ["z (2 trace(s))"],
        "signatures gone": ["y"], "judge changed": ["prompt scope_fidelity: v1 → v2"],
        "flipped after a prompt or model change": ["a"],
        "verdicts flipped": ["a/2#4:scope_fidelity: pass → fail (prompt or model changed)"]}
    first = {**new, "changes": {"previous_run": None, "started_failing": []}}
    assert changes(RunReport(summary=first, previous=None)) is None
    runs = [_summary({"a": (0, 1)}, []), _summary({"a": (1, 1)}, []),
            _summary({"a": (0, 1), "b": (0, 1)}, []), _summary({"a": (0, 2), "b": (0, 1)}, [])]
    assert failing_since(runs, ["r1", "r2", "r3", "r4"]) == {"a": ("r3", 2), "b": ("r3", 2)}


def test_suite_runs_newest_first_by_suite_and_manifest(store: Store) -> None:
    from sqlalchemy import update

    from judge.store.repo import T_RUN

    base = datetime(2026, 11, 1, tzinfo=UTC)
    for i, (suite, manifest, status) in enumerate([
            ("nightly", "/a.yaml", "finished"), ("nightly", "/b.yaml", "finished"),
            ("nightly", "/a.yaml", "interrupted"), ("pr", "/a.yaml", "finished"),
            ("nightly", "/a.yaml", "finished"), ("nightly", "/a.yaml", "finished")]):
        rid = store.save_run(f"r{i}", suite=suite, config={"manifest": manifest})
        store.finish_run(rid, status=status, summary={"i": i})
        with store.engine.begin() as conn:  # distinct, known start times
            conn.execute(update(T_RUN).where(T_RUN.c.run_id == rid)
                         .values(started_at=base + timedelta(hours=i)))
    assert [r["run_id"] for r in store.suite_runs("nightly")] == ["r5", "r4", "r1", "r0"]
    assert [r["run_id"] for r in store.suite_runs("nightly", manifest="/a.yaml")] == \
        ["r5", "r4", "r0"]
    got = store.suite_runs("nightly", manifest="/a.yaml", before="r5", limit=1)
    assert [(r["run_id"], r["summary"]) for r in got] == [("r4", {"i": 4})]
    assert got[0]["started_at"] == base + timedelta(hours=4)
    assert store.suite_runs("nightly", before="r0") == []
    assert store.suite_runs("none") == []


def test_nightly_example_page_is_small_and_self_contained(tmp_path: Path) -> None:
    """The nightly suite over the examples and 200 tau-bench trajectories, run twice (so the
    page has its trend lines): one file under 2 MB that loads nothing from anywhere."""
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    suite = ROOT / "examples" / "nightly.yaml"
    for _ in range(2):
        code, stdout = judge("run", suite, "--suite", "nightly", "--format", "json",
                             "--db", url)
        assert code == 1, stdout
    run_id = json.loads(stdout)["run_id"]
    out = tmp_path / "nightly.html"
    assert judge("report", "run", run_id, "--format", "html", "--db", url, "-o", out)[0] == 0
    size = out.stat().st_size
    html = out.read_text(encoding="utf-8")
    assert size < 2_000_000, size
    assert "trend lines" in html and "judge share" in html and "tau-airline" in html
    # check messages quote names as Markdown code spans: on the page they are <code>
    assert "`" not in html and "<code>book_reservation</code>" in html
    assert not re.search(r"(?i)(src|href)=\"(?!data:image/png;base64,)", html)
    assert not re.search(r"(?i)<(script|link|iframe|object|embed|a)\b", html)
    (csp,) = [a["content"] for a, _t in Page(html).find("meta")
              if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp.startswith("default-src 'none'; img-src data:;")
    with open_store(url) as store:
        assert len(store.suite_runs("nightly")) == 2


def _tags(html: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The page's elements and attribute names, in order (what markup it has, not text)."""
    return [(tag, tuple(sorted((k, "") for k in attrs))) for tag, attrs, _t in
            Page(html).elements]


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=40))
@example("`x` and `<b>y</b>`")
def test_any_trace_text_leaves_the_page_markup_unchanged(text: str) -> None:
    """Whatever text a trace puts in a scenario name, trace id, signature, message or slice,
    the page has exactly the elements and attributes it has for plain text: content never
    becomes markup (and shows up, made visible, as the page's text)."""
    from judge.reports.run import RunReport
    from judge.safe_text import CODE_SPAN, visible

    def page(x: str) -> str:
        summary = {
            "run_id": f"run {x}", "suite": x, "manifest": x,
            "judge": {"name": x, "model": x, "items": 0, "auto_accepted": 0, "review": 0,
                      "unscored": 0, "overruled": 0, "provider_calls": 0, "cache_hits": 0},
            "gate": {"passed": False, "reasons": [x], "scenario_pass_rate": 0.5,
                     "mean_quality": 0.5, "safety_critical": 0, "review_share": 0.0,
                     "missing_repetitions": {}},
            "scenarios": {f"s {x}": {"passed": 1, "total": 2}},
            "clusters": [{"signature": x, "consequence": "unsafe", "count": 1,
                          "traces": [x], "example": {"seq": 1, "message": x},
                          "slice": [{"seq": 1, "turn": 1, "kind": "user", "text": x},
                                    {"seq": 2, "turn": 1, "kind": "tool_call", "tool": x,
                                     "args": {"k": x}}]}],
            "traces": [{"trace_id": x, "scenario": f"s {x}", "passed": False}],
            "input_errors": [x], "uncalibrated_note": x}
        return to_html(RunReport(summary=summary))

    hostile, plain = page(text), page("plain")
    # the same markup, but for the <code> elements a message's code spans (`name`) become
    spans = len(CODE_SPAN.findall(visible(text)))
    tags = [t for t in _tags(hostile) if t != ("code", ())]
    assert tags == [t for t in _tags(plain) if t != ("code", ())]
    extra = len(_tags(hostile)) - len(_tags(plain))
    assert (extra == 0) if not spans else (0 < extra <= 4 * spans)
    body = next("".join(t) for tag, _a, t in Page(hostile).elements if tag == "body")
    assert visible(text).strip() in body
