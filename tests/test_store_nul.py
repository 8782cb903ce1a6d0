"""U+0000 in stored text. PostgreSQL's text types cannot hold it, so a judge whose rationale
held one (echoing a trace's bytes) used to fail the store write there and end the run with
exit 2. On PostgreSQL the store now writes U+FFFD in its place, in every text parameter of
every statement (so a lookup by the same value finds the row); SQLite keeps the character.
JSON columns never see a raw NUL: JSON text escapes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.providers.scripted import default_verdict
from judge.store import open_store
from judge.testing.fakeserver import FakeProviderServer
from judge.testing.faults import FakeRequest

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
NUL_TEXT = "before\x00after"


def test_text_with_nul_is_stored_on_both_backends(store_url: str) -> None:
    item = "t/nul#1:scope_fidelity"
    with open_store(store_url) as store:
        run = store.save_run(config={"note": NUL_TEXT})
        store.save_verdicts([Verdict(item_id=item, label="pass", confidence=0.9,
                                     rationale=NUL_TEXT, raw_completion=NUL_TEXT,
                                     metadata={"x": NUL_TEXT})], run)
        store.add_labels([HumanLabel(item_id=item, label="pass", annotator="asha",
                                     note=NUL_TEXT, created_at="2026-11-29T10:00:00Z")])
        (v,) = store.run_verdicts(run)
        (lab,) = store.labels_for(rubric="scope_fidelity")
        config = store.get_run(run)["config"]  # type: ignore[index]
    expected = NUL_TEXT if store_url.startswith("sqlite") else "before\ufffdafter"
    assert v.rationale == expected and v.raw_completion == expected
    assert lab.note == expected
    assert v.metadata["x"] == NUL_TEXT and config["note"] == NUL_TEXT  # JSON keeps it escaped


@pytest.mark.postgres
def test_a_judge_that_echoes_a_nul_does_not_end_the_run_on_postgres(pg_url: str) -> None:
    def answer(req: FakeRequest) -> dict[str, object]:
        reply = default_verdict(req.schema)
        reply["rationale"] = "the tool printed \x00 and nothing else"
        return reply

    with FakeProviderServer(responder=answer) as srv:
        result = CliRunner().invoke(app, [
            "grade", str(REFUND), str(REFUND / "pass.json"), "--model", "openai:judge",
            "--base-url", srv.openai_base_url, "--db", pg_url, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    with open_store(pg_url) as store:
        assert store.count_verdicts() >= 1
