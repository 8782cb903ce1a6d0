"""`judge compare`: two versions of the tau-bench airline agent (two trials of each task
against the other two) paired task by task; stored runs as sides; --model; --fail-on; bad
input; hostile text in every output format."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLES, TAU_BENCH
from typer.testing import CliRunner

from judge.cli.main import app

AIRLINE = EXAMPLES / "scenarios" / "tau-airline"
REFUND = EXAMPLES / "scenarios" / "refund-once"
SPLIT = EXAMPLES / "rollout" / "split.py"


def judge(*args: str | Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def split(src: Path, out: Path, *, trials: str | None = None, tasks: str | None = None
          ) -> Path:
    import runpy

    main = runpy.run_path(str(SPLIT))["main"]
    args = [str(src), "-o", str(out)]
    args += ["--trials", trials] if trials else []
    args += ["--tasks", tasks] if tasks else []
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def airline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("airline")
    code, _, err = judge("import", "tau-bench", TAU_BENCH, "-o", d / "tau.jsonl")
    assert code == 0, err
    return {"all": d / "tau.jsonl",
            "baseline": split(d / "tau.jsonl", d / "baseline.jsonl", trials="0,1"),
            "candidate": split(d / "tau.jsonl", d / "candidate.jsonl", trials="2,3"),
            "t0": split(d / "tau.jsonl", d / "t0.jsonl", trials="0"),
            "t1": split(d / "tau.jsonl", d / "t1.jsonl", trials="1")}


def compare_json(*args: str | Path) -> dict[str, Any]:
    code, out, err = judge("compare", *args, "--format", "json")
    assert code == 0, err
    return dict(json.loads(out))


def test_airline_two_trials_against_two(airline: dict[str, Path]) -> None:
    r = compare_json(airline["baseline"], airline["candidate"], "--scenario", AIRLINE)
    assert r["paired_tasks"] == 50 and r["baseline_only"] == r["candidate_only"] == []
    assert r["baseline"]["traces"] == r["candidate"]["traces"] == 100
    c = r["counts"]
    assert sum(c.values()) == 50
    by_change = {k: [t["task_id"] for t in r["tasks"] if t["change"] == k] for k in c}
    assert len(by_change["fixed"]) == c["fixed"] > 0 and len(by_change["broken"]) == c["broken"] > 0
    for t in r["tasks"]:  # each change is what the two sides' trials say
        b, k = t["baseline"], t["candidate"]
        assert b["trials"] == k["trials"] == 2
        if t["change"] == "fixed":
            assert k["passed"] == 2 and b["passed"] < 2
        elif t["change"] == "broken":
            assert b["passed"] == 2 and k["passed"] < 2
        elif t["change"] == "still_passing":
            assert b["passed"] == k["passed"] == 2
    # the same counts, read straight from the check reports of the two halves
    trials = _passes(airline["all"])
    fixed = {t for t, p in trials.items() if all(p[2:]) and not all(p[:2])}
    broken = {t for t, p in trials.items() if all(p[:2]) and not all(p[2:])}
    assert set(by_change["fixed"]) == fixed and set(by_change["broken"]) == broken
    # new signatures: failing candidate trials whose first divergence no baseline trial had
    assert r["signatures"]["new"], "the candidate's runs fail in ways the baseline's did not"
    base_sigs = {res["signature"] for t in r["tasks"] for res in t["baseline"]["results"]}
    for s in r["signatures"]["new"]:
        assert s["signature"] not in base_sigs and s["count"] == len(s["traces"])
    pr = r["pass_rate"]
    assert pr["test"] == "bootstrap_tasks" and pr["n_tasks"] == 50
    assert pr["baseline"] == pytest.approx(sum(sum(p[:2]) / 2 for p in trials.values()) / 50)
    assert pr["ci"][0] <= pr["change"] <= pr["ci"][1] and pr["ci"][0] < 0 < pr["ci"][1]
    assert 0 < pr["p_value"] <= 1
    assert r["drift"]["pairs"] == 100 and r["drift"]["drifted"] > 0
    assert r["failed"] == [] and r["errors"] == []


def _passes(path: Path) -> dict[str, list[bool]]:
    """Task id -> each trial's pass (no veto), from `judge check` itself."""
    code, out, _ = judge("check", AIRLINE, path, "--format", "jsonl")
    assert code == 1
    got: dict[str, list[bool]] = {}
    for line in out.splitlines():
        rep = json.loads(line)
        got.setdefault(rep["task_id"], [False] * 4)[rep["trial"]] = rep["eligible"]
    return got


def test_one_trial_each_gets_the_exact_mcnemar_test(airline: dict[str, Path]) -> None:
    from scipy.stats import binomtest

    r = compare_json(airline["t0"], airline["t1"], "--scenario", AIRLINE)
    pr = r["pass_rate"]
    assert pr["test"] == "mcnemar_exact" and pr["interval"] == "newcombe_paired"
    m = pr["mcnemar"]
    assert m["c"] == r["counts"]["fixed"] and m["b"] == r["counts"]["broken"]
    assert r["counts"]["flaky"] == 0  # one trial: passing or failing, never flaky
    assert pr["p_value"] == pytest.approx(binomtest(m["c"], m["b"] + m["c"], 0.5).pvalue)
    assert pr["change"] == pytest.approx((m["c"] - m["b"]) / 50)
    assert pr["ci"][0] < pr["change"] < pr["ci"][1]


def test_text_and_markdown(airline: dict[str, Path]) -> None:
    code, out, _ = judge("compare", airline["baseline"], airline["candidate"], "--scenario",
                         AIRLINE)
    assert code == 0
    assert "paired 50 task(s) (tau-airline): fixed " in out
    assert re.search(r"pass rate \(trials passed, mean over tasks\): baseline \d+\.\d% → "
                     r"candidate \d+\.\d%: [+-]\d+\.\d points, 95% CI \[[+-]\d+\.\d, "
                     r"[+-]\d+\.\d\]", out), out
    assert "broken (" in out and "fixed (" in out and "new failure signatures (" in out
    code, md, _ = judge("compare", airline["baseline"], airline["candidate"], "--scenario",
                        AIRLINE, "--format", "md")
    assert code == 0 and md.startswith("# judge compare") and "| broken |" in md


def test_fail_on(airline: dict[str, Path], tmp_path: Path) -> None:
    args = [airline["baseline"], airline["candidate"], "--scenario", AIRLINE]
    for what in ("broken", "signature", "drift"):
        code, out, _ = judge("compare", *args, "--fail-on", what)
        assert code == 1 and "FAILED (--fail-on)" in out, what
    # a version against itself: nothing broken, no new signature, no drift
    code, out, _ = judge("compare", airline["baseline"], airline["baseline"], "--scenario",
                         AIRLINE, "--fail-on", "broken", "--fail-on", "signature",
                         "--fail-on", "drift", "--format", "json")
    r = json.loads(out)
    assert code == 0 and r["failed"] == [] and r["drift"]["drifted"] == 0
    assert r["counts"]["broken"] == r["counts"]["fixed"] == 0
    assert r["pass_rate"]["change"] == 0 and r["pass_rate"]["p_value"] == 1


def test_bad_input_is_exit_2_and_the_rest_is_compared(airline: dict[str, Path],
                                                      tmp_path: Path) -> None:
    bad = tmp_path / "candidate.jsonl"
    lines = airline["candidate"].read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    code, out, err = judge("compare", airline["baseline"], bad, "--scenario", AIRLINE,
                           "--format", "json")
    assert code == 2 and "candidate.jsonl:2" in err and "Traceback" not in err
    assert json.loads(out)["paired_tasks"] == 50
    code, _, err = judge("compare", airline["baseline"], airline["candidate"])
    assert code == 2 and "--scenario" in err
    code, _, err = judge("compare", airline["baseline"], "no-such-thing", "--scenario",
                         AIRLINE, "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert code == 2 and "no-such-thing" in err
    code, _, err = judge("compare", airline["baseline"], airline["candidate"], "--scenario",
                         REFUND)
    assert code == 2 and "is for scenario 'tau-airline', not 'refund-once'" in err


def _suite(tmp_path: Path, name: str, traces: list[str]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"suites": {"nightly": {
        "rubrics": [], "scenarios": [{"scenario": str(REFUND),
                                      "traces": [str(REFUND / t) for t in traces]}],
        "release": {"min_scenario_pass_rate": 0.0}}}}), encoding="utf-8")
    return path


def test_two_stored_runs(tmp_path: Path) -> None:
    """Two `judge run`s of the refund-once scenario, one on its passing trace and one on a
    failing one: the runs are the sides, the tasks pair, the change is a break."""
    db = f"sqlite:///{tmp_path / 'judge.db'}"
    ids = []
    for name, trace in (("before", "pass.json"), ("after", "fail-second-refund.json")):
        code, out, err = judge("run", _suite(tmp_path, name, [trace]), "--allow-outside",
                               "--format", "json", "--db", db)
        assert code in (0, 1), err
        ids.append(json.loads(out)["run_id"])
    code, out, err = judge("compare", f"run:{ids[0]}", ids[1], "--db", db, "--format", "json",
                           "--fail-on", "broken")
    assert code == 1, err
    r = json.loads(out)
    assert r["baseline"]["kind"] == r["candidate"]["kind"] == "run"
    assert r["paired_tasks"] == 1 and r["counts"]["broken"] == 1
    assert r["tasks"][0]["drift"]["diffed"] == 1 and r["tasks"][0]["drift"]["drifted"] == 1
    assert r["candidate"]["hard_failures"] == 1  # re-checked under the run's manifest
    assert r["signatures"]["new"][0]["signature"].startswith("forbidden:")


def test_model_grades_both_sides_as_stored_runs(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'judge.db'}"
    args = [REFUND / "pass.json", REFUND / "fail-second-refund.json", "--scenario", REFUND,
            "--model", "heuristic", "--db", db, "--format", "json"]
    code, out, err = judge("compare", *args)
    assert code == 0, err
    r = json.loads(out)
    for side in ("baseline", "candidate"):
        j = r[side]["judge"]
        assert j["model"] == "heuristic" and j["verdicts"] > 0 and j["run_id"]
        assert j["provider_calls"] + j["cache_hits"] >= j["verdicts"]
    # graded again: every call from the cache
    r2 = json.loads(judge("compare", *args)[1])
    assert r2["candidate"]["judge"]["provider_calls"] == 0


def test_hostile_text_stays_inert(tmp_path: Path) -> None:
    """Task ids, trace ids and messages are trace text: escaped in text, md and html."""
    from tests.hostile_text import HOSTILE

    evil = " ".join(HOSTILE[:12])
    body = json.loads((REFUND / "pass.json").read_text(encoding="utf-8"))
    body["trace_id"] = f"refund-once/{evil}"
    body["metadata"] = {"task_id": f"<script>x</script> {evil}"[:200]}
    base, cand = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps(body), encoding="utf-8")
    bad = json.loads((REFUND / "fail-second-refund.json").read_text(encoding="utf-8"))
    bad["trace_id"], bad["metadata"] = body["trace_id"] + "-2", body["metadata"]
    cand.write_text(json.dumps(bad), encoding="utf-8")
    for fmt in ("text", "md", "html"):
        code, out, _ = judge("compare", base, cand, "--scenario", REFUND, "--format", fmt)
        assert code == 0
        assert "\x1b" not in out and "\u202e" not in out
        if fmt == "html":
            assert "<script>x</script>" not in out and "&lt;script&gt;" in out
        if fmt == "md":
            assert "<script>" not in out
