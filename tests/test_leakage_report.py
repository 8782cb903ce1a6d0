"""A suite run clusters state leakage apart from drift (issue 27): in the summary (each
cluster's family, a leaking trace clustered by its first leak), and in the text, Markdown and
HTML reports (a section of its own)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from judge.cli.main import app
from judge.suite.cluster import cluster_failures, family_of, signature_of
from judge.suite.outcome import TraceOutcome

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "scenarios" / "tenant-sessions"


def _judge(*args: str | Path) -> tuple[int, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout


def _drift_then_leak(base: Path) -> Path:
    """fail-carryover, with the other tenant's order also in its last reply: it drifts
    first (seq 11) and leaks later (seq 16)."""
    doc = json.loads((EXAMPLE / "fail-carryover.json").read_text())
    doc["trace_id"] = "tenant-sessions/drift-then-leak"
    doc["events"][-1]["text"] += " Lee Chen's order ORD-88412 is on the same van."
    out = base / "scenarios" / "tenant-sessions" / "drift-then-leak.json"
    out.write_text(json.dumps(doc))
    return out


def _suite(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "scenarios" / "tenant-sessions")
    _drift_then_leak(tmp_path)
    doc = {"suites": {"nightly": {
        "rubrics": ["scope_fidelity", "reply_fidelity", "memory_fidelity"],
        "scenarios": [{"scenario": "scenarios/tenant-sessions",
                       "traces": ["scenarios/tenant-sessions/*.json"]}],
        "release": {"max_review_share": 1.0, "min_scenario_pass_rate": 0.0}}}}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(doc))
    return suite


def test_a_run_clusters_leakage_apart_from_drift(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    code, out = _judge("run", _suite(tmp_path), "--format", "json", "--db", url)
    assert code == 1, out
    s = json.loads(out)
    by_sig = {c["signature"]: c for c in s["clusters"]}
    leaks = {k: c for k, c in by_sig.items() if c["family"] == "leakage"}
    assert set(leaks) == {"state_leakage:globex-grocers@reply:turn3:unsafe",
                          "state_leakage:globex-grocers@memory_write:turn3:unsafe"}
    reply = leaks["state_leakage:globex-grocers@reply:turn3:unsafe"]
    # the trace that drifted first is clustered by its leak, beside the one that only leaked
    assert sorted(reply["traces"]) == ["tenant-sessions/drift-then-leak",
                                       "tenant-sessions/fail-leaks-order"]
    assert reply["example"]["detail"]["fact"] == "ORD-88412"
    assert reply["slice"][-1]["seq"] == 16  # the slice leads to the leak
    drift = [c for c in s["clusters"] if c["family"] == "drift"]
    assert [c["traces"] for c in drift] == [["tenant-sessions/fail-carryover"]]
    assert drift[0]["check"] == "memory"  # its first divergence: the stale memory write
    assert s["leaking_traces"] == 3
    traces = {t["trace_id"]: t for t in s["traces"]}
    assert traces["tenant-sessions/drift-then-leak"]["first_divergence"]["seq"] == 11
    assert traces["tenant-sessions/drift-then-leak"]["first_leak"]["seq"] == 16
    assert traces["tenant-sessions/pass"]["first_leak"] is None

    code, text = _judge("report", "run", s["run_id"], "--format", "text", "--db", url)
    assert code == 0
    leak_at = text.index("state leakage: facts of another user, tenant or session")
    drift_at = text.index("failures, clustered by first divergence (1 signature(s))")
    assert leak_at < drift_at
    assert "state_leakage:globex-grocers@reply" in text[leak_at:drift_at]
    assert "memory:" in text[drift_at:] and "state_leakage" not in text[drift_at:]

    md = tmp_path / "r.md"
    assert _judge("report", "run", s["run_id"], "--format", "md", "--db", url, "-o", md)[0] == 0
    body = md.read_text()
    assert body.index("## State leakage") < body.index("## Failures by signature")
    assert "3 trace(s)" in body

    page = tmp_path / "r.html"
    assert _judge("report", "run", s["run_id"], "--format", "html", "--db", url,
                  "-o", page)[0] == 0
    html = page.read_text()
    leak_section = html[html.index("<h2>State leakage</h2>"):
                        html.index("<h2>Failures by first divergence</h2>")]
    assert "state_leakage:globex-grocers@reply:turn3:unsafe" in leak_section
    assert "to the leak</summary>" in leak_section
    rest = html[html.index("<h2>Failures by first divergence</h2>"):]
    assert "state_leakage:" not in rest.split("<h2>Totals</h2>")[0]
    assert "traces leaking another owner&#39;s facts" in html or \
        "traces leaking another owner's facts" in html


def _outcome(trace_id: str, first: dict[str, Any] | None,
             leak: dict[str, Any] | None = None) -> TraceOutcome:
    return TraceOutcome(trace_id=trace_id, scenario_id="s", eligible=False, quality=0.5,
                        safety_critical_failures=1, first_divergence=first, first_leak=leak)


def test_families_and_signatures() -> None:
    assert [family_of(c) for c in ("state_leakage", "stale_value", "session_carryover",
                                   "memory", "forbidden", "judge")] == [
        "leakage", "drift", "drift", "drift", "other", "judge"]
    leak = {"check": "state_leakage", "key": "k", "turn": 3, "severity": "unsafe",
            "detail": {"owner": "acme", "surface": "tool_call"}}
    assert signature_of(leak)[0] == "state_leakage:acme@tool_call:turn3:unsafe"
    stale = {"check": "stale_value", "key": "pref", "turn": 2, "severity": "costly"}
    clusters = cluster_failures([_outcome("a", stale, leak), _outcome("b", stale),
                                 _outcome("c", None)])
    got = {c.signature: (c.family, c.traces) for c in clusters}
    assert got == {"state_leakage:acme@tool_call:turn3:unsafe": ("leakage", ["a"]),
                   "stale_value:pref@turn2:costly": ("drift", ["b"]),
                   "judge:-@turn?:judge-fail": ("judge", ["c"])}
