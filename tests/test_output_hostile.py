"""The hostile-text corpus (tests/hostile_text.py) through every output path, as a user runs
it: real `judge` processes, output captured as bytes, rich forced to style as on a terminal
(FORCE_COLOR) so its own escape sequences are there to be told apart from the content's.

Planted in: trace ids (so item ids), user/assistant/tool text, a tool result, the scenario's
goal, a ledger note and a rule message, the judge's rationales, annotator names, notes, label
and verdict files (keys, models, prompt versions), a prompt file. Every output must hold:
no raw control, C1 or hidden-format character; rich markup printed as itself; Markdown that
renders no link, image, heading, raw HTML or extra table cell from content; HTML with no tag
from content.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from tests.calibration_data import synth
from tests.hostile_text import CORPUS, HOSTILE, raw_controls

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
JUDGE = [sys.executable, "-m", "judge.cli.main"]
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # rich's own styling: the only escape it may emit
MARKUP = CORPUS["rich_markup"][0]  # "[bold red]APPROVED BY SECURITY[/bold red]"
ALL = " ".join(HOSTILE)
ARGV = ALL.replace("\x00", "")  # a command-line argument cannot hold NUL

#: output path -> class -> (tried, held)
TALLY: dict[str, Counter[str]] = {}


@dataclass
class Out:
    code: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return (self.stdout + self.stderr).decode("utf-8", "replace")


def judge(*args: str | Path, env: dict[str, str], stdin: str | None = None) -> Out:
    proc = subprocess.run([*JUDGE, *map(str, args)], env=env, capture_output=True,
                          input=None if stdin is None else stdin.encode(), timeout=120,
                          check=False)
    return Out(proc.returncode, proc.stdout, proc.stderr)


def held(path: str, out: Out, *, markup_shown: bool = True, markdown: bool = False) -> None:
    """Assert `out` carries nothing live and count it for every class of the corpus
    (Markdown output escapes rich markup too: `markdown_held` checks it)."""
    data = out.stdout + out.stderr
    assert b"Traceback" not in data, out.text
    bare = SGR.sub(b"", data)
    tally = TALLY.setdefault(path, Counter())
    leaks = raw_controls(bare)
    assert b"\x1b" not in bare and leaks == [], (path, leaks[:5], out.text[-2000:])
    for cls in ("csi", "osc", "c0_c1", "bidi", "zero_width", "line_breaks"):
        tally[f"{cls} tried"] += len(CORPUS[cls])
        tally[f"{cls} held"] += len(CORPUS[cls])
    text = bare.decode("utf-8")
    if markdown:
        return
    # markup as itself: every "APPROVED BY SECURITY" still has its opening tag before it
    # (a cell may cut what follows short, with "…")
    approved = text.count("APPROVED BY SECURITY")
    assert text.count("[bold red]APPROVED BY SECURITY") == approved, (path, [
        text[max(0, m.start() - 60):m.end() + 20]
        for m in re.finditer("APPROVED BY SECURITY", text)])
    if markup_shown:
        assert approved >= 1, (path, text[-3000:])
    tally["rich_markup tried"] += len(CORPUS["rich_markup"])
    tally["rich_markup held"] += len(CORPUS["rich_markup"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A scenario, traces, a judge, labels and a prompt full of hostile text; the grade."""
    tmp = tmp_path_factory.mktemp("hostile")
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "2000", "TERM": "xterm-256color",
           "JUDGE_DATABASE_URL": f"sqlite:///{tmp / 'judge.db'}",
           "JUDGE_CALIBRATION_DIR": str(tmp / "calibration")}
    env.pop("NO_COLOR", None)
    scen_dir = tmp / "scenario"
    shutil.copytree(REFUND, scen_dir)
    scen = yaml.safe_load((scen_dir / "scenario.yaml").read_text())
    scen["goal"] = f"Refund order-17 once. {MARKUP} {ALL}"
    scen["ledger"][-1]["note"] = f"note {MARKUP} {ALL}"
    scen["rules"]["forbidden"][0]["message"] = f"a second refund {MARKUP} {ALL}"
    (scen_dir / "scenario.yaml").write_text(yaml.safe_dump(scen, allow_unicode=False))
    traces = []
    for name, tid in (("fail-second-refund", "refund-once/\x1b[2J<script>|[bold]x[/bold]"),
                      ("pass", "refund-once/\u202epass\x1b]52;c;aGk=\x07")):
        trace = json.loads((REFUND / f"{name}.json").read_text())
        trace["trace_id"] = tid
        for ev in trace["events"]:
            if ev["kind"] in ("user", "assistant"):
                ev["text"] += f" {MARKUP} {ALL}"
            if ev["kind"] == "tool_result" and isinstance(ev.get("result"), dict):
                ev["result"]["note"] = f"{MARKUP} {ALL}"
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(trace))
        traces.append(path)
    replies = tmp / "replies.jsonl"
    reply = {"label": "pass", "violated_key": None, "evidence_event": None, "confidence": 0.9,
             "rationale": f"{MARKUP} {ALL}"}
    replies.write_text("\n".join(json.dumps(reply) for _ in range(60)) + "\n")
    prompts = tmp / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    # the latest version: the one `prompts show` and grading use
    p = max((prompts / "scope_fidelity").glob("v*.md"), key=lambda f: int(f.stem[1:]))
    described = json.dumps(f"{MARKUP} \x1b[2J \u202e")  # a YAML double-quoted string
    p.write_text(re.sub(r"(?m)^description: .*$", lambda _: f"description: {described}",
                        p.read_text(), count=1) + f"\n{MARKUP}\n{ALL}\n")
    grade = judge("grade", scen_dir, *traces, "--model", f"scripted:{replies}",
                  "--rubric", "scope_fidelity", "-o", tmp / "verdicts.jsonl", env=env)
    assert grade.code in (0, 1), grade.text
    return {"tmp": tmp, "env": env, "scenario": scen_dir, "traces": traces,
            "replies": replies, "prompts": prompts, "grade": grade}


def test_grade_text_output(world: dict[str, Any]) -> None:
    out = world["grade"]
    assert "overruled" in out.text  # the vetoed trace's verdicts are listed with rationales
    held("grade (text)", out)
    assert all(len(line) < 4000 for line in out.text.splitlines())  # one line per verdict


def test_review_commands(world: dict[str, Any]) -> None:
    env = world["env"]
    held("review list", judge("review", "list", "--state", "all", env=env), markup_shown=False)
    held("review stats", judge("review", "stats", env=env), markup_shown=False)
    who = f"mallory {MARKUP} \x1b]52;c;aGk=\x07"
    nxt = judge("review", "next", "--annotator", who, env=env)
    assert nxt.code == 0
    held("review next", nxt)
    claimed = judge("review", "list", "--state", "claimed", env=env)
    held("review list (claimed by a hostile name)", claimed)
    assert judge("review", "release", "--expired", env=env).code == 0
    item = nxt.stdout.split(b"\t")[0].decode()
    assert judge("review", "release", item.encode().decode("unicode_escape"),
                 env=env).code in (0, 1, 2)


def test_label_views_blind_and_revealed(world: dict[str, Any]) -> None:
    env = world["env"]
    blind = judge("label", "--annotator", "asha", env=env, stdin="q\n")  # look, give back
    assert blind.code == 0, blind.text
    assert "fake judge" not in blind.text and "judge (revealed)" not in blind.text
    held("label (interactive, blind)", blind)
    shown = judge("label", "--annotator", "bo", "--show-judge", env=env,
                  stdin="f\n1\n\n" + f"{ALL}\n".replace("\n", " ") + "\nq\n")
    assert shown.code == 0, shown.text
    held("label (interactive, --show-judge)", shown)


def test_label_scripted_and_labels_files(world: dict[str, Any]) -> None:
    env, tmp = world["env"], world["tmp"]
    lines = (tmp / "verdicts.jsonl").read_text().split("\n")
    verdicts = [json.loads(line) for line in lines if line]
    assert len(lines) - 1 == len((tmp / "verdicts.jsonl").read_text().splitlines())
    item = next(v["item_id"] for v in verdicts if "\x1b[2J" in v["item_id"])
    one = judge("label", "--item", item, "--label", "pass", "--annotator",
                f"eve {MARKUP}\x1b[2J", "--note", ARGV, env=env)
    assert one.code == 0, one.text
    held("label --item (non-interactive)", one)
    bad = judge("label", "--item", item, "--label", "fail", "--key", f"{MARKUP}\x1b]52;c;x\x07",
                "--annotator", "eve", env=env)
    assert bad.code == 2 and bad.stderr.count(b"\n") == 1
    held("label error naming a hostile key", bad)
    export = judge("labels", "export", "-o", tmp / "labels.jsonl", env=env)
    assert export.code == 0, export.text
    held("labels export", export, markup_shown=False)


def _labels_and_verdicts(tmp: Path) -> tuple[Path, Path]:
    labels, verdicts = synth(80, n_fail=36, model=f"model {MARKUP} \x1b[2J",
                             prompt_version="v2\u202e")
    for i, (lb, v) in enumerate(zip(labels, verdicts, strict=True)):
        if i % 4 == 0:
            hostile = f"t{i}/{HOSTILE[i % len(HOSTILE)]}#3:scope_fidelity"
            lb["item_id"] = v["item_id"] = hostile
        lb["annotator"] = ["asha", f"mallory {MARKUP}", "<img src=x onerror=alert(1)>|x"][i % 3]
        if lb["violated_key"]:
            lb["violated_key"] = v["violated_key"] = [MARKUP, "key|with|pipes",
                                                      "[x](javascript:alert(1))"][i % 3]
    lp, vp = tmp / "syn-labels.jsonl", tmp / "syn-verdicts.jsonl"
    lp.write_text("".join(json.dumps(x) + "\n" for x in labels))
    vp.write_text("".join(json.dumps(x) + "\n" for x in verdicts))
    return lp, vp


def test_agreement_and_calibrate_text(world: dict[str, Any]) -> None:
    env, tmp = world["env"], world["tmp"]
    lp, vp = _labels_and_verdicts(tmp)
    text = judge("agreement", "--labels", lp, "--verdicts", vp, "--format", "text",
                 "--n-boot", "20", "--breakdown-n-boot", "5", env=env)
    assert text.code == 0, text.text
    held("agreement (text)", text)
    doc = judge("agreement", "--labels", lp, "--verdicts", vp, "--n-boot", "20",
                "--breakdown-n-boot", "5", env=env)
    assert doc.code == 0 and json.loads(doc.stdout)["n_items"] > 0
    held("agreement (json)", doc, markup_shown=False)
    cal = judge("calibrate", "files", "--labels", lp, "--verdicts", vp, "--format", "text",
                "--min-per-class", "5", env=env)
    assert cal.code == 0, cal.text
    held("calibrate files (text)", cal)
    cal_json = judge("calibrate", "files", "--labels", lp, "--verdicts", vp,
                     "--min-per-class", "5", env=env)
    assert cal_json.code == 0 and json.loads(cal_json.stdout)["model"].startswith("model [")
    held("calibrate files (json)", cal_json, markup_shown=False)
    flipped = [json.loads(line) for line in vp.read_text().splitlines()]
    for v in flipped[::3]:
        v["label"] = "pass" if v["label"] == "fail" else "fail"
        v["violated_key"] = v["evidence_event"] = None
        if v["label"] == "fail":
            v["violated_key"], v["evidence_event"] = MARKUP, 3
    new = tmp / "syn-verdicts-new.jsonl"
    new.write_text("".join(json.dumps(x) + "\n" for x in flipped))
    cmp = judge("calibrate", "compare", vp, new, "--labels", lp, "--format", "text", env=env)
    assert cmp.code == 0 and b"flipped" in cmp.stdout, cmp.text
    held("calibrate compare (text)", cmp)


MD = MarkdownIt("gfm-like", {"typographer": False})
LIVE_HTML = re.compile(r"<(script|img|iframe|a|h[1-6]|svg|object|embed|style|link)\b", re.I)


def markdown_held(path: str, md: str, headings: int) -> None:
    html = MD.render(md)
    tags = Counter(m.group(1).lower() for m in LIVE_HTML.finditer(html))
    heading_tags = sum(n for t, n in tags.items() if t.startswith("h"))
    assert heading_tags == headings, (path, tags)  # ours only
    assert not {t for t in tags if not t.startswith("h")}, (path, tags)
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        widths = {len(re.findall(r"<t[dh]>", row)) for row in re.findall(r"<tr>.*?</tr>",
                                                                          table, re.S)}
        assert len(widths) == 1, (path, table[:2000])
    tally = TALLY.setdefault(path, Counter())
    for cls in ("markdown", "html", "table"):
        tally[f"{cls} tried"] += len(CORPUS[cls])
        tally[f"{cls} held"] += len(CORPUS[cls])


def html_held(path: str, html: str) -> None:
    tags = Counter(m.group(1).lower() for m in LIVE_HTML.finditer(html))
    assert not {"script", "iframe", "a", "svg", "object", "embed", "link"} & set(tags), tags
    assert all(src.startswith("data:image/png") for src in re.findall(r'src="([^"]*)"', html))
    assert "onerror" not in re.sub(r"&lt;img src=x onerror=alert\(1\)&gt;", "", html)
    tally = TALLY.setdefault(path, Counter())
    for cls in ("markdown", "html", "table"):
        tally[f"{cls} tried"] += len(CORPUS[cls])
        tally[f"{cls} held"] += len(CORPUS[cls])


def test_report_agreement_markdown_and_html(world: dict[str, Any]) -> None:
    env, tmp = world["env"], world["tmp"]
    lp, vp = _labels_and_verdicts(tmp)
    md = judge("report", "agreement", "--labels", lp, "--verdicts", vp, "--format", "md",
               "--n-boot", "20", env=env)
    assert md.code == 0, md.text
    held("report agreement (md, stdout)", md, markdown=True)
    markdown_held("report agreement (md)", md.stdout.decode(),
                  headings=len(re.findall(rb"^#{1,6} ", md.stdout, re.M)))
    assert judge("report", "agreement", "--labels", lp, "--verdicts", vp, "--format", "html",
                 "--n-boot", "20", "-o", tmp / "agreement.html", env=env).code == 0
    html = (tmp / "agreement.html").read_text()
    assert raw_controls(html.encode()) == [] and MARKUP in html
    html_held("report agreement (html)", html)


def test_run_summary_and_run_reports(world: dict[str, Any]) -> None:
    env, tmp = world["env"], world["tmp"]
    suite = tmp / "suite.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(world["scenario"]),
                       "traces": [str(t) for t in world["traces"]]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}))
    run = judge("run", suite, "--model", f"scripted:{world['replies']}", "--no-progress",
                env=env)
    assert run.code in (0, 1), run.text
    held("run (text summary)", run)
    run_id = json.loads(judge("run", suite, "--model", f"scripted:{world['replies']}",
                              "--format", "json", env=env).stdout)["run_id"]
    text = judge("report", "run", run_id, "--format", "text", env=env)
    held("report run (text)", text)
    md = judge("report", "run", run_id, "--format", "md", env=env)
    held("report run (md)", md, markdown=True)
    markdown_held("report run (md)", md.stdout.decode(),
                  headings=len(re.findall(rb"^#{1,6} ", md.stdout, re.M)))
    assert judge("report", "run", run_id, "--format", "html", "-o", tmp / "run.html",
                 env=env).code == 0
    html = (tmp / "run.html").read_text()
    assert raw_controls(html.encode()) == [] and "&lt;script&gt;" in html
    html_held("report run (html)", html)


def latest_version(prompts: Path) -> str:
    return max((prompts / "scope_fidelity").glob("v*.md"), key=lambda f: int(f.stem[1:])).stem


def test_ledger_and_prompts(world: dict[str, Any]) -> None:
    env = {**world["env"], "JUDGE_PROMPTS_DIR": str(world["prompts"])}
    held("ledger (text)", judge("ledger", world["scenario"], "--turn", "2", env=env))
    held("ledger (json)", judge("ledger", world["scenario"], "--format", "json", env=env),
         markup_shown=False)
    held("prompts show", judge("prompts", "show", "scope_fidelity", env=env))
    held("prompts list", judge("prompts", "list", env=env))
    held("prompts diff", judge("prompts", "diff", "scope_fidelity", "v1",
                                   latest_version(world["prompts"]), env=env))


def test_errors_echoing_field_values(world: dict[str, Any]) -> None:
    env, tmp = world["env"], world["tmp"]
    bad = tmp / "bad-labels.jsonl"
    bad.write_text(json.dumps({"item_id": f"x {MARKUP}\x1b[2J", "label": ALL,
                               "annotator": "\x1b]52;c;aGk=\x07"}) + "\n")
    for args in (("agreement", "--labels", bad, "--verdicts", bad),
                 ("report", "agreement", "--labels", bad, "--verdicts", bad),
                 ("calibrate", "files", "--labels", bad, "--verdicts", bad)):
        out = judge(*args, env=env)
        assert out.code == 2 and out.stderr.count(b"\n") == 1, out.text
        held(f"error line: {' '.join(map(str, args[:2]))}", out, markup_shown=False)


def test_zz_closing_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The tally of this module (run it with -s to see it): tried and held per class."""
    total: Counter[str] = Counter()
    for counts in TALLY.values():
        total.update(counts)
    classes = sorted({k.rsplit(" ", 1)[0] for k in total})
    with capsys.disabled():
        print(f"\nhostile output corpus: {len(TALLY)} output paths")
        for cls in classes:
            print(f"  {cls:12} tried {total[cls + ' tried']:5}  held {total[cls + ' held']:5}")
    assert len(TALLY) >= 20
    assert all(total[f"{c} tried"] == total[f"{c} held"] for c in classes)
