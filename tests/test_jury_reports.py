"""Each juror's agreement and the jury's (issue 14 item 2): `judge agreement` and
`judge report agreement` read the jurors' verdicts kept in the jury verdicts, checked
against scikit-learn on the same labels; hostile juror names stay inert."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.grading.jury import JurySpec, combine
from judge.labels.report import agreement_report
from judge.prompts import load_prompt

PROMPT = load_prompt("scope_fidelity")
SPEC = JurySpec((("openai:a", 1), ("anthropic:b", 1), ("openai:c", 1)))


def juror_label(rng: random.Random, truth: str, accuracy: float) -> str:
    if rng.random() < 0.05:
        return "unscored"
    right = rng.random() < accuracy
    return truth if right else ("pass" if truth == "fail" else "fail")


def make(n: int = 300, seed: int = 7) -> tuple[list[HumanLabel], list[Verdict],
                                               dict[str, dict[str, str]]]:
    rng = random.Random(seed)
    labels, verdicts = [], []
    seats: dict[str, dict[str, str]] = {j.id: {} for j in SPEC.jurors()}
    for i in range(n):
        item = f"t/{i}#3:scope_fidelity"
        truth = "fail" if rng.random() < 0.4 else "pass"
        labels.append(HumanLabel(item_id=item, label=truth,  # type: ignore[arg-type]
                                 violated_key="k" if truth == "fail" else None,
                                 evidence_event=3 if truth == "fail" else None,
                                 annotator="asha", created_at="2026-11-29T10:00:00Z"))
        votes = []
        for j, acc in zip(SPEC.jurors(), (0.9, 0.75, 0.6), strict=True):
            lab = juror_label(rng, truth, acc)
            seats[j.id][item] = lab
            votes.append(Verdict(
                item_id=item, label=lab,  # type: ignore[arg-type]
                violated_key="k" if lab == "fail" else None,
                evidence_event=3 if lab == "fail" else None,
                confidence=None if lab == "unscored" else 0.9,
                reason="timeout" if lab == "unscored" else None))
        verdicts.append(combine(item, PROMPT, SPEC, SPEC.jurors(), votes))
    return labels, verdicts, seats


def test_each_jurors_agreement_matches_sklearn_and_the_jury_is_the_top_level() -> None:
    labels, verdicts, seats = make()
    report = agreement_report(labels, verdicts, n_boot=50, breakdown_n_boot=50)
    truth = {lab.item_id: lab.label for lab in labels}
    jurors = report["breakdowns"]["juror"]
    assert sorted(jurors) == sorted(seats)
    for juror, mine in seats.items():
        scored = [i for i in sorted(mine) if mine[i] != "unscored"]
        human = [truth[i] == "fail" for i in scored]
        judged = [mine[i] == "fail" for i in scored]
        assert jurors[juror]["n_items"] == len(scored)  # scored items (formats §5)
        assert jurors[juror]["n_unscored"] == len(mine) - len(scored)
        assert jurors[juror]["accuracy"] == pytest.approx(accuracy_score(human, judged))
        assert jurors[juror]["cohen_kappa"] == pytest.approx(cohen_kappa_score(human, judged))
    # the top level is the jury's own verdicts
    scored = [v for v in verdicts if v.label != "unscored"]
    assert report["accuracy"] == pytest.approx(accuracy_score(
        [truth[v.item_id] == "fail" for v in scored], [v.label == "fail" for v in scored]))
    # jurors of accuracy 0.9, 0.75, 0.6: the best juror beats the worst by a clear margin
    assert jurors["openai:a"]["accuracy"] > jurors["openai:c"]["accuracy"] + 0.15
    jury = report["jury"]
    splits = sum(1 for v in verdicts if v.metadata["jury"]["split"])
    assert jury["n_verdicts"] == len(verdicts) and jury["n_split"] == splits
    assert jury["names"] == [SPEC.name]
    assert 0 < jury["split_rate"] < 1


def test_a_single_judge_report_has_no_jury() -> None:
    labels, verdicts, _ = make(40)
    plain = [v.model_copy(update={"metadata": {}}) for v in verdicts]
    report = agreement_report(labels, plain, n_boot=20, breakdown_n_boot=20)
    assert report["jury"] is None and report["breakdowns"]["juror"] == {}


def write(tmp: Path, labels: list[HumanLabel], verdicts: list[Verdict]) -> tuple[Path, Path]:
    lp, vp = tmp / "labels.jsonl", tmp / "verdicts.jsonl"
    lp.write_text("".join(lab.model_dump_json() + "\n" for lab in labels))
    vp.write_text("".join(v.model_dump_json() + "\n" for v in verdicts))
    return lp, vp


def test_the_cli_reports_give_a_row_per_juror_and_the_jurys(tmp_path: Path) -> None:
    labels, verdicts, _ = make(120)
    lp, vp = write(tmp_path, labels, verdicts)
    runner = CliRunner()
    out = runner.invoke(app, ["agreement", "--labels", str(lp), "--verdicts", str(vp),
                              "--n-boot", "50"])
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data["breakdowns"]["juror"]) == {"openai:a", "anthropic:b", "openai:c"}
    assert data["jury"]["n_verdicts"] == 120
    text = runner.invoke(app, ["agreement", "--labels", str(lp), "--verdicts", str(vp),
                               "--n-boot", "50", "--format", "text"])
    assert "by juror" in text.stdout and "jury verdicts: 120" in text.stdout
    md = runner.invoke(app, ["report", "agreement", "--labels", str(lp), "--verdicts", str(vp),
                             "--n-boot", "50"])
    assert md.exit_code == 0, md.stderr
    assert "## By juror" in md.stdout and r"\(the jury\)" in md.stdout  # Markdown-escaped
    for fmt in ("html", "csv"):
        res = runner.invoke(app, ["report", "agreement", "--labels", str(lp), "--verdicts",
                                  str(vp), "--n-boot", "50", "--format", fmt])
        assert res.exit_code == 0 and "anthropic:b" in res.stdout


HOSTILE = "<script>alert(1)</script>\x1b[31m=HYPERLINK(\"x\")|"


def test_hostile_juror_names_stay_inert_in_every_report(tmp_path: Path) -> None:
    labels, verdicts, _ = make(60)
    for v in verdicts:
        v.metadata["jury"]["jurors"][0]["juror"] = HOSTILE
        v.metadata["jury"]["jurors"][1]["juror"] = '=HYPERLINK("http://x.test")'
    lp, vp = write(tmp_path, labels, verdicts)
    runner = CliRunner()
    outputs = {}
    for name, args in (("text", ["agreement", "--format", "text"]),
                       ("md", ["report", "agreement"]),
                       ("html", ["report", "agreement", "--format", "html"]),
                       ("csv", ["report", "agreement", "--format", "csv"])):
        res = runner.invoke(app, [*args, "--labels", str(lp), "--verdicts", str(vp),
                                  "--n-boot", "20"])
        assert res.exit_code == 0, res.stderr
        assert "\x1b" not in res.stdout  # no live escape anywhere
        outputs[name] = res.stdout
    assert "\\x1b" in outputs["text"]  # shown as an escape, not sent
    for markup in ("md", "html"):  # no live tag where a renderer would run it
        assert "<script>" not in outputs[markup]
    assert "&lt;script&gt;" in outputs["html"]
    cells = [c for row in csv.reader(io.StringIO(outputs["csv"])) for c in row
             if "HYPERLINK" in c]
    assert cells and not any(c.startswith("=") for c in cells)  # never a live formula


def test_the_revealed_verdict_shows_each_jurors_vote() -> None:
    from judge.cli.label import verdict_text
    from judge.serve.views import verdict_lines

    _, verdicts, seats = make(20)
    v = next(v for v in verdicts if v.metadata["jury"]["split"])
    lines = dict(verdict_lines(v))
    for juror, mine in seats.items():
        assert lines[f"juror {juror}"].startswith(mine[v.item_id])
        assert f"{juror} {mine[v.item_id]}" in verdict_text(v)


@pytest.mark.parametrize("share", [10**400, 7, -0.5, "0.5", True, None, float("nan")])
def test_a_hostile_vote_share_is_left_out_of_the_jury_summary(share: object) -> None:
    from judge.labels.report import jury_summary

    _, verdicts, _ = make(6)
    verdicts[0].metadata["jury"]["vote_share"] = share
    verdicts[1].metadata["jury"]["name"] = ["x"] * 100_000
    summary = jury_summary(verdicts)
    assert summary is not None
    valid = [v.metadata["jury"]["vote_share"] for v in verdicts[1:]]
    assert summary["mean_vote_share"] == pytest.approx(sum(valid) / len(valid))
    assert summary["names"] == [SPEC.name]
