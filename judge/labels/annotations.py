"""Span-level annotations of agent trajectories as human labels on judge items.

Published human annotations of agent traces (TRAIL, an annotation queue in Phoenix or
Langfuse, a team's own review) point at **source spans**, not at judge items. Given the traces
imported from the same spans (`judge import otel|langsmith`, whose events keep
`metadata.source_span_id`), each annotation becomes a label on one item:

1. **the item whose target came from that span**: the first target event (a tool call, for
   `scope_fidelity`) whose `source_span_id` is the annotated span; its evidence is the
   target itself;
2. otherwise the annotated span's **evidence event** — the first event that came from it
   (e.g. the assistant text of an LLM span), else from a span directly inside it (a step
   span's LLM or tool) — and **the item whose slice holds it**: the first target at or after
   the evidence whose slice (the events a judge is shown, `judge.items.build_slice`)
   contains that event;
3. an annotation no event can be traced to is reported as unmatched, with the reason.

So an annotation's label carries `evidence_event` = the seq of the event the annotated span
produced, and `judge agreement`'s `evidence_agreement` (among items both call fail, the
share citing the same evidence event) measures whether a judge localises the same step the
people did.

Annotation files (`.jsonl` one record a line, or `.json` one record or a list):

- span records: `{"trace_id", "span_id", "label"?, "category"?, "evidence"?, "impact"?,
  "annotator"?, "note"?, "description"?, "violated_key"?, "rubric"?, "created_at"?,
  "metadata"?}` — `label` is pass / fail / unsure, fail when absent (an annotation marks an
  error); unknown fields are refused;
- TRAIL-style trace records: `{"trace_id", "errors": [{"category", "location" (the span
  id), "evidence", "description", "impact"}], "scores": [...]}` — every error is a fail on
  its location; a trace record with no errors still says the trace was reviewed.

With `unmarked="pass"`, every other target of a reviewed trace is labelled pass (for
exhaustive annotations such as TRAIL's, where an unmarked step is a step found correct).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.errors import InputError
from judge.formats import HumanLabel
from judge.formats.verdicts import item_id
from judge.items.extract import DEFAULT_USES
from judge.items.slice import SliceSource, build_slice
from judge.trace.loader import validation_error
from judge.trace.model import Trace

#: labels made from annotations without a time of their own get this one, so importing the
#: same file twice stores nothing twice (a label's identity includes its time)
IMPORTED_AT = datetime(2000, 1, 1, tzinfo=UTC)


class SpanAnnotation(BaseModel):
    """One annotation of one source span (the JSONL record; TRAIL errors are read into it)."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(min_length=1)
    span_id: str = Field(min_length=1)
    label: Literal["pass", "fail", "unsure"] = "fail"
    category: str | None = None
    evidence: str | None = None
    impact: str | None = None
    annotator: str | None = None
    note: str | None = None
    description: str | None = None
    violated_key: str | None = None
    rubric: str | None = None
    created_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass
class AnnotationSet:
    """Annotations, and the traces their files say were reviewed (even with none)."""

    annotations: list[SpanAnnotation] = field(default_factory=list)
    reviewed: set[str] = field(default_factory=set)
    where: dict[int, str] = field(default_factory=dict)  # id(annotation) -> "file:line"


@dataclass
class Unmatched:
    annotation: SpanAnnotation
    reason: str


@dataclass
class Mapping:
    labels: list[HumanLabel]
    unmatched: list[Unmatched]


def norm_trace_id(value: str) -> str:
    """Trace ids compare as OTel writes them: lowercase hex without `0x`."""
    s = value.strip()
    s = s[2:] if s.lower().startswith("0x") else s
    return s.lower() if all(c in "0123456789abcdefABCDEF" for c in s) else s


def _records(path: Path, file: str) -> Iterator[tuple[int | None, str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=file) from None
    if path.suffix == ".jsonl":
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if raw.strip():
                try:
                    yield lineno, "", json.loads(raw)
                except (ValueError, RecursionError) as exc:
                    raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:80]})",
                                     file=file, line=lineno) from None
        return
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=file,
                         line=exc.lineno) from None
    except RecursionError:
        raise InputError("malformed JSON (nested too deeply)", file=file) from None
    if isinstance(doc, list):
        for i, rec in enumerate(doc):
            yield None, f"[{i}]", rec
    else:
        yield None, "", doc


def is_annotation_file(path: str | Path) -> bool:
    """Whether a labels file holds span annotations (not formats §4 labels): its first
    record has a span id or TRAIL's `errors`, and no `item_id`."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            head = fh.read(65536)
    except (OSError, UnicodeDecodeError):
        return False
    first = head.lstrip()[:1]
    if first == "[":
        first_rec = head.lstrip()[1:].lstrip()
        head = first_rec
    return '"item_id"' not in head.split("\n", 1)[0] and (
        '"span_id"' in head or '"errors"' in head or '"location"' in head)


def read_annotations(path: str | Path) -> AnnotationSet:
    """Every annotation of a file; InputError names the file, line or record, and field."""
    p = Path(path)
    file = str(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    out = AnnotationSet()
    for line, where, rec in _records(p, file):
        if not isinstance(rec, dict):
            raise InputError("expected an annotation object", file=file, line=line,
                             path=where or None)
        if "errors" in rec and "span_id" not in rec:  # TRAIL-style: one record per trace
            _trail(rec, out, file, line, where)
            continue
        try:
            ann = SpanAnnotation.model_validate(rec)
        except ValidationError as exc:
            raise validation_error(exc, file, line, where) from None
        out.annotations.append(ann)
        out.where[id(ann)] = f"{file}:{line}" if line is not None else f"{file} {where}"
        out.reviewed.add(norm_trace_id(ann.trace_id))
    return out


def _trail(rec: dict[str, Any], out: AnnotationSet, file: str, line: int | None,
           where: str) -> None:
    trace_id = rec.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id:
        raise InputError("expected the trace id (a string)", file=file, line=line,
                         path=where or None, field="trace_id")
    errors = rec["errors"]
    if not isinstance(errors, list):
        raise InputError("expected a list", file=file, line=line, path=where or None,
                         field="errors")
    out.reviewed.add(norm_trace_id(trace_id))
    for i, err in enumerate(errors):
        epath = f"{where}.errors[{i}]".lstrip(".")
        if not isinstance(err, dict):
            raise InputError("expected an error object", file=file, line=line, path=epath)
        location = err.get("location", err.get("span_id"))
        if not isinstance(location, str) or not location:
            raise InputError("expected the span id of the error", file=file, line=line,
                             path=epath, field="location")
        for name in ("category", "evidence", "description", "impact"):
            if err.get(name) is not None and not isinstance(err[name], str):
                raise InputError("expected a string", file=file, line=line, path=epath,
                                 field=name)
        ann = SpanAnnotation(trace_id=trace_id, span_id=location, category=err.get("category"),
                             evidence=err.get("evidence"), impact=err.get("impact"),
                             description=err.get("description"))
        out.annotations.append(ann)
        out.where[id(ann)] = f"{file}:{line}" if line is not None else f"{file} {epath}"


def _source(ev_md: dict[str, Any] | None, key: str) -> str | None:
    value = (ev_md or {}).get(key)
    return str(value).lower() if value is not None else None


def _target_kind(rubric: str) -> str:
    use = DEFAULT_USES.get(rubric)
    return use.on if use is not None else "tool_call"


@dataclass
class _TraceIndex:
    trace: Trace
    targets: list[int]  # indices of target events
    source: SliceSource
    slices: dict[int, frozenset[int]] = field(default_factory=dict)

    def slice_seqs(self, index: int, budget: int) -> frozenset[int]:
        got = self.slices.get(index)
        if got is None:
            sl = build_slice(self.trace.events, index, budget, self.source)
            got = self.slices[index] = frozenset(int(d["seq"]) for d in sl)
        return got


def _locate(ann: SpanAnnotation, ix: _TraceIndex,
            budget: int) -> tuple[int, int] | str:
    """(target index, evidence seq), or the reason there is none. The events of the span
    itself are tried first, then those of the spans directly inside it."""
    span = ann.span_id.lower()
    events = ix.trace.events
    targets = set(ix.targets)
    found_any = False
    for key in ("source_span_id", "source_parent_span_id"):
        group = [i for i, e in enumerate(events) if _source(e.metadata, key) == span]
        if not group:
            continue
        found_any = True
        direct = next((i for i in group if i in targets), None)
        if direct is not None:
            seq = events[direct].seq
            assert seq is not None
            return direct, seq
        ev_seq = events[group[0]].seq
        assert ev_seq is not None
        for i in ix.targets:
            if i >= group[0] and ev_seq in ix.slice_seqs(i, budget):
                return i, ev_seq
    if not found_any:
        return f"no event of trace {ix.trace.trace_id} came from span {ann.span_id}"
    return (f"the events of span {ann.span_id} are in the slice of no "
            f"{_target_kind(ann.rubric or '')} item after them")


def annotation_labels(annotations: AnnotationSet, traces: Iterable[Trace], *,
                      rubric: str = "scope_fidelity", annotator: str = "annotations",
                      unmarked: Literal["pass"] | None = None,
                      token_budget: int = 2000) -> Mapping:
    """Labels on the items of `rubric` for the annotations whose traces are among `traces`
    (matched by trace id, or the trace's `metadata.source_trace_id`). One label per item and
    annotator: the first annotation that reaches an item gives its evidence, the others add
    their categories."""
    by_trace: dict[str, list[SpanAnnotation]] = {}
    for ann in annotations.annotations:
        by_trace.setdefault(norm_trace_id(ann.trace_id), []).append(ann)
    kind = _target_kind(rubric)
    labels: dict[tuple[str, str], HumanLabel] = {}
    unmatched: list[Unmatched] = []
    seen: set[str] = set()
    for trace in traces:
        keys = {norm_trace_id(trace.trace_id)}
        src = trace.metadata.get("source_trace_id")
        if isinstance(src, str):
            keys.add(norm_trace_id(src))
        anns = [a for k in sorted(keys) for a in by_trace.get(k, [])]
        reviewed = bool(keys & annotations.reviewed)
        if not anns and not (reviewed and unmarked):
            continue
        seen |= keys
        ix = _TraceIndex(trace, [i for i, e in enumerate(trace.events)
                                 if e.kind.value == kind], SliceSource(trace.events))
        for ann in anns:
            if (ann.rubric or rubric) != rubric:
                continue
            found = _locate(ann, ix, token_budget)
            if isinstance(found, str):
                unmatched.append(Unmatched(ann, found))
                continue
            index, evidence = found
            _add(labels, ann, trace, index, evidence, rubric, annotator)
        if unmarked == "pass" and reviewed:
            who = {a.annotator or annotator for a in anns} or {annotator}
            for i in ix.targets:
                seq = trace.events[i].seq
                assert seq is not None
                iid = item_id(trace.trace_id, seq, rubric)
                for name in sorted(who):
                    labels.setdefault((iid, name), HumanLabel(
                        item_id=iid, label="pass", annotator=name, created_at=IMPORTED_AT,
                        metadata={"from": "unmarked step of an annotated trace"}))
    for key, anns in by_trace.items():
        if key not in seen:
            unmatched.extend(Unmatched(a, f"no imported trace has id {a.trace_id}")
                             for a in anns)
    return Mapping(list(labels.values()), unmatched)


def _add(labels: dict[tuple[str, str], HumanLabel], ann: SpanAnnotation, trace: Trace,
         index: int, evidence: int, rubric: str, default_annotator: str) -> None:
    seq = trace.events[index].seq
    assert seq is not None
    iid = item_id(trace.trace_id, seq, rubric)
    who = ann.annotator or default_annotator
    category = [ann.category] if ann.category else []
    old = labels.get((iid, who))
    if old is not None:
        cats = old.metadata.setdefault("categories", [])
        for c in category:
            if c not in cats:
                cats.append(c)
        return
    md: dict[str, Any] = {**ann.metadata, "source_span_id": ann.span_id,
                          "source_trace_id": ann.trace_id, "categories": category}
    if ann.impact:
        md["impact"] = ann.impact
    if ann.evidence:
        md["evidence_text"] = ann.evidence
    note = ann.note or ann.description
    labels[(iid, who)] = HumanLabel(
        item_id=iid, label=ann.label, annotator=who,
        violated_key=ann.violated_key, evidence_event=evidence if ann.label != "pass" else None,
        created_at=ann.created_at or IMPORTED_AT, note=note, metadata=md)


def labels_from_annotations(path: str | Path, trace_files: Sequence[str | Path], *,
                            rubric: str = "scope_fidelity", annotator: str = "annotations",
                            unmarked: Literal["pass"] | None = None) -> Mapping:
    """`annotation_labels` over an annotation file and trace files (.json / .jsonl)."""
    from judge.trace.loader import iter_traces
    annotations = read_annotations(path)

    def traces() -> Iterator[Trace]:
        for f in trace_files:
            yield from iter_traces(f)

    return annotation_labels(annotations, traces(), rubric=rubric, annotator=annotator,
                             unmarked=unmarked)
