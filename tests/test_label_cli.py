"""`judge label`: blind by default, keys p/f/u/s/z/q, fail asks key and evidence; scripted form."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import Verdict
from judge.pipeline.route import route_and_save
from judge.routing import RoutingPolicy
from judge.store import Store, open_store

R = "scope_fidelity"
RATIONALE = "the judge thinks this is a duplicate refund"


def item(n: int, safety: bool = False) -> dict:
    tid = f"refund-once/run-{n}"
    return {
        "item_id": f"{tid}#4:{R}", "trace_id": tid, "seq": 4, "turn": 1, "rubric": R,
        "kind": "tool_call", "goal": f"Refund order-{n} once", "safety_critical": safety,
        "ledger": {"turn": 1,
                   "active": [{"key": "refundOnce", "value": True, "class": "constraint",
                               "sensitivity": "safety-critical"},
                              {"key": "orderId", "value": f"order-{n}", "class": "mutable_fact",
                               "sensitivity": "normal"}],
                   "completed": [], "superseded": [{"key": "amount", "value": 10,
                                                    "class": "mutable_fact",
                                                    "sensitivity": "costly"}]},
        "events": [{"seq": 1, "turn": 1, "kind": "user", "text": f"Please refund order-{n}."},
                   {"seq": 3, "turn": 1, "kind": "tool_result", "tool": "get_order",
                    "result": {"paidCents": 4200}},
                   {"seq": 4, "turn": 1, "kind": "tool_call", "tool": "refund_order",
                    "args": {"orderId": f"order-{n}"}}],
        "target": {"seq": 4, "kind": "tool_call", "tool": "refund_order"},
        "ledger_keys": ["refundOnce", "orderId", "amount"], "slice_seqs": [1, 3, 4],
    }


@pytest.fixture
def db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as s:
        s.save_items([item(1, safety=True), item(2), item(3)])
        run = s.save_run()
        route_and_save(s, [Verdict(item_id=item(n)["item_id"], label="fail",
                                 violated_key="refundOnce", evidence_event=4,
                                 confidence=0.3 + n / 10, rationale=RATIONALE, rubric=R,
                                 prompt_hash="sha256:p", model="heuristic")
                         for n in (1, 2, 3)], run, policy=RoutingPolicy(double_share=0.0))
    return url


def invoke(args: list[str], url: str, input: str | None = None):
    return CliRunner().invoke(app, [*args, "--db", url], input=input)


def labels(url: str) -> list:
    with open_store(url) as s:
        return s.labels_for()


def test_scripted_label_validates_against_the_item(db: str) -> None:
    iid = item(2)["item_id"]
    ok = invoke(["label", "--item", iid, "--label", "fail", "--key", "refundOnce",
                 "--evidence", "4", "--annotator", "asha", "--note", "dup"], db)
    assert ok.exit_code == 0, ok.output
    [lb] = labels(db)
    assert (lb.item_id, lb.label, lb.violated_key, lb.evidence_event, lb.annotator, lb.note) \
        == (iid, "fail", "refundOnce", 4, "asha", "dup")
    bad_key = invoke(["label", "--item", iid, "--label", "fail", "--key", "nope",
                      "--annotator", "asha"], db)
    assert bad_key.exit_code == 2 and "'nope' is not a key" in bad_key.output
    bad_ev = invoke(["label", "--item", iid, "--label", "fail", "--key", "orderId",
                     "--evidence", "2", "--annotator", "asha"], db)
    assert bad_ev.exit_code == 2 and "event 2 is not in this item's trace slice" in bad_ev.output
    no_key = invoke(["label", "--item", iid, "--label", "fail", "--annotator", "asha"], db)
    assert no_key.exit_code == 2 and "needs the violated ledger key" in no_key.output
    unknown = invoke(["label", "--item", "x#1:r", "--label", "pass", "--annotator", "a"], db)
    assert unknown.exit_code == 2 and "unknown item" in unknown.output
    assert len(labels(db)) == 1  # nothing written by the failures


def test_annotator_from_environment_or_refusal(db: str, monkeypatch) -> None:
    iid = item(3)["item_id"]
    missing = invoke(["label", "--item", iid, "--label", "pass"], db)
    assert missing.exit_code == 2 and "JUDGE_ANNOTATOR" in missing.output
    monkeypatch.setenv("JUDGE_ANNOTATOR", "bo")
    assert invoke(["label", "--item", iid, "--label", "pass"], db).exit_code == 0
    assert labels(db)[0].annotator == "bo"


def test_interactive_is_blind_by_default_and_labels_in_queue_order(db: str) -> None:
    # item 1 is safety-critical: first. p for it, f (key 1, evidence default 4, note) for
    # item 2, then q while item 3 is shown.
    res = invoke(["label", "--annotator", "asha"], db, input="p\n\nf\n1\n\nlooks wrong\nq\n")
    assert res.exit_code == 0, res.output
    out = res.output
    assert "item 1 of 3" in out and "item 2 of 3" in out and "item 3 of 3" in out
    assert "Refund order-1 once" in out and "refundOnce" in out and "safety-critical" in out
    assert "superseded" in out and "refund_order" in out
    assert "the judge thinks" not in out and "judge (revealed)" not in out  # blind
    got = labels(db)
    assert [(lb.item_id, lb.label, lb.violated_key, lb.evidence_event, lb.note) for lb in got] \
        == [(item(1)["item_id"], "pass", None, None, None),
            (item(2)["item_id"], "fail", "refundOnce", 4, "looks wrong")]
    with open_store(db) as s:  # quitting gave item 3 back
        entry = s.queue.get(item(3)["item_id"])
        assert entry.state == "open" and entry.claimed_by is None


def test_show_judge_skip_and_undo(db: str) -> None:
    # s skips item 1; p labels item 2; z goes back to item 2; u relabels it; then nothing
    # but the skipped item is left for this session... q.
    res = invoke(["label", "--annotator", "bo", "--show-judge"], db,
                 input="s\np\n\nz\nu\n\nq\n")
    assert res.exit_code == 0, res.output
    assert "the judge thinks this is a" in res.output  # revealed
    assert "back to" in res.output
    got = labels(db)
    assert [(lb.item_id, lb.label) for lb in got] == [(item(2)["item_id"], "pass"),
                                                      (item(2)["item_id"], "unsure")]
    with open_store(db) as s:
        assert s.queue.get(item(1)["item_id"]).state == "open"  # skipped, given back
        newest = s.labels_for(newest_only=True)
        assert [lb.label for lb in newest] == ["unsure"]  # the undo's relabel supersedes


def test_interactive_rejects_unknown_keys_and_empty_queue(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    res = invoke(["label", "--annotator", "asha"], url)
    assert res.exit_code == 0 and "nothing left to label" in res.output


def test_labelled_item_leaves_the_queue(db: str) -> None:
    invoke(["label", "--annotator", "cy"], db, input="p\n\np\n\np\n\n")
    with open_store(db) as s:
        assert s.queue.stats()["by_state"]["done"] == 3
        assert isinstance(s, Store)


def test_end_of_input_gives_the_claim_back(db: str) -> None:
    res = invoke(["label", "--annotator", "dee"], db, input="p\n\n")  # then input ends
    assert res.exit_code == 0, res.output
    assert "stopped; 1 labelled this session" in res.output
    with open_store(db) as s:
        assert s.queue.stats()["by_state"] == {"open": 2, "claimed": 0, "done": 1}
