"""The HTML reports in a real browser: Debian's chromium, headless, driven through
/usr/bin/chromedriver (given explicitly, so Selenium Manager never looks for or downloads a
driver or a browser). Each page must render without a console error, with every figure
decoded and the shared stylesheet applied, at 1280 px without sideways scrolling; hostile
trace text must show as text and stay inert (no script ran, no element or attribute came from
it). Skipped when chromium is missing, unless JUDGE_REQUIRE_BROWSER=1.

Why Selenium rather than `chromium --dump-dom`: the checks need the live page — the
browser's console log (CSP violations, undecodable images), computed styles, image decode
state, a click on a folded slice — which a DOM dump cannot give.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from judge.cli.main import app
from judge.reports.run import RunReport, to_html
from tests.hostile_text import HOSTILE

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"

#: would each leave a mark on `window` if any of it became live markup
PLANTED = ['<script>window.__pwned=1</script>', '<img src=x onerror="window.__pwned=2">',
           '"><svg onload="window.__pwned=3">', "'><body onload='window.__pwned=4'>",
           '</style><script>window.__pwned=5</script>', '</title><script>window.__pwned=6'
           '</script>', '<a href="javascript:window.__pwned=7">click</a>',
           '<iframe srcdoc="<script>parent.__pwned=8</script>"></iframe>',
           '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=9">',
           '{{ 7*7 }} {% raw %}', "<details open ontoggle=window.__pwned=10>"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        if os.environ.get("JUDGE_REQUIRE_BROWSER") == "1":
            pytest.fail("JUDGE_REQUIRE_BROWSER=1 but /usr/bin/chromium or /usr/bin/chromedriver "
                        "is missing (apt-get install chromium chromium-driver)")
        pytest.skip("chromium / chromium-driver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1280,1000",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)),
                              options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path, shot: Path) -> list[dict[str, Any]]:
    """Load `path`, save a full-width screenshot to `shot`; the console entries."""
    driver.get_log("browser")  # drop anything from before
    driver.get(path.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(int(height) + 120, 6000))
    driver.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    return list(driver.get_log("browser"))


CHECKS = """
const all = [...document.querySelectorAll('*')];
const imgs = [...document.images];
const style = (sel, prop) => { const e = document.querySelector(sel);
  return e ? getComputedStyle(e)[prop] : null; };
return {
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  scripts: document.scripts.length,
  live: all.filter(e => ['A','IFRAME','SVG','OBJECT','EMBED','LINK','FORM','BASE','svg']
                    .includes(e.tagName)).map(e => e.tagName),
  handlers: all.flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on'))
                                  .map(a => e.tagName + ' ' + a.name)),
  metas: [...document.querySelectorAll('meta')].map(m => m.httpEquiv).filter(x => x),
  images: imgs.map(i => ({ok: i.complete && i.naturalWidth > 0,
                          data: i.src.startsWith('data:image/png;base64,')})),
  text: document.body.innerText,
  title: document.title,
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  banner: style('.banner', 'backgroundColor'),
  masthead: style('.masthead', 'display'),
  judged: style('li.judged', 'backgroundColor'),
};
"""


def inert_and_rendered(driver: Any, log: list[dict[str, Any]]) -> dict[str, Any]:
    """The page checks every report must pass; the measured state for more."""
    got: dict[str, Any] = driver.execute_script(CHECKS)
    errors = [e for e in log if e.get("level") == "SEVERE"]
    assert errors == [], errors
    assert got["pwned"] is None and got["scripts"] == 0, got["pwned"]
    assert got["live"] == [] and got["handlers"] == [], (got["live"], got["handlers"])
    assert got["metas"] == ["Content-Security-Policy"]
    assert got["images"] and all(i["ok"] and i["data"] for i in got["images"]), got["images"]
    assert got["masthead"] == "flex"  # the shared stylesheet applied
    assert got["overflow"] <= 0, f"page wider than 1280 px by {got['overflow']} px"
    return got


def _judge(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout


def test_run_report_renders_in_chromium(browser: Any, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity", "summary_fidelity"],
        "scenarios": [{"scenario": str(REFUND), "traces": [str(REFUND / "*.json")],
                       "repetitions": 3}]}}}))
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    for _ in range(2):  # two runs: the changes section and the trend lines
        code, out = _judge("run", suite, "--allow-outside", "--format", "json", "--db", url)
        assert code == 1, out
    page = tmp_path / "run.html"
    assert _judge("report", "run", json.loads(out)["run_id"], "--format", "html", "--db",
                  url, "-o", page)[0] == 0
    got = inert_and_rendered(browser, open_page(browser, page, tmp_path / "run.png"))
    assert len(got["images"]) == 2  # the judge's share and the trend lines
    assert "Release gate: FAILED" in got["text"] and "Since the last run" in got["text"]
    assert got["banner"] == "rgb(255, 235, 233)"  # the failed banner's colour
    # the first cluster's slice is unfolded, its judged event marked; the next opens on a click
    assert got["judged"] == "rgb(255, 243, 176)"
    closed = browser.find_elements("css selector", "details:not([open]) > summary")
    if closed:
        closed[0].click()
        assert browser.execute_script(
            "return document.querySelectorAll('details[open]').length") >= 2


def _hostile_summary() -> dict[str, Any]:
    """A run summary with planted markup and the hostile-text corpus in every field a trace,
    a manifest or a check can reach."""
    bad = " ".join(PLANTED)
    every = " ".join(HOSTILE)
    scen = f"scenario {bad}"
    trace = f"{scen}/trace {every}"
    sig = f"checkpoint:{bad}@turn3:unsafe"
    return {
        "run_id": f"run {bad}", "suite": f"suite {bad}", "manifest": f"/m/{bad}.yaml",
        "judge": {"name": f"judge {bad}", "model": f"model {every}", "items": 4,
                  "auto_accepted": 1, "review": 1, "unscored": 1, "overruled": 1,
                  "provider_calls": 3, "cache_hits": 1},
        "gate": {"passed": False, "reasons": [f"reason {bad}", f"{every}"],
                 "scenario_pass_rate": 0.0, "mean_quality": 0.5, "safety_critical": 1,
                 "review_share": 0.25, "missing_repetitions": {scen: {"found": 1,
                                                                      "expected": 2}}},
        "release": {"max_safety_critical": 0, "min_scenario_pass_rate": 0.8,
                    "quality_floor": 0.7, "max_review_share": 0.5},
        "scenarios": {scen: {"passed": 1, "total": 2, "text": "1/2",
                             "worst_severity": f"unsafe {bad}"},
                      every: {"passed": 0, "total": 1, "text": "0/1"}},
        "clusters": [{"signature": sig, "check": "checkpoint", "key": bad, "turn": 3,
                      "consequence": f"unsafe {bad}", "count": 1, "traces": [trace],
                      "example": {"seq": 2, "message": f"message {bad} {every}"},
                      "slice": [{"seq": 1, "turn": 3, "kind": "user", "text": bad},
                                {"seq": 2, "turn": 3, "kind": "tool_call", "tool": bad,
                                 "args": {bad: every}},
                                {"kind": "elided", "text": bad},
                                {"seq": 3, "turn": 3, "kind": f"kind {bad}", "key": bad,
                                 "value": every}]}],
        "traces": [{"trace_id": trace, "scenario": scen, "passed": False,
                    "first_divergence": {"severity": f"costly {bad}"}}],
        "input_errors": [f"{bad} {every}"],
        "uncalibrated_note": f"note {bad}",
        "changes": {"started failing": [scen, every], f"key {bad}": [{bad: every}]},
    }


def test_hostile_trace_text_stays_inert_in_chromium(browser: Any, tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(to_html(RunReport(summary=_hostile_summary(),
                                      shares={"auto-accepted": 1, "review": 1,
                                              "overruled by veto": 1, "unscored": 1})),
                    encoding="utf-8")
    got = inert_and_rendered(browser, open_page(browser, page, tmp_path / "hostile.png"))
    # shown as the literal text it is, once made visible: in the title and in the body
    assert got["title"].startswith("judge run run <script>window.__pwned=1</script>")
    for planted in PLANTED:
        assert planted in got["text"], planted
    assert "{{ 7*7 }} {% raw %}" in got["text"]  # never a template of ours
    # control and format characters arrive as escapes, never raw
    assert "\\x1b[2J" in got["text"] and "\x1b" not in got["text"]
    assert "\\u202e" in got["text"] and "\u202e" not in got["text"]


def test_agreement_report_shares_the_page(browser: Any, tmp_path: Path) -> None:
    from judge.reports import report_from_files
    from judge.reports.html import to_html as agreement_html
    from tests.calibration_data import write_files

    labels, verdicts = write_files(tmp_path, n=200)
    page = tmp_path / "agreement.html"
    page.write_text(agreement_html(report_from_files(labels, verdicts, n_boot=50)),
                    encoding="utf-8")
    got = inert_and_rendered(browser, open_page(browser, page, tmp_path / "agreement.png"))
    assert len(got["images"]) == 3  # confusion matrix, reliability, coverage
    assert "agreement report" in got["text"]



def test_compare_page_renders_in_chromium(browser: Any, tmp_path: Path) -> None:
    """`judge compare --format html` on the tau-bench airline runs, two trials of each task
    against the other two: the shared page, its figure decoded, the 50 tasks paired, the
    changed tasks listed with their trials, and a folded detail that opens on a click."""
    from tests.conftest import TAU_BENCH

    tau = tmp_path / "tau.jsonl"
    assert _judge("import", "tau-bench", TAU_BENCH, "-o", tau)[0] == 0
    lines = tau.read_text(encoding="utf-8").splitlines()
    halves = {}
    for name, trials in (("baseline", (0, 1)), ("candidate", (2, 3))):
        halves[name] = tmp_path / f"{name}.jsonl"
        halves[name].write_text("".join(
            line + "\n" for line in lines if json.loads(line)["metadata"]["trial"] in trials),
            encoding="utf-8")
    page = tmp_path / "compare.html"
    code, _ = _judge("compare", halves["baseline"], halves["candidate"], "--scenario",
                     ROOT / "examples" / "scenarios" / "tau-airline", "--format", "html",
                     "-o", page)
    assert code == 0
    got = inert_and_rendered(browser, open_page(browser, page, tmp_path / "compare.png"))
    assert len(got["images"]) == 1
    assert "50 paired task(s)" in got["text"] and "Tasks that changed or fail" in got["text"]
    assert "pass rate (trials passed, mean over tasks)" in got["text"]
    assert "broken" in got["text"] and "fixed" in got["text"]
    assert got["banner"] == "rgb(218, 251, 225)"  # no --fail-on: the neutral (pass) banner
    closed = browser.find_elements("css selector", "details:not([open]) > summary")
    assert closed
    closed[0].click()
    assert browser.execute_script("return document.querySelectorAll('details[open]').length") >= 1
