"""`judge route`: a verdicts file routed with its calibration records, checked against labels
(the DevAI example's routing split, and small files whose split is known by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.calibration import build_record
from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.labels import read_labels, read_verdicts, write_labels, write_verdicts

ROOT = Path(__file__).resolve().parents[1]
DEVAI_VERDICTS = ROOT / "examples" / "devai" / "verdicts.jsonl"
DEVAI_LABELS = ROOT / "labels" / "devai.jsonl"
DEVAI_RECORDS = ROOT / "calibration"


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_the_devai_split_is_the_judges_fails_at_their_measured_precision() -> None:
    code, out, err = run("route", DEVAI_VERDICTS, "--labels", DEVAI_LABELS, "--calibration",
                         DEVAI_RECORDS, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    verdicts = {v.item_id: v for v in read_verdicts(DEVAI_VERDICTS)}
    people = {lab.item_id: lab.label for lab in read_labels(DEVAI_LABELS)}
    acc, rev = doc["routes"]["auto_accept"], doc["routes"]["review"]
    # the record auto-accepts fails only; every pass and the 5% audit draw go to people
    assert acc["pass"] == 0 and rev["pass"] == 415
    assert acc["n"] + rev["n"] == 1098 and rev["reasons"]["low confidence"] == 415
    assert 0 < rev["reasons"]["audit"] < 0.1 * 683
    (rec,) = doc["records"]
    assert rec["calibration"]["method"].endswith("_by_label")
    assert rec["calibration"]["path"].endswith("gray_box__agent-as-a-judge.json")
    # measured precision, recounted from the files: routed fails that people call fail too
    code, routed_out, _ = run("route", DEVAI_VERDICTS, "--calibration", DEVAI_RECORDS,
                              "--format", "json", "-o", "-")
    assert code == 0
    routed = [Verdict.model_validate_json(line) for line in routed_out.splitlines()
              if line.startswith("{\"item_id\"")]
    accepted = [v.item_id for v in routed if v.route == "auto_accept"]
    assert len(accepted) == acc["n"]
    agreed = sum(people[i] == verdicts[i].label for i in accepted)
    assert acc["measured"] == {"labelled": len(accepted), "agreed": agreed,
                               "agreement": agreed / len(accepted),
                               "ci": acc["measured"]["ci"]}
    lo, hi = acc["measured"]["ci"]
    assert lo < agreed / len(accepted) < hi and 0.88 < agreed / len(accepted) < 0.96
    # pass rates: the judge's 415/1098, the people's 401/1098; after review, the people
    # decide the reviewed items and the auto-accepted fails stand
    rates = doc["pass_rate"]
    assert (rates["judge"]["k"], rates["people"]["k"]) == (415, 401)
    reviewed_pass = sum(people[v.item_id] == "pass" for v in routed if v.route == "review")
    assert rates["after_review"] == {"estimate": reviewed_pass / 1098, "k": reviewed_pass,
                                     "n": 1098, "pending": 0}


def test_the_text_names_the_record_the_split_and_the_pass_rates() -> None:
    code, out, err = run("route", DEVAI_VERDICTS, "--labels", DEVAI_LABELS, "--calibration",
                         DEVAI_RECORDS)
    assert code == 0, err
    assert "threshold 0.9197 for agreement 90%" in out
    assert "auto-accepted:" in out and "to review:" in out and "why: low confidence 415" in out
    assert "agreement with people 92." in out
    assert "judge alone 37.80% (415/1098)" in out and "people 36.52% (401/1098" in out


def _files(tmp_path: Path, *, model: str = "m") -> tuple[Path, Path, Path]:
    """40 fails (36 right) and 40 passes (30 right) of one judge at confidence 0.9 or 0.6,
    with a record fitted on them (target 0.8)."""
    verdicts, labels = [], []
    for i in range(80):
        said = "fail" if i < 40 else "pass"
        right = (i % 10 != 0) if i < 40 else (i % 4 != 0)
        truth = said if right else ("pass" if said == "fail" else "fail")
        item = f"t/{i}#1:r"
        verdicts.append(Verdict(item_id=item, label=said, confidence=0.9 if right else 0.6,
                                violated_key="k" if said == "fail" else None, rubric="r",
                                prompt_version="v1", prompt_hash="sha256:p", model=model))
        labels.append(HumanLabel(item_id=item, label=truth, annotator="a",
                                 violated_key="k" if truth == "fail" else None))
    vpath, lpath = tmp_path / "v.jsonl", tmp_path / "l.jsonl"
    write_verdicts(vpath, verdicts)
    write_labels(lpath, labels)
    conf = [v.confidence for v in verdicts]
    agreed = [float(lab.label == v.label) for v, lab in zip(verdicts, labels, strict=True)]
    human_fail = [lab.label == "fail" for lab in labels]
    build_record(conf, agreed, human_fail, rubric="r", prompt_version="v1",
                 prompt_hash="sha256:p", model="m", label_set_hash="x", target=0.8,
                 min_per_class=10).save(tmp_path / "records")
    return vpath, lpath, tmp_path / "records"


def test_a_hand_made_split(tmp_path: Path) -> None:
    vpath, lpath, records = _files(tmp_path)
    code, out, err = run("route", vpath, "--labels", lpath, "--calibration", records,
                         "--audit-share", "0", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    acc, rev = doc["routes"]["auto_accept"], doc["routes"]["review"]
    # confidence 0.9 means right here: those 66 are auto-accepted and every one agrees
    assert acc["n"] == 66 and acc["measured"]["agreed"] == 66 and acc["measured"]["ci"][1] == 1
    assert rev["n"] == 14 and rev["measured"]["agreed"] == 0
    assert doc["review_share"] == pytest.approx(14 / 80)
    assert doc["pass_rate"]["after_review"]["k"] == doc["pass_rate"]["people"]["k"]


def test_without_a_record_everything_goes_to_review_and_labels_are_optional(
        tmp_path: Path) -> None:
    vpath, _, _ = _files(tmp_path, model="another")
    code, out, err = run("route", vpath, "--calibration", tmp_path / "none", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["routes"]["review"]["reasons"] == {"uncalibrated": 80}
    assert doc["records"][0]["calibration"] is None and doc["labels"] is None
    assert set(doc["pass_rate"]) == {"judge"} and "measured" not in doc["routes"]["review"]


def test_an_overruled_verdict_stays_a_veto_and_the_output_is_routed(tmp_path: Path) -> None:
    vpath, _, records = _files(tmp_path)
    verdicts = read_verdicts(vpath)
    verdicts[0] = verdicts[0].model_copy(update={"overruled": True})
    write_verdicts(vpath, verdicts)
    out_file = tmp_path / "routed.jsonl"
    code, out, err = run("route", vpath, "--calibration", records, "-o", out_file)
    assert code == 0, err
    routed = read_verdicts(out_file)
    assert routed[0].route == "veto" and all(v.route for v in routed)
    assert all(v.calibrated_confidence is not None for v in routed)
    assert "vetoed:" in out and "wrote 80 routed verdicts" in err


def test_hostile_names_are_shown_inert(tmp_path: Path) -> None:
    vpath, _, _ = _files(tmp_path, model="m\x1b[31m\u202e")
    code, out, _ = run("route", vpath, "--calibration", tmp_path / "none")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b" in out


@pytest.mark.parametrize("args, message", [
    (["route", "nope.jsonl"], "nope.jsonl"),
    (["route", "{v}", "--labels", "missing.jsonl"], "missing.jsonl"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    vpath, _, _ = _files(tmp_path)
    code, _, err = run(*[a.replace("{v}", str(vpath)) for a in args])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
