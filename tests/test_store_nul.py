"""NUL (U+0000) from a trace or a judge's reply on both backends: PostgreSQL's text columns
cannot hold it, SQLite can. A trace id with NUL is bad input everywhere (it would become part
of item ids); a judge's free text with NUL is kept with U+FFFD in its place; a label with
NUL in a field is a bad line. Found by the judge serve hostile probe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from judge.cli.main import app
from judge.store import open_store

ROOT = Path(__file__).resolve().parents[1]
REFUND = ROOT / "examples" / "scenarios" / "refund-once"


def _grade(tmp_path: Path, store_url: str, trace: dict[str, Any], rationale: str) -> Any:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    reply = {"label": "pass", "violated_key": None, "evidence_event": None,
             "confidence": 0.9, "rationale": rationale}
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps(reply) + "\n")
    return CliRunner().invoke(app, ["grade", str(REFUND), str(path), "--model",
                                    f"scripted:{replies}", "--db", store_url,
                                    "--format", "json"])


def test_a_reply_and_trace_text_with_nul_are_graded_and_stored(store_url: str,
                                                               tmp_path: Path) -> None:
    trace = json.loads((REFUND / "pass.json").read_text())
    trace["events"][0]["text"] = trace["events"][0]["text"] + "\x00 and more"
    result = _grade(tmp_path, store_url, trace, "fine\x00really")
    assert result.exit_code in (0, 1), (result.stdout, result.stderr)
    with open_store(store_url) as st:
        verdicts = [v for v in st.verdicts_for(None) if v.rationale]
    assert verdicts and all("\x00" not in (v.rationale or "") for v in verdicts)
    assert any(v.rationale == "fine\ufffdreally" for v in verdicts)


def test_a_trace_id_with_nul_is_bad_input(store_url: str, tmp_path: Path) -> None:
    trace = json.loads((REFUND / "pass.json").read_text())
    trace["trace_id"] = "nul\x00trace"
    result = _grade(tmp_path, store_url, trace, "fine")
    assert result.exit_code == 2
    assert "trace_id" in result.stderr and "Traceback" not in result.stderr


def test_a_label_with_nul_is_a_bad_line(tmp_path: Path) -> None:
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"item_id": "t#1:scope_fidelity", "label": "pass",
                                  "annotator": "asha", "note": "a\x00b"}) + "\n")
    result = CliRunner().invoke(app, ["labels", "import", str(labels), "--db",
                                      f"sqlite:///{tmp_path / 'j.db'}"])
    assert result.exit_code == 2 and "NUL" in result.stderr
