"""`judge review …` and `judge labels export|import` against both databases."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.pipeline.route import route_and_save
from judge.routing import RoutingPolicy
from judge.store import open_store

R = "scope_fidelity"


def invoke(args: list[str], url: str):
    return CliRunner().invoke(app, [*args, "--db", url])


def seed(url: str, n: int = 4, double_share: float = 0.0) -> list[str]:
    ids = [f"t{i}#2:{R}" for i in range(n)]
    with open_store(url) as s:
        s.save_items([{"item_id": iid, "trace_id": f"t{i}", "seq": 2, "turn": 1, "rubric": R,
                       "kind": "tool_call", "safety_critical": i == n - 1}
                      for i, iid in enumerate(ids)])
        route_and_save(s, [Verdict(item_id=iid, label="pass", confidence=0.5 + i / 100,
                                 rubric=R, prompt_hash="sha256:p", model="m")
                         for i, iid in enumerate(ids)], s.save_run(),
                        policy=RoutingPolicy(double_share=double_share))
    return ids


def test_review_list_next_release_stats(store_url: str) -> None:
    ids = seed(store_url)
    listed = invoke(["review", "list", "--format", "json"], store_url)
    assert listed.exit_code == 0, listed.output
    order = [e["item_id"] for e in json.loads(listed.output)]
    assert order == [ids[3], ids[0], ids[1], ids[2]]  # safety-critical first, then confidence
    nxt = invoke(["review", "next", "--annotator", "asha", "--format", "json"], store_url)
    assert json.loads(nxt.output)["item_id"] == ids[3]
    text = invoke(["review", "next", "--annotator", "bo"], store_url)
    assert text.output.startswith(ids[0]) and "claimed by bo" in text.output
    wrong = invoke(["review", "release", ids[3], "--annotator", "bo"], store_url)
    assert wrong.exit_code == 1 and "not claimed by bo" in wrong.output
    ok = invoke(["review", "release", ids[3], "--annotator", "asha"], store_url)
    assert ok.exit_code == 0
    stats = json.loads(invoke(["review", "stats", "--format", "json"], store_url).output)
    assert stats["by_state"] == {"open": 3, "claimed": 1, "done": 0}
    assert stats["pending_by_reason"] == {"uncalibrated": 4}
    assert stats["human_human"] is None
    assert invoke(["review", "release", "nope#1:r"], store_url).exit_code == 2
    assert invoke(["review", "next"], store_url).exit_code == 2  # no annotator
    assert invoke(["review", "list", "--state", "weird"], store_url).exit_code == 2


def test_human_human_agreement_on_double_labels(store_url: str) -> None:
    ids = seed(store_url, n=6, double_share=1.0)
    with open_store(store_url) as s:
        for k, iid in enumerate(ids):
            s.add_label(HumanLabel(item_id=iid, label="pass", annotator="asha"))
            s.add_label(HumanLabel(item_id=iid, label="pass" if k < 4 else "fail",
                                   annotator="bo"))
            s.add_label(HumanLabel(item_id=iid, label="fail" if k == 0 else "pass",
                                   annotator="asha", note="changed my mind"))
        assert s.queue.stats()["double_labelled"] == {"items": 6, "done": 6}
    out = invoke(["review", "stats", "--format", "json"], store_url)
    hh = json.loads(out.output)["human_human"]
    # newest labels: asha = [f,p,p,p,p,p], bo = [p,p,p,p,f,f] -> agree on 3 of 6
    assert hh["n_items"] == 6 and hh["n_annotators"] == 2
    assert abs(hh["percent_agreement"] - 0.5) < 1e-9
    assert hh["cohen_kappa"] is not None
    text = invoke(["review", "stats"], store_url)
    assert "human–human agreement on 6 items" in text.output


def test_labels_export_import_round_trip_is_idempotent(store_url: str, tmp_path) -> None:
    seed(store_url, n=2)
    with open_store(store_url) as s:
        s.add_label(HumanLabel(item_id=f"t0#2:{R}", label="fail", violated_key="k",
                               evidence_event=2, annotator="asha", note="dup"))
        s.add_label(HumanLabel(item_id=f"t0#2:{R}", label="pass", annotator="asha"))
        s.add_label(HumanLabel(item_id=f"t1#2:{R}", label="unsure", annotator="bo"))
    out = tmp_path / "labels.jsonl"
    res = invoke(["labels", "export", "-o", str(out)], store_url)
    assert res.exit_code == 0 and "wrote 3 labels" in res.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["label"] for x in lines] == ["fail", "pass", "unsure"]
    assert set(lines[0]) >= {"item_id", "label", "violated_key", "evidence_event", "annotator",
                             "created_at", "note"}
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    first = invoke(["labels", "import", str(out)], fresh)
    assert first.exit_code == 0 and "imported 3 new labels" in first.output
    second = invoke(["labels", "import", str(out)], fresh)
    assert "imported 0 new labels" in second.output and "3 already stored" in second.output
    with open_store(fresh) as s:
        assert len(s.labels_for()) == 3
        newest = {lb.item_id: lb.label for lb in s.labels_for(newest_only=True)}
        assert newest == {f"t0#2:{R}": "pass", f"t1#2:{R}": "unsure"}
    again = invoke(["labels", "import", str(out)], store_url)  # back into the source
    assert "imported 0 new labels" in again.output


def test_import_bad_line_writes_nothing(store_url: str, tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = {"item_id": "a#1:r", "label": "pass", "annotator": "asha",
            "created_at": "2026-11-29T10:00:00Z"}
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "label": "maybe"}) + "\n")
    res = invoke(["labels", "import", str(bad)], store_url)
    assert res.exit_code == 2 and "bad.jsonl:2" in res.output and "label" in res.output
    with open_store(store_url) as s:
        assert s.count_labels() == 0
