"""Span-level annotations become labels on judge items, so evidence agreement can be measured
against people who annotated source spans (judge.labels.annotations)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.importers import iter_format
from judge.labels.annotations import (
    IMPORTED_AT,
    annotation_labels,
    labels_from_annotations,
    read_annotations,
)
from judge.trace import Trace

DATA = Path(__file__).resolve().parent / "data" / "importers"
CODE_AGENT = DATA / "otel" / "smolagents_codeagent.json"
BOOKING = DATA / "otel" / "openinference_spans.json"


def _trace(path: Path) -> Trace:
    (t,) = [x.materialize() for x in iter_format("otel", path)]
    return t


def test_trail_errors_map_to_the_item_of_their_span() -> None:
    anns = read_annotations(DATA / "annotations" / "trail_style.json")
    assert len(anns.annotations) == 3 and anns.reviewed == {"0a1b2c3d4e5f60718293a4b5c6d7e8f9"}
    trace = _trace(CODE_AGENT)
    mapped = annotation_labels(anns, [trace], annotator="trail")
    by_item = {lab.item_id: lab for lab in mapped.labels}
    tid = trace.trace_id
    # an error on an LLM span: the item of the call that span made (seq 6, its code action)
    llm = by_item[f"{tid}#6:scope_fidelity"]
    assert (llm.label, llm.evidence_event, llm.annotator) == ("fail", 6, "trail")
    assert llm.metadata["categories"] == ["Tool Selection Errors"]
    assert llm.metadata["impact"] == "LOW" and llm.created_at == IMPORTED_AT
    assert llm.note == "searched instead of answering from knowledge"
    # an error on a step span: the call made inside it (its LLM's code action, seq 11)
    step = by_item[f"{tid}#11:scope_fidelity"]
    assert step.evidence_event == 11 and step.metadata["categories"] == ["Formatting Errors"]
    assert len(mapped.labels) == 2
    (miss,) = mapped.unmatched
    assert miss.annotation.span_id == "ffffffffffffffff" and "came from span" in miss.reason


def test_evidence_in_a_slice_and_labels_per_annotator() -> None:
    anns = read_annotations(DATA / "annotations" / "spans.jsonl")
    trace = _trace(BOOKING)
    mapped = annotation_labels(anns, [trace])
    got = {(lab.item_id.split("#")[1], lab.annotator): lab for lab in mapped.labels}
    # asha: the LLM span that booked -> the book_slot call itself (seq 6); trace id matched
    # whatever its case
    asha = got[("6:scope_fidelity", "asha")]
    assert (asha.label, asha.evidence_event, asha.violated_key) == ("fail", 6, "confirmBooking")
    # ben: the list_slots tool span made only a result (seq 3); the first call whose slice
    # holds it is book_slot (its args use "09:00" from that result)
    ben = got[("6:scope_fidelity", "ben")]
    assert (ben.label, ben.evidence_event) == ("fail", 3)
    assert ben.metadata["evidence_text"] == '["09:00", "11:30"]'
    # a pass on the first LLM span: the list_slots call (seq 2), no evidence
    ok = got[("2:scope_fidelity", "ben")]
    assert (ok.label, ok.evidence_event) == ("pass", None)
    assert not mapped.unmatched


def test_unmarked_items_of_a_reviewed_trace_are_passes() -> None:
    anns = read_annotations(DATA / "annotations" / "trail_style.json")
    trace = _trace(CODE_AGENT)
    mapped = annotation_labels(anns, [trace], annotator="trail", unmarked="pass")
    labels = {lab.item_id.split("#")[1]: lab.label for lab in mapped.labels}
    calls = [e.seq for e in trace.events if e.kind.value == "tool_call"]
    assert sorted(labels, key=lambda s: int(s.split(":")[0])) == [
        f"{s}:scope_fidelity" for s in calls]
    assert labels["6:scope_fidelity"] == "fail" and labels["3:scope_fidelity"] == "pass"


@pytest.mark.parametrize(("content", "expect"), [
    ('{"trace_id": "t", "span_id": "s", "label": "maybe"}', "a.jsonl:1: label"),
    ('{"trace_id": "t", "span_id": "s", "categroy": "x"}', "a.jsonl:1: categroy: unknown field"),
    ('{"trace_id": "t", "errors": [{"category": "x"}]}',
     "a.jsonl:1: errors[0]: field 'location'"),
    ('{"trace_id": "t", "span_id": "s"}\n[1]', "a.jsonl:2: expected an annotation object"),
])
def test_bad_annotation_files_name_line_and_field(tmp_path: Path, content: str,
                                                  expect: str) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as exc:
        read_annotations(path)
    assert exc.value.message.startswith(str(tmp_path / expect.split(": ", 1)[0]))
    assert expect.split(": ", 1)[1] in exc.value.message


def test_labels_import_with_traces_then_evidence_agreement(tmp_path: Path) -> None:
    """The whole path: import the spans, import the annotations as labels (twice: nothing is
    added the second time), export them, and measure a judge's evidence agreement."""
    runner = CliRunner()
    traces = tmp_path / "traces.jsonl"
    db = f"sqlite:///{tmp_path / 'j.db'}"
    assert runner.invoke(app, ["import", "otel", str(BOOKING), "-o", str(traces)]).exit_code == 0
    ann = DATA / "annotations" / "spans.jsonl"
    first = runner.invoke(app, ["labels", "import", str(ann), "--traces", str(traces),
                                "--db", db])
    assert first.exit_code == 0, first.output
    assert "imported 3 new labels" in first.stdout
    again = runner.invoke(app, ["labels", "import", str(ann), "--traces", str(traces),
                                "--db", db])
    assert "imported 0 new labels" in again.stdout
    labels = tmp_path / "labels.jsonl"
    assert runner.invoke(app, ["labels", "export", "-o", str(labels), "--db", db]).exit_code == 0
    tid = "9a6f2c0e5d7b4e1f8a3c2b1d0e9f8a7b"
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("\n".join(json.dumps(v) for v in [
        {"item_id": f"{tid}#6:scope_fidelity", "label": "fail", "violated_key": "confirmBooking",
         "evidence_event": 6, "confidence": 0.9},
        {"item_id": f"{tid}#2:scope_fidelity", "label": "pass", "confidence": 0.8},
    ]) + "\n")
    result = runner.invoke(app, ["agreement", "--labels", str(labels), "--verdicts",
                                 str(verdicts), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # asha and ben both fail item 6 (evidence 6 and 3: the majority reference keeps the
    # newest label's evidence, asha's); the judge cites 6
    assert report["confusion"]["tp"] == 1 and report["confusion"]["tn"] == 1
    assert report["evidence_agreement"] == 1.0


def test_annotations_of_traces_not_given_are_unmatched(tmp_path: Path) -> None:
    mapped = labels_from_annotations(DATA / "annotations" / "trail_style.json", [])
    assert not mapped.labels and len(mapped.unmatched) == 3
    assert all("no imported trace" in m.reason for m in mapped.unmatched)
