"""`judge labels import`: a labels file checked line by line, then stored all or nothing.

**Validation.** Every line is checked like a label made with `judge label`, by the same
function (judge.review.labeling.check_label): an item id `<trace_id>#<seq>:<rubric>`, a
non-blank annotator, pass/fail/unsure, a fail with its violated key and evidence event (a
positive seq), a pass or unsure with neither; and, when the item is stored, a key of its
ledger snapshot and a seq of its slice. Values are not coerced (`"5"` and `true` are not
seqs) and a field given twice in one record is an error. The lines are checked before the
database is opened (a bad file opens nothing), then the file's new labels against their
stored items; each pass reports every bad line. A `created_at` more than the
allowed clock skew (`label_clock_skew_s`, 5 minutes by default) ahead of this machine's
clock is refused: labels are ordered by time, so a label dated 9999-12-31 would outrank
every later label of its annotator for good.

**All or nothing per file.** Every bad line is reported (file, line, field) and then
nothing of the file is stored. A labels file is one unit of review (usually a commit under
labels/ in git); storing the good lines of a half-bad file would leave a history with holes
that nobody decided on, and since importing is idempotent, fixing the bad lines and
importing the whole file again adds exactly what is new.

**Identity: importing a file again adds nothing.** A line with `created_at` is the label
event (content, time): its store fingerprint (judge.store.rows.label_fingerprint) is the same
however often it is imported, and an exported label (which always carries its time) comes
back as the label it was. A line without `created_at` has no time to be identified by; it is
stamped with the import's clock and identified by its **content and occurrence**: the
k-th line of this file in which this annotator gives this item this label (key, evidence,
note) has the import key `(item, annotator, label, key, evidence, note, k)`. So:

- the same file imported twice adds nothing, with or without `created_at`: every line's
  fingerprint or import key is already stored;
- a genuine relabel (the same item and annotator, a different label later: another line,
  another file, `judge label`) has another content, hence another identity, and is stored
  with a later time, so it supersedes;
- pass → fail → pass by one annotator in one undated file are three identities (the two
  passes are occurrences 1 and 2), stamped in line order a microsecond apart, so the last
  line wins; appending lines to a file and importing it again adds only the new lines.

The one thing an undated line cannot say is "the same label as an earlier import, again":
an undated file holding only "asha: pass" is the same file whether it is imported before
or after another file's "asha: fail", so it adds nothing the second time. Give such a
relabel a `created_at` (or use `judge label`). Import keys are stored beside the
fingerprint (migration 0006); labels stored before it keep their fingerprints unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.errors import InputError
from judge.formats import HumanLabel
from judge.labels.files import at_line, iter_labels
from judge.review.labeling import check_label

if TYPE_CHECKING:
    from judge.store import Store

#: how far ahead of this machine's clock a label's `created_at` may be (Settings default)
DEFAULT_CLOCK_SKEW_S = 300.0
IMPORT_KEY_VERSION = "judge-label-import-v1"


class BadLabelFile(InputError):
    """A labels file with bad lines: `errors` holds one InputError per bad line (file, line,
    field); nothing of the file was stored."""

    def __init__(self, file: str, errors: Sequence[InputError]) -> None:
        self.errors = list(errors)
        n = len(self.errors)
        super().__init__(f"{n} bad line{'s' if n != 1 else ''}; nothing imported", file=file)


@dataclass
class LabelFile:
    """A labels file read and checked: its labels (undated lines stamped), each label's
    import key (None for a dated line) and line number."""

    file: str
    labels: list[HumanLabel] = field(default_factory=list)
    import_keys: list[str | None] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult:
    file: str
    read: int
    added: int

    @property
    def already_stored(self) -> int:
        return self.read - self.added


def import_key(label: HumanLabel, occurrence: int) -> str:
    """The identity of an undated line: its content and its occurrence (1, 2, …) among the
    file's undated lines with that content."""
    ident = [IMPORT_KEY_VERSION, label.item_id, label.annotator, label.label,
             label.violated_key, label.evidence_event, label.note, occurrence]
    return "sha256:" + hashlib.sha256(json.dumps(ident).encode("utf-8")).hexdigest()


def read_label_file(path: str | Path, *, now: datetime | None = None,
                    max_skew_s: float = DEFAULT_CLOCK_SKEW_S) -> LabelFile:
    """Read and check every line (not against stored items: `check_items`). Undated lines
    are stamped `now` plus one microsecond per undated line before them. BadLabelFile
    naming every bad line."""
    file = str(path)
    now = now or datetime.now(UTC)
    latest = now + timedelta(seconds=max_skew_s)
    errors: list[InputError] = []
    out = LabelFile(file)
    seen: Counter[tuple[Any, ...]] = Counter()
    undated = 0
    for lineno, label in iter_labels(path, errors=errors, strict=True, check=_check_record):
        key: str | None = None
        if "created_at" in label.model_fields_set:
            if label.created_at > latest:
                errors.append(InputError(
                    f"{label.created_at.isoformat()} is in the future (more than "
                    f"{max_skew_s:g} s ahead of this machine's clock, {now.isoformat()}); "
                    "a future label would outrank every later label of its annotator",
                    file=file, line=lineno, field="created_at"))
                continue
        else:
            content = (label.item_id, label.annotator, label.label, label.violated_key,
                       label.evidence_event, label.note)
            seen[content] += 1
            key = import_key(label, seen[content])
            label = label.model_copy(
                update={"created_at": now + timedelta(microseconds=undated)})
            undated += 1
        out.labels.append(label)
        out.import_keys.append(key)
        out.lines.append(lineno)
    if errors:
        raise BadLabelFile(file, errors)
    return out


def check_items(labels: LabelFile, items: Mapping[str, dict[str, Any]],
                skip: Sequence[bool] | None = None) -> None:
    """Check each label against its stored item (the ledger keys and slice seqs shown):
    BadLabelFile naming every line that does not fit. Labels of items not stored pass, and
    so do the labels `skip` marks (already stored: importing them changes nothing)."""
    errors: list[InputError] = []
    skip = skip if skip is not None else [False] * len(labels.labels)
    for label, lineno, stored in zip(labels.labels, labels.lines, skip, strict=True):
        item = items.get(label.item_id)
        if item is None or stored:
            continue
        try:
            check_label(item, label.label, label.violated_key, label.evidence_event,
                        item_id=label.item_id, annotator=label.annotator)
        except InputError as exc:
            errors.append(at_line(exc, labels.file, lineno))
    if errors:
        raise BadLabelFile(labels.file, errors)


def store_labels(store: Store, labels: LabelFile) -> ImportResult:
    """Check the file's new labels against their stored items, then store them in one
    transaction. BadLabelFile (nothing stored) when a new label does not fit its item."""
    stored = store.labels_stored(labels.labels, import_keys=labels.import_keys)
    new = {lb.item_id for lb, known in zip(labels.labels, stored, strict=True) if not known}
    check_items(labels, store.get_items(new), stored)
    added = store.add_labels(labels.labels, import_keys=labels.import_keys)
    return ImportResult(labels.file, len(labels.labels), added)


def import_labels(store: Store, path: str | Path, *, now: datetime | None = None,
                  max_skew_s: float = DEFAULT_CLOCK_SKEW_S) -> ImportResult:
    """`read_label_file`, then `store_labels`: the whole of `judge labels import`."""
    return store_labels(store, read_label_file(path, now=now, max_skew_s=max_skew_s))


def _check_record(obj: dict[str, Any]) -> None:
    """`check_label` on a record as read, before the schema: the same rules and messages as
    `judge label`. Values of the wrong type are left to the schema, which names them."""
    item_id, annotator, label = obj.get("item_id"), obj.get("annotator"), obj.get("label")
    key, evidence = obj.get("violated_key"), obj.get("evidence_event")
    if not all(isinstance(v, str) for v in (item_id, annotator, label)):
        return
    if key is not None and not isinstance(key, str):
        return
    if evidence is not None and (type(evidence) is not int):
        return
    assert isinstance(item_id, str) and isinstance(annotator, str) and isinstance(label, str)
    check_label(None, label, key, evidence, item_id=item_id, annotator=annotator)
