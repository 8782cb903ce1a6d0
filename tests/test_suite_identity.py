"""Configured identity patterns reach the renderer in `judge run`: no request names them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from judge.cli.main import app
from judge.testing.fakeserver import FakeProviderServer

ROOT = Path(__file__).resolve().parent.parent


def test_identity_patterns_from_settings_are_scrubbed(tmp_path: Path) -> None:
    trace = json.loads((ROOT / "examples/scenarios/refund-once/pass.json").read_text())
    trace["candidate"] = {}
    for ev in trace["events"]:
        if ev.get("kind") in ("user", "assistant") and ev.get("text"):
            ev["text"] += " (sent by AcmeBot-7 running on model zz-ultra-9)"
    (tmp_path / "t.json").write_text(json.dumps(trace))
    suite = tmp_path / "s.yaml"
    suite.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(ROOT / "examples/scenarios/refund-once"),
                       "traces": [str(tmp_path / "t.json")]}]}}}))
    (tmp_path / "judge.toml").write_text(
        '[judge]\nidentity_patterns = ["acmebot-\\\\d+", "zz-ultra\\\\S*"]\n')
    with FakeProviderServer() as srv:
        result = CliRunner().invoke(app, [
            "run", str(suite), "--allow-outside", "--model", "openai:fake-judge", "--db",
            f"sqlite:///{tmp_path / 'j.db'}"], env={"OPENAI_BASE_URL": srv.openai_base_url})
        assert result.exit_code in (0, 1), result.stderr
        bodies = [json.dumps(r.body) for r in srv.generations()]
    assert bodies
    for body in bodies:
        assert "AcmeBot" not in body and "acmebot" not in body.lower()
        assert "zz-ultra" not in body
