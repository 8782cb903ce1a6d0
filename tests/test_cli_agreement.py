"""`judge agreement`: file mode JSON/text, database mode, and bad input as one line + exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.labels import write_labels, write_verdicts

FORMAT_KEYS = ("n_items", "n_unscored", "n_tied", "n_unsure", "accuracy", "cohen_kappa", "tpr",
               "tnr", "precision", "recall", "f1", "confusion", "human_fail_rate",
               "judge_fail_rate", "key_agreement", "evidence_agreement", "ci",
               "corrected_pass_rate")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def synth(n: int, seed: int = 0) -> tuple[list[HumanLabel], list[Verdict]]:
    """n labelled items (judge right 85% of the time) plus n unlabelled verdicts."""
    rng = np.random.default_rng(seed)
    labels: list[HumanLabel] = []
    verdicts: list[Verdict] = []
    for i in range(2 * n):
        item = f"t{i}#3:{'scope' if i % 2 else 'summary'}"
        truth = "fail" if rng.random() < 0.3 else "pass"
        said = truth if rng.random() < 0.85 else ("pass" if truth == "fail" else "fail")
        verdicts.append(Verdict(item_id=item, label=said,  # type: ignore[arg-type]
                                violated_key="k" if said == "fail" else None, evidence_event=3,
                                rubric=item.rsplit(":", 1)[1]))
        if i < n:
            labels.append(HumanLabel(item_id=item, label=truth,  # type: ignore[arg-type]
                                     annotator="asha", evidence_event=3,
                                     violated_key="k" if truth == "fail" else None))
    return labels, verdicts


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    labels, verdicts = synth(200)
    write_labels(tmp_path / "labels.jsonl", labels)
    write_verdicts(tmp_path / "verdicts.jsonl", verdicts)
    return str(tmp_path / "labels.jsonl"), str(tmp_path / "verdicts.jsonl")


def test_json_has_every_formats_key_and_is_reproducible(files: tuple[str, str]) -> None:
    labels, verdicts = files
    code, out, err = run("agreement", "--labels", labels, "--verdicts", verdicts,
                         "--format", "json", "--n-boot", "200", "--seed", "4")
    assert code == 0, err
    doc = json.loads(out)
    for key in FORMAT_KEYS:
        assert key in doc
    assert doc["n_items"] == 200 and doc["n_judged"] == 400
    assert 0.75 < doc["accuracy"] < 0.95 and doc["key_agreement"] == 1.0
    assert set(doc["breakdowns"]["rubric"]) == {"scope", "summary"}
    assert doc["corrected_pass_rate"]["ci"][0] < doc["corrected_pass_rate"]["estimate"]
    again = run("agreement", "--labels", labels, "--verdicts", verdicts, "--n-boot", "200",
                "--seed", "4")[1]
    assert json.loads(again) == doc
    other = json.loads(run("agreement", "--labels", labels, "--verdicts", verdicts,
                           "--n-boot", "200", "--seed", "5")[1])
    assert other["ci"] != doc["ci"] and other["accuracy"] == doc["accuracy"]


def test_text_format_is_a_table(files: tuple[str, str]) -> None:
    labels, verdicts = files
    code, out, _ = run("agreement", "--labels", labels, "--verdicts", verdicts,
                       "--format", "text", "--n-boot", "50")
    assert code == 0
    assert "cohen_kappa" in out and "corrected_pass_rate" in out and "by rubric" in out


def test_degenerate_input_gives_json_without_nan(tmp_path: Path) -> None:
    # every verdict unscored: nothing to compare, but a defined answer, not a crash
    (tmp_path / "l.jsonl").write_text(json.dumps(
        {"item_id": "a#1:r", "label": "pass", "annotator": "x"}) + "\n")
    (tmp_path / "v.jsonl").write_text(json.dumps(
        {"item_id": "a#1:r", "label": "unscored", "reason": "timeout"}) + "\n")
    code, out, err = run("agreement", "--labels", str(tmp_path / "l.jsonl"),
                         "--verdicts", str(tmp_path / "v.jsonl"))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["n_unscored"] == 1 and doc["accuracy"] is None and doc["reasons"]["accuracy"]
    assert doc["corrected_pass_rate"] is None and doc["reasons"]["corrected_pass_rate"]


LABEL = {"item_id": "a#1:r", "label": "fail", "violated_key": "k", "annotator": "x"}
VERDICT = {"item_id": "a#1:r", "label": "fail", "violated_key": "k"}


@pytest.mark.parametrize(("labels", "verdicts", "message"), [
    ([LABEL], [{**VERDICT, "item_id": "b#1:r"}], "l.jsonl: field 'item_id': shares no item"),
    ([LABEL], [VERDICT, VERDICT], "v.jsonl:2: field 'item_id': duplicate verdict"),
    ([{**LABEL, "label": "maybe"}], [VERDICT], "l.jsonl:1: label"),
    ([LABEL], [{**VERDICT, "label": "unsure"}], "v.jsonl:1: label"),
    ([LABEL], ["{not json"], "v.jsonl:1: malformed JSON"),
    ([{**LABEL, "confidence": 0.5}], [VERDICT], "l.jsonl:1: confidence: unknown field"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, labels: list[object],
                                          verdicts: list[object], message: str) -> None:
    def dump(rows: list[object]) -> str:
        return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    (tmp_path / "l.jsonl").write_text(dump(labels))
    (tmp_path / "v.jsonl").write_text(dump(verdicts))
    code, out, err = run("agreement", "--labels", str(tmp_path / "l.jsonl"),
                         "--verdicts", str(tmp_path / "v.jsonl"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err


def test_usage_errors_exit_2(files: tuple[str, str]) -> None:
    labels, _ = files
    assert run("agreement", "--labels", labels)[0] == 2
    assert run("agreement")[0] == 2
    assert run("agreement", "--labels", labels, "--verdicts", labels, "--rubric", "r")[0] == 2
    code, _, err = run("agreement", "--labels", "missing.jsonl", "--verdicts", labels)
    assert code == 2 and "missing.jsonl: no such file" in err


def test_database_mode_matches_file_mode(tmp_path: Path, files: tuple[str, str]) -> None:
    from judge.store import open_store

    labels, verdicts = synth(200)
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as store:
        store.save_verdicts(verdicts, "run-1")
        store.add_labels(labels)
    code, out, err = run("agreement", "--rubric", "scope", "--db", url, "--n-boot", "100")
    assert code == 0, err
    db_doc = json.loads(out)
    scope_labels = [lab for lab in labels if lab.item_id.endswith(":scope")]
    scope_verdicts = [v for v in verdicts if v.item_id.endswith(":scope")]
    write_labels(tmp_path / "sl.jsonl", scope_labels)
    write_verdicts(tmp_path / "sv.jsonl", scope_verdicts)
    file_doc = json.loads(run("agreement", "--labels", str(tmp_path / "sl.jsonl"),
                              "--verdicts", str(tmp_path / "sv.jsonl"), "--n-boot", "100")[1])
    for key in ("n_items", "confusion", "accuracy", "ci", "corrected_pass_rate"):
        assert db_doc[key] == file_doc[key], key
    code, _, err = run("agreement", "--rubric", "nope", "--db", url)
    assert code == 2 and "no stored verdicts for rubric 'nope'" in err
    code, _, err = run("agreement", "--rubric", "scope", "--model", "other:model", "--db", url)
    assert code == 2 and "model 'other:model'" in err and len(err.strip().splitlines()) == 1
