"""Label and verdict files: round trips, one-line errors naming file:line and field,
reference labels (newest per annotator, majority, ties, unsure) and human-human agreement."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict
from judge.labels import (
    agreement_report,
    human_human_agreement,
    read_labels,
    read_verdicts,
    reference_labels,
    write_labels,
    write_verdicts,
)

ITEM = "refund-once/run-1#4:scope_fidelity"


def label(item: str, value: str, who: str, hour: int = 10, key: str | None = None,
          **meta: str) -> HumanLabel:
    return HumanLabel(item_id=item, label=value, annotator=who,  # type: ignore[arg-type]
                      violated_key=key, created_at=datetime(2026, 11, 29, hour, tzinfo=UTC),
                      metadata=dict(meta))


def verdict(item: str, value: str, key: str | None = None, **meta: str) -> Verdict:
    return Verdict(item_id=item, label=value, violated_key=key,  # type: ignore[arg-type]
                   reason="no verdict" if value == "unscored" else None, metadata=dict(meta))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_round_trip(tmp_path: Path) -> None:
    labels = [label(ITEM, "fail", "asha", key="refundOnce"), label(ITEM, "pass", "ben")]
    verdicts = [verdict(ITEM, "fail", "refundOnce"), verdict("t#1:r", "unscored")]
    assert write_labels(tmp_path / "l.jsonl", labels) == 2
    assert write_verdicts(tmp_path / "v.jsonl", verdicts) == 2
    assert read_labels(tmp_path / "l.jsonl") == labels
    assert read_verdicts(tmp_path / "v.jsonl") == verdicts


@pytest.mark.parametrize(("lines", "where", "field"), [
    (['{"item_id": "a#1:r", "label": "maybe", "annotator": "x"}'], ":1", "label"),
    (['', '{"item_id": "a#1:r", "label": "pass", "annotator": "x"}', '{"item_id": "a#1:r",'],
     ":3", "malformed JSON"),
    (['{"item_id": "a#1:r", "label": "pass", "annotater": "x"}'], ":1", "annotater"),
    (['[1, 2]'], ":1", "expected a label object"),
])
def test_label_errors_name_file_line_and_field(tmp_path: Path, lines: list[str], where: str,
                                               field: str) -> None:
    path = write_lines(tmp_path / "labels.jsonl", lines)
    with pytest.raises(InputError) as err:
        read_labels(path)
    assert f"labels.jsonl{where}" in err.value.message and field in err.value.message
    assert "\n" not in err.value.message


def test_duplicate_verdicts_name_both_lines(tmp_path: Path) -> None:
    row = json.dumps({"item_id": ITEM, "label": "pass"})
    path = write_lines(tmp_path / "v.jsonl", [row, json.dumps({"item_id": "b#1:r",
                                                               "label": "pass"}), row])
    with pytest.raises(InputError, match=r"v\.jsonl:3: field 'item_id': duplicate .*line 1"):
        read_verdicts(path)
    assert len(read_verdicts(path, unique=False)) == 3


def test_verdict_fail_without_key_is_rejected(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v.jsonl", [json.dumps({"item_id": ITEM, "label": "fail"})])
    with pytest.raises(InputError, match="violated_key is required"):
        read_verdicts(path)


def test_missing_file() -> None:
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file"):
        read_labels("nope.jsonl")


def test_reference_uses_each_annotators_newest_label() -> None:
    refs = reference_labels([
        label(ITEM, "pass", "asha", hour=9),
        label(ITEM, "fail", "asha", hour=11, key="k1"),  # supersedes asha's pass
        label(ITEM, "fail", "ben", hour=10, key="k2"),
        label(ITEM, "pass", "cy", hour=10),
    ])
    ref = refs.labels[ITEM]
    assert (ref.label, ref.n_fail, ref.n_pass) == ("fail", 2, 1)
    assert ref.violated_key == "k1"  # keys tie 1-1: the newest wins
    assert refs.n_tied == 0


def test_ties_left_out_and_unsure_kept() -> None:
    refs = reference_labels([
        label("a#1:r", "pass", "asha"), label("a#1:r", "fail", "ben", key="k"),
        label("a#2:r", "unsure", "asha"), label("a#2:r", "unsure", "ben"),
        label("a#3:r", "unsure", "asha"), label("a#3:r", "pass", "ben"),
    ])
    assert refs.tied == ["a#1:r"] and "a#1:r" not in refs.labels
    assert refs.labels["a#2:r"].label == "unsure" and refs.n_unsure == 1
    assert refs.labels["a#3:r"].label == "pass"  # an unsure annotator abstains


def test_human_human_kappa_for_two_and_alpha_for_more() -> None:
    two = reference_labels([label("a#1:r", "pass", "x"), label("a#1:r", "pass", "y"),
                            label("a#2:r", "fail", "x", key="k"), label("a#2:r", "pass", "y"),
                            label("a#3:r", "fail", "x", key="k"),
                            label("a#3:r", "fail", "y", key="k")])
    hh = human_human_agreement(two)
    assert hh is not None and hh["n_items"] == 3 and hh["n_annotators"] == 2
    assert hh["percent_agreement"] == pytest.approx(2 / 3)
    assert hh["cohen_kappa"] == pytest.approx(0.4)  # po 2/3, pe 4/9
    three = reference_labels([*[label(f"a#{i}:r", "pass", w) for i in range(3) for w in "xyz"],
                              label("a#3:r", "fail", "x", key="k")])
    hh3 = human_human_agreement(three)
    assert hh3 is not None and hh3["cohen_kappa"] is None and "cohen_kappa" in hh3["reasons"]
    assert hh3["krippendorff_alpha"] is None  # every vote says pass: undefined, with a reason
    assert hh3["reasons"]["krippendorff_alpha"]
    assert human_human_agreement(reference_labels([label(ITEM, "pass", "x")])) is None


def test_agreement_report_breakdowns_and_bad_input() -> None:
    labels = [label("t#1:scope", "fail", "asha", key="refundOnce", key_class="constraint"),
              label("t#2:scope", "pass", "asha"), label("t#3:summary", "pass", "asha"),
              label("t#3:summary", "pass", "ben")]
    verdicts = [verdict("t#1:scope", "fail", "refundOnce", key_sensitivity="costly"),
                verdict("t#2:scope", "fail", "other"), verdict("t#3:summary", "pass"),
                verdict("t#4:summary", "unscored")]
    out = agreement_report(labels, verdicts, n_boot=50, seed=0, breakdown_n_boot=20)
    json.dumps(out, allow_nan=False)
    assert out["n_items"] == 3 and out["confusion"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 1}
    br = out["breakdowns"]
    assert set(br["rubric"]) == {"scope", "summary"} and br["rubric"]["scope"]["n_items"] == 2
    assert br["rubric"]["summary"]["n_judged"] == 1  # its unscored verdict is not judged
    assert set(br["key"]) == {"refundOnce", "other", "(none)"}
    assert br["key_class"]["constraint"]["n_items"] == 1  # from the label's metadata
    assert br["sensitivity"]["costly"]["n_items"] == 1  # from the verdict's metadata
    assert br["annotator"]["asha"]["n_items"] == 3 and br["annotator"]["ben"]["n_items"] == 1
    assert out["human_human"]["n_items"] == 1
    with pytest.raises(InputError, match="share no item"):
        agreement_report(labels, [verdict("zzz#1:r", "pass")], n_boot=10)
    with pytest.raises(InputError, match="duplicate"):
        agreement_report(labels, [verdicts[0], verdicts[0]], n_boot=10)


def test_agreement_report_does_not_depend_on_input_order() -> None:
    labels = [label(f"t#{i}:r", "fail" if i % 3 == 0 else "pass", "asha",
                    key="k" if i % 3 == 0 else None) for i in range(40)]
    verdicts = [verdict(f"t#{i}:r", "fail" if i % 4 == 0 else "pass",
                        "k" if i % 4 == 0 else None) for i in range(60)]
    a = agreement_report(labels, verdicts, n_boot=100, seed=3, breakdown_n_boot=20)
    b = agreement_report(labels[::-1], verdicts[::-1], n_boot=100, seed=3, breakdown_n_boot=20)
    assert a == b
    assert a["n_items"] == 40 and a["n_judged"] == 60
