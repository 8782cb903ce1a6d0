"""`judge labels import` (issue 9, item 7): every line checked as `judge label` checks a label,
future timestamps refused, all or nothing per file, and idempotent on content with or without
`created_at` — while a genuine relabel still supersedes and one file's pass → fail → pass keeps
its order."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert
from typer.testing import CliRunner

from judge.cli.main import app
from judge.errors import InputError
from judge.formats import HumanLabel
from judge.labels.importing import BadLabelFile, import_labels, read_label_file
from judge.review.labeling import check_label
from judge.store import open_store
from judge.store.db import make_engine
from judge.store.migrations import migrate
from judge.store.rows import label_row
from judge.store.tables import LabelRow

R = "scope_fidelity"
ITEM = f"refund-once/run-1#4:{R}"
OTHER = f"refund-once/run-2#4:{R}"


def stored_item(item_id: str = ITEM) -> dict[str, Any]:
    trace = item_id.split("#")[0]
    return {
        "item_id": item_id, "trace_id": trace, "seq": 4, "turn": 1, "rubric": R,
        "kind": "tool_call", "goal": "Refund once", "safety_critical": False,
        "ledger": {"turn": 1, "active": [{"key": "refundOnce", "value": True}],
                   "superseded": [{"key": "amount", "value": 10}]},
        "events": [{"seq": 1, "turn": 1, "kind": "user", "text": "refund"},
                   {"seq": 4, "turn": 1, "kind": "tool_call", "tool": "refund_order"}],
        "ledger_keys": ["refundOnce", "amount"], "slice_seqs": [1, 4],
    }


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as s:
        s.save_items([stored_item(ITEM), stored_item(OTHER)])
    return url


def write(path: Path, *records: dict[str, Any] | str) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def run(args: list[str], url: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, [*args, "--db", url], env=env)


def stored(url: str) -> list[HumanLabel]:
    with open_store(url) as s:
        return s.labels_for()


def newest(url: str) -> dict[tuple[str, str], HumanLabel]:
    with open_store(url) as s:
        return {(lb.item_id, lb.annotator): lb for lb in s.labels_for(newest_only=True)}


GOOD = {"item_id": ITEM, "label": "pass", "annotator": "asha"}
FAIL = {"item_id": ITEM, "label": "fail", "violated_key": "refundOnce", "evidence_event": 4,
        "annotator": "asha"}

#: one bad line each, what the error must name, and whether `judge label` shares the rule
BAD_LINES: list[tuple[str, dict[str, Any] | str, str]] = [
    ("empty item id", {**GOOD, "item_id": ""}, "item_id"),
    ("not an item id", {**GOOD, "item_id": "just-a-trace"}, "item_id"),
    ("item id without seq", {**GOOD, "item_id": f"t#x:{R}"}, "item_id"),
    ("negative evidence", {**FAIL, "evidence_event": -5}, "evidence_event"),
    ("zero evidence", {**FAIL, "evidence_event": 0}, "evidence_event"),
    ("boolean evidence", {**FAIL, "evidence_event": True}, "evidence_event"),
    ("string evidence", {**FAIL, "evidence_event": "4"}, "evidence_event"),
    ("float evidence", {**FAIL, "evidence_event": 4.5}, "evidence_event"),
    ("fail without key", {**FAIL, "violated_key": None}, "violated_key"),
    ("fail with empty key", {**FAIL, "violated_key": ""}, "violated_key"),
    ("fail without evidence", {**FAIL, "evidence_event": None}, "evidence_event"),
    ("pass with a key", {**GOOD, "violated_key": "refundOnce"}, "violated_key"),
    ("pass with evidence", {**GOOD, "evidence_event": 4}, "evidence_event"),
    ("unsure with a key", {**GOOD, "label": "unsure", "violated_key": "x"}, "violated_key"),
    ("unknown label", {**GOOD, "label": "maybe"}, "label"),
    ("blank annotator", {**GOOD, "annotator": "   "}, "annotator"),
    ("empty annotator", {**GOOD, "annotator": ""}, "annotator"),
    ("no annotator", {k: v for k, v in GOOD.items() if k != "annotator"}, "annotator"),
    ("far future", {**GOOD, "created_at": "9999-12-31T00:00:00Z"}, "created_at"),
    ("an hour ahead", {**GOOD, "created_at": "+3600"}, "created_at"),
    ("key not in the stored ledger", {**FAIL, "violated_key": "nope"}, "violated_key"),
    ("evidence not in the slice", {**FAIL, "evidence_event": 2}, "evidence_event"),
    ("field given twice", '{"item_id": "' + ITEM + '", "label": "fail", "label": "pass", '
                          '"annotator": "asha"}', "label"),
    ("unknown field", {**GOOD, "lable": "pass"}, "lable"),
    ("not an object", "[1, 2]", "label object"),
    ("malformed JSON", '{"item_id": ', "malformed JSON"),
    ("deep nesting", '{"item_id": "' + ITEM + '", "label": "pass", "annotator": "a", '
                     '"metadata": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
]


def _materialize(record: dict[str, Any] | str) -> dict[str, Any] | str:
    if isinstance(record, dict) and record.get("created_at") == "+3600":
        when = datetime.now(UTC) + timedelta(hours=1)
        return {**record, "created_at": when.isoformat()}
    return record


@pytest.mark.parametrize("case", BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_a_bad_line_is_refused_naming_file_line_field_and_nothing_is_stored(
        db: str, tmp_path: Path, case: tuple[str, dict[str, Any] | str, str]) -> None:
    _, record, names = case
    path = write(tmp_path / "labels.jsonl", GOOD, FAIL, _materialize(record), OTHER_GOOD)
    res = run(["labels", "import", str(path)], db)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in res.output
    assert "labels.jsonl:3:" in lines[0] and names in lines[0]
    assert lines[1].endswith("labels.jsonl: 1 bad line; nothing imported")
    assert stored(db) == []  # the two good lines before it are not stored either


OTHER_GOOD = {"item_id": OTHER, "label": "unsure", "annotator": "bo"}


ITEM_LEVEL = ("key not in the stored ledger", "evidence not in the slice")


def test_every_bad_line_is_reported_one_line_each(db: str, tmp_path: Path) -> None:
    """The lines are checked before the database is opened (a bad file opens nothing); the
    new labels are then checked against their stored items, all of them at once."""
    own = [c for c in BAD_LINES if c[0] not in ITEM_LEVEL]
    path = write(tmp_path / "hostile.jsonl", GOOD, *[_materialize(r) for _, r, _ in own],
                 *[r for name, r, _ in BAD_LINES if name in ITEM_LEVEL])
    res = run(["labels", "import", str(path)], db)
    assert res.exit_code == 2 and "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == len(own) + 1
    for n, (line, (_, _, names)) in enumerate(zip(lines, own, strict=False), 2):
        assert f"hostile.jsonl:{n}:" in line and names in line, line
    assert f"{len(own)} bad lines; nothing imported" in lines[-1]
    item_level = write(tmp_path / "items.jsonl", GOOD,
                       *[r for name, r, _ in BAD_LINES if name in ITEM_LEVEL])
    res = run(["labels", "import", str(item_level)], db)
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 3
    assert "items.jsonl:2: field 'violated_key'" in lines[0]
    assert "items.jsonl:3: field 'evidence_event'" in lines[1]
    assert stored(db) == []


def test_a_bad_file_opens_no_database(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", {**GOOD, "label": "maybe"})
    res = CliRunner().invoke(app, ["labels", "import", str(path)])
    assert res.exit_code == 2 and not (tmp_path / "judge.db").exists()


def test_a_long_list_of_bad_lines_is_cut_short(db: str, tmp_path: Path) -> None:
    path = write(tmp_path / "many.jsonl", *[{**GOOD, "label": "maybe"}] * 80)
    res = run(["labels", "import", str(path)], db)
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 52
    assert "… and 30 more bad lines" in lines[-2] and "80 bad lines" in lines[-1]


@pytest.mark.parametrize("args", [
    ["--label", "fail", "--key", "refundOnce"],                      # no evidence
    ["--label", "fail", "--key", "refundOnce", "--evidence", "-5"],  # not a seq
    ["--label", "fail", "--key", "nope", "--evidence", "4"],         # not in the ledger
    ["--label", "fail", "--key", "refundOnce", "--evidence", "2"],   # not in the slice
    ["--label", "pass", "--key", "refundOnce"],                      # a pass names no key
    ["--label", "unsure", "--evidence", "4"],
    ["--label", "maybe"],
])
def test_judge_label_applies_the_same_rules(db: str, tmp_path: Path, args: list[str]) -> None:
    """What `judge label` refuses, an import of the same label refuses, with the same field."""
    res = run(["label", "--item", ITEM, "--annotator", "asha", *args], db)
    assert res.exit_code == 2 and "Traceback" not in res.output
    flags = dict(zip(args[::2], args[1::2], strict=True))
    record: dict[str, Any] = {"item_id": ITEM, "label": flags["--label"], "annotator": "asha"}
    if "--key" in flags:
        record["violated_key"] = flags["--key"]
    if "--evidence" in flags:
        record["evidence_event"] = int(flags["--evidence"])
    imported = run(["labels", "import", str(write(tmp_path / "one.jsonl", record))], db)
    assert imported.exit_code == 2
    field = res.stderr.split("field '")[1].split("'")[0]
    assert f"field '{field}'" in imported.stderr
    assert res.stderr.split(f"field '{field}': ")[1] in imported.stderr
    assert stored(db) == []


@settings(max_examples=300, deadline=None)
@given(label=st.sampled_from(["pass", "fail", "unsure", "maybe", ""]),
       key=st.one_of(st.none(), st.sampled_from(["", "refundOnce", "amount", "nope"])),
       evidence=st.one_of(st.none(), st.integers(-3, 6)),
       annotator=st.sampled_from(["asha", "", " ", "\t"]),
       item_id=st.sampled_from([ITEM, "", "x", f"t#4:{R}", f"#4:{R}", "t#4:"]))
def test_the_rules_accept_exactly_the_well_formed_labels(label: str, key: str | None,
                                                         evidence: int | None, annotator: str,
                                                         item_id: str) -> None:
    """check_label against an independent statement of the rules."""
    item = stored_item() if item_id == ITEM else None
    want = (item_id in (ITEM, f"t#4:{R}") and annotator.strip() != ""
            and label in ("pass", "fail", "unsure")
            and ((label == "fail" and bool(key) and evidence is not None and evidence >= 1
                  and (item is None or (key in ("refundOnce", "amount") and evidence in (1, 4))))
                 or (label != "fail" and key is None and evidence is None)))
    try:
        check_label(item, label, key, evidence, item_id=item_id, annotator=annotator)
        ok = True
    except InputError as exc:
        ok = False
        assert exc.field in ("item_id", "annotator", "label", "violated_key", "evidence_event")
    assert ok == want


# -- timestamps ------------------------------------------------------------------------------

def test_clock_skew_is_a_setting(db: str, tmp_path: Path) -> None:
    soon = (datetime.now(UTC) + timedelta(minutes=4)).isoformat()
    later = (datetime.now(UTC) + timedelta(minutes=10)).isoformat()
    ok = run(["labels", "import", str(write(tmp_path / "a.jsonl",
                                            {**GOOD, "created_at": soon}))], db)
    assert ok.exit_code == 0, ok.output
    path = write(tmp_path / "b.jsonl", {**GOOD, "label": "unsure", "created_at": later})
    refused = run(["labels", "import", str(path)], db)
    assert refused.exit_code == 2 and "field 'created_at'" in refused.stderr
    assert "in the future" in refused.stderr
    assert run(["labels", "import", str(path), "--clock-skew", "900"], db).exit_code == 0
    path = write(tmp_path / "c.jsonl", {**GOOD, "label": "fail", "violated_key": "amount",
                                        "evidence_event": 1, "created_at": soon})
    env = {"JUDGE_LABEL_CLOCK_SKEW_S": "60"}
    assert run(["labels", "import", str(path)], db, env=env).exit_code == 2
    assert run(["labels", "import", str(path)], db, env={"JUDGE_LABEL_CLOCK_SKEW_S": "abc"}
               ).exit_code == 2
    assert len(stored(db)) == 2


def test_a_future_label_cannot_outrank_later_labels(db: str, tmp_path: Path) -> None:
    """The issue's case: a 9999-12-31 label is refused, so a later relabel still wins."""
    bad = write(tmp_path / "bad.jsonl", {**FAIL, "created_at": "9999-12-31T00:00:00Z"})
    assert run(["labels", "import", str(bad)], db).exit_code == 2
    later = write(tmp_path / "later.jsonl", GOOD)
    assert run(["labels", "import", str(later)], db).exit_code == 0
    assert newest(db)[(ITEM, "asha")].label == "pass"


# -- identity --------------------------------------------------------------------------------

def test_the_same_file_twice_adds_nothing_with_or_without_created_at(db: str,
                                                                    tmp_path: Path) -> None:
    path = write(tmp_path / "mixed.jsonl", GOOD,
                 {**OTHER_GOOD, "created_at": "2026-01-02T03:04:05.123456Z"},
                 {**FAIL, "annotator": "bo"}, {**GOOD, "note": "second look"})
    first = run(["labels", "import", str(path)], db)
    assert first.exit_code == 0 and "imported 4 new labels" in first.output
    for _ in range(2):
        again = run(["labels", "import", str(path)], db)
        assert again.exit_code == 0, again.output
        assert "imported 0 new labels" in again.output and "4 already stored" in again.output
    assert len(stored(db)) == 4


def test_pass_fail_pass_in_one_undated_file_keeps_its_order(db: str, tmp_path: Path) -> None:
    path = write(tmp_path / "history.jsonl", GOOD, FAIL, GOOD)
    assert "imported 3 new labels" in run(["labels", "import", str(path)], db).output
    history = [lb.label for lb in stored(db)]
    assert history == ["pass", "fail", "pass"]
    assert newest(db)[(ITEM, "asha")].label == "pass"  # the last line wins
    assert "imported 0 new labels" in run(["labels", "import", str(path)], db).output
    # the same three lines in the other order are another history: pass, fail, pass then
    # fail (its occurrences 1, 1, 2 of pass and fail: one fail is new)
    flipped = write(tmp_path / "flipped.jsonl", FAIL, GOOD, FAIL)
    assert "imported 1 new labels" in run(["labels", "import", str(flipped)], db).output
    assert newest(db)[(ITEM, "asha")].label == "fail"


def test_a_genuine_relabel_supersedes(db: str, tmp_path: Path) -> None:
    first = write(tmp_path / "first.jsonl", GOOD)
    second = write(tmp_path / "second.jsonl", FAIL)
    assert run(["labels", "import", str(first)], db).exit_code == 0
    assert run(["labels", "import", str(second)], db).exit_code == 0
    assert newest(db)[(ITEM, "asha")].label == "fail"
    assert run(["labels", "import", str(first)], db).exit_code == 0  # the same file: nothing
    assert newest(db)[(ITEM, "asha")].label == "fail"
    # a relabel back to pass says so with a time, or with `judge label`
    dated = write(tmp_path / "dated.jsonl", {**GOOD, "created_at": datetime.now(UTC).isoformat()})
    assert "imported 1 new labels" in run(["labels", "import", str(dated)], db).output
    assert newest(db)[(ITEM, "asha")].label == "pass"
    relabel = run(["label", "--item", ITEM, "--label", "fail", "--key", "amount",
                   "--evidence", "1", "--annotator", "asha"], db)
    assert relabel.exit_code == 0, relabel.output
    assert newest(db)[(ITEM, "asha")].violated_key == "amount"


def test_appending_to_a_file_imports_only_the_new_lines(db: str, tmp_path: Path) -> None:
    path = write(tmp_path / "grow.jsonl", GOOD, OTHER_GOOD)
    assert "imported 2 new labels" in run(["labels", "import", str(path)], db).output
    write(path, GOOD, OTHER_GOOD, FAIL)
    assert "imported 1 new labels" in run(["labels", "import", str(path)], db).output
    assert newest(db)[(ITEM, "asha")].label == "fail"


def test_an_export_of_undated_imports_comes_back_as_the_same_labels(db: str,
                                                                     tmp_path: Path) -> None:
    path = write(tmp_path / "undated.jsonl", GOOD, FAIL, GOOD, OTHER_GOOD)
    assert run(["labels", "import", str(path)], db).exit_code == 0
    out = tmp_path / "export.jsonl"
    assert run(["labels", "export", "-o", str(out)], db).exit_code == 0
    back = run(["labels", "import", str(out)], db)
    assert "imported 0 new labels" in back.output and "4 already stored" in back.output
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert "imported 4 new labels" in run(["labels", "import", str(out)], fresh).output
    assert [lb.label for lb in stored(fresh)] == [lb.label for lb in stored(db)]
    assert "imported 0 new labels" in run(["labels", "import", str(path)], db).output


def test_stored_labels_that_do_not_fit_their_item_do_not_block_a_reimport(
        db: str, tmp_path: Path) -> None:
    """A label stored before these rules (or by a script) is history: importing it again
    changes nothing, so it is not refused; a new label is checked."""
    with open_store(db) as s:
        s.add_label(HumanLabel(item_id=ITEM, label="fail", violated_key="legacy",
                               evidence_event=9, annotator="asha"))
    out = tmp_path / "export.jsonl"
    assert run(["labels", "export", "-o", str(out)], db).exit_code == 0
    assert "imported 0 new labels" in run(["labels", "import", str(out)], db).output
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    with open_store(fresh) as s:
        s.save_items([stored_item(ITEM)])
    res = run(["labels", "import", str(out)], fresh)
    assert res.exit_code == 2 and "'legacy' is not a key" in res.stderr


def test_labels_stored_before_the_import_key_keep_working(tmp_path: Path) -> None:
    """A database from before migration 0006: its labels keep their fingerprints, the
    migration adds the column, and importing their export adds nothing."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate(engine, stop_before="0006_label_import_key")
    old = [HumanLabel(item_id=ITEM, label="pass", annotator="asha",
                      created_at=datetime(2026, 1, 1, tzinfo=UTC)),
           HumanLabel(item_id=ITEM, label="fail", violated_key="refundOnce", evidence_event=4,
                      annotator="asha", created_at=datetime(2026, 1, 2, tzinfo=UTC))]
    with engine.begin() as conn:
        for lb in old:
            row = label_row(lb)
            del row["import_key"]  # the column does not exist yet
            conn.execute(insert(LabelRow.__table__), [row])
    engine.dispose()
    assert [lb.label for lb in stored(url)] == ["pass", "fail"]  # opening migrates
    out = tmp_path / "export.jsonl"
    assert run(["labels", "export", "-o", str(out)], url).exit_code == 0
    assert "imported 0 new labels" in run(["labels", "import", str(out)], url).output


def test_both_databases(store_url: str, tmp_path: Path) -> None:
    with open_store(store_url) as s:
        s.save_items([stored_item(ITEM)])
    path = write(tmp_path / "l.jsonl", GOOD, FAIL, GOOD, OTHER_GOOD)
    assert "imported 4 new labels" in run(["labels", "import", str(path)], store_url).output
    assert "imported 0 new labels" in run(["labels", "import", str(path)], store_url).output
    bad = write(tmp_path / "bad.jsonl", {**GOOD, "annotator": "zed"}, {**FAIL, "evidence_event": 3})
    assert run(["labels", "import", str(bad)], store_url).exit_code == 2
    assert len(stored(store_url)) == 4
    assert newest(store_url)[(ITEM, "asha")].label == "pass"


# -- properties ------------------------------------------------------------------------------

_LINE = st.fixed_dictionaries(
    {"item_id": st.sampled_from([ITEM, OTHER, f"elsewhere#2:{R}"]),
     "label": st.sampled_from(["pass", "unsure", "fail"]),
     "annotator": st.sampled_from(["asha", "bo"])},
    optional={"note": st.sampled_from(["", "why", "ü ✓"]),
              "created_at": st.datetimes(min_value=datetime(2020, 1, 1),
                                         max_value=datetime(2026, 1, 1),
                                         timezones=st.just(UTC)).map(datetime.isoformat)})


def _valid(line: dict[str, Any]) -> dict[str, Any]:
    if line["label"] == "fail":
        return {**line, "violated_key": "amount", "evidence_event": 1}
    return line


def _expected_new(lines: list[dict[str, Any]], before: list[dict[str, Any]]) -> int:
    """Lines of `lines` a store holding `before` lacks: every undated line (its occurrence
    numbers follow the earlier lines'), and each distinct dated line not stored yet."""
    known = {json.dumps(x, sort_keys=True) for x in before if "created_at" in x}
    dated = {json.dumps(x, sort_keys=True) for x in lines if "created_at" in x} - known
    return len(dated) + sum(1 for x in lines if "created_at" not in x)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE.map(_valid), max_size=12),
       tail=st.lists(_LINE.map(_valid), max_size=4))
def test_reimporting_any_file_adds_nothing_and_the_last_undated_line_wins(
        tmp_path_factory: pytest.TempPathFactory, lines: list[dict[str, Any]],
        tail: list[dict[str, Any]]) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    with open_store(f"sqlite:///{tmp / 'j.db'}") as s:
        s.save_items([stored_item(ITEM), stored_item(OTHER)])
        path = write(tmp / "l.jsonl", *lines)
        assert import_labels(s, path).added == _expected_new(lines, [])
        assert import_labels(s, path).added == 0
        write(path, *lines, *tail)  # lines appended to the file: only they can be new
        assert import_labels(s, path).added == _expected_new(tail, lines)
        assert import_labels(s, path).added == 0
        last = {(x["item_id"], x["annotator"]): x for x in [*lines, *tail]
                if "created_at" not in x}  # undated lines are stamped after every dated one
        now = {(lb.item_id, lb.annotator): lb for lb in s.labels_for(newest_only=True)}
        for pair, line in last.items():
            assert (now[pair].label, now[pair].note) == (line["label"], line.get("note"))


def test_read_label_file_stamps_undated_lines_in_order(tmp_path: Path) -> None:
    at = datetime(2026, 5, 1, tzinfo=UTC)
    got = read_label_file(write(tmp_path / "l.jsonl", GOOD, {**OTHER_GOOD, "created_at":
                                                             "2026-01-01T00:00:00"}, FAIL),
                          now=at)
    assert [lb.created_at for lb in got.labels] == [
        at, datetime(2026, 1, 1, tzinfo=UTC), at + timedelta(microseconds=1)]
    assert got.import_keys[1] is None and got.import_keys[0] != got.import_keys[2]
    assert got.lines == [1, 2, 3]
    with pytest.raises(BadLabelFile) as info:
        read_label_file(write(tmp_path / "f.jsonl", {**GOOD, "created_at":
                                                     "2026-05-01T00:06:00Z"}), now=at)
    assert info.value.errors[0].field == "created_at"
    assert read_label_file(tmp_path / "f.jsonl", now=at, max_skew_s=600).labels


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**20) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)
_FIELDS = ["item_id", "label", "violated_key", "evidence_event", "annotator", "created_at",
           "note", "metadata"]
_HOSTILE_LINE = st.one_of(
    st.text(max_size=60),
    _JSON.map(json.dumps),
    st.dictionaries(st.sampled_from([*_FIELDS, "extra"]),
                    st.one_of(_JSON, st.sampled_from([ITEM, "pass", "fail", "unsure", "asha",
                                                      "refundOnce", 4, "2026-01-01T00:00:00Z",
                                                      "9999-01-01T00:00:00Z"])),
                    max_size=8).map(json.dumps),
    st.builds(lambda line: {**GOOD, **line}, st.dictionaries(
        st.sampled_from(_FIELDS), _JSON, max_size=2)).map(json.dumps))


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_HOSTILE_LINE, min_size=1, max_size=6),
       raw=st.binary(max_size=40))
def test_any_file_is_imported_whole_or_refused_whole(tmp_path_factory: pytest.TempPathFactory,
                                                     lines: list[str], raw: bytes) -> None:
    """Whatever a labels file holds: no exception but InputError, and either every line is
    a stored label afterwards or nothing was stored."""
    tmp = tmp_path_factory.mktemp("hostile")
    path = tmp / "l.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n" + raw)
    with open_store(f"sqlite:///{tmp / 'j.db'}") as s:
        s.save_items([stored_item(ITEM)])
        try:
            result = import_labels(s, path)
        except BadLabelFile as exc:
            assert exc.errors and all(e.file == str(path) and e.line for e in exc.errors)
            assert s.count_labels() == 0
            return
        except InputError as exc:  # the file as a whole (not UTF-8 at all, …)
            assert s.count_labels() == 0 and str(path) in exc.message
            return
        assert s.count_labels() == result.added
        n_lines = sum(1 for x in path.read_bytes().split(b"\n") if x.decode("utf-8").strip())
        assert result.read == n_lines
