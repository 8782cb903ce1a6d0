"""`judge grade`: checks first, overruled verdicts on vetoed traces, cache, replay-only,
one-line errors before any provider call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.prompts.files import BUILTIN_PROMPTS_DIR
from judge.testing.fakeserver import FakeProviderServer

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
PASS = REFUND / "pass.json"
SECOND_REFUND = REFUND / "fail-second-refund.json"


def judge(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["grade", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def read_verdicts(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


def test_heuristic_is_the_offline_default_and_named(tmp_path: Path) -> None:
    code, out, err = judge(REFUND, PASS, "-o", tmp_path / "v.jsonl")
    assert code == 0, err
    assert "heuristic baseline (no LLM)" in out.splitlines()[-1]
    verdicts = read_verdicts(tmp_path / "v.jsonl")
    assert verdicts and all(v["model"] == "heuristic" for v in verdicts)
    assert all(v["metadata"]["display_name"] == "heuristic baseline (no LLM)"  # type: ignore[index]
               for v in verdicts)
    assert all(str(v["item_id"]).startswith("refund-once/pass#") for v in verdicts)
    # by default calls, items and routed verdicts go to the database (./judge.db)
    from judge.store import open_store

    with open_store("sqlite:///judge.db") as store:
        assert store.calls.count() >= 1
        assert store.count_verdicts() == len(verdicts)
        assert store.get_item(str(verdicts[0]["item_id"])) is not None
    assert not Path(".judge-cache.jsonl").exists()


def test_cache_file_mode_stores_nothing_in_the_database(tmp_path: Path) -> None:
    code, _, err = judge(REFUND, PASS, "--cache", tmp_path / "calls.jsonl")
    assert code == 0, err
    assert (tmp_path / "calls.jsonl").stat().st_size > 0
    assert not Path("judge.db").exists()


def test_vetoed_trace_verdicts_are_kept_but_overruled(tmp_path: Path) -> None:
    code, out, err = judge(REFUND, PASS, SECOND_REFUND, "-o", tmp_path / "v.jsonl")
    assert code == 1, err  # a trace was vetoed
    verdicts = read_verdicts(tmp_path / "v.jsonl")
    vetoed = [v for v in verdicts if str(v["item_id"]).startswith("refund-once/fail-second")]
    clean = [v for v in verdicts if str(v["item_id"]).startswith("refund-once/pass#")]
    assert vetoed and clean
    assert all(v["overruled"] and v["route"] == "veto" and v["route_reason"] for v in vetoed)
    assert not any(v["overruled"] for v in clean)
    assert "overruled" in out


def test_rerun_uses_the_cache_and_replay_only(tmp_path: Path) -> None:
    judge(REFUND, PASS, "--format", "json")
    code, out, _ = judge(REFUND, PASS, "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["provider_calls"] == 0 and summary["cache_hits"] >= 1
    code, out, _ = judge(REFUND, PASS, "--format", "json", "--replay-only",
                         "--cache", tmp_path / "empty.jsonl")
    data = json.loads(out)
    assert code == 0 and data["summary"]["provider_calls"] == 0
    assert {v["label"] for v in data["verdicts"]} == {"unscored"}
    assert all(v["reason"] == "not in cache (replay-only)" for v in data["verdicts"])


def test_network_judge_over_the_fake_server(server: FakeProviderServer, tmp_path: Path) -> None:
    args = (REFUND, PASS, "--model", "openai:judge-test", "--base-url", server.openai_base_url,
            "--format", "json", "--cache", tmp_path / "c.jsonl")
    code, out, err = judge(*args)
    data = json.loads(out)
    assert code in (0, 1), err
    n = len(data["verdicts"])
    assert n >= 1 and server.generation_count == data["summary"]["provider_calls"]
    assert data["summary"]["judge"] == "openai:judge-test" or data["summary"]["model"] == (
        "openai:judge-test")
    assert all(v["label"] in ("pass", "fail") for v in data["verdicts"])
    sent = server.generation_count
    judge(*args)
    assert server.generation_count == sent  # cached rerun: zero requests


@pytest.mark.parametrize("args, message", [
    (("--rubric", "no_such_rubric"), "unknown rubric"),
    (("--model", "nonsense:model"), "unknown model spec"),
    (("--concurrency", "0"), "concurrency"),
])
def test_bad_options_one_line_exit_2_before_any_call(
        args: tuple[str, ...], message: str, server: FakeProviderServer) -> None:
    code, _, err = judge(REFUND, PASS, "--base-url", server.openai_base_url, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert server.generation_count == 0


def test_broken_prompt_file_is_one_line_before_any_call(
        server: FakeProviderServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "prompts" / "scope_fidelity"
    root.mkdir(parents=True)
    (root / "v1.md").write_text("---\nrubric: scope_fidelity\nversion: [broken\n---\n{{goal}}\n")
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    code, _, err = judge(REFUND, PASS, "--model", "openai:judge-test", "--base-url",
                         server.openai_base_url)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "v1.md" in err
    assert server.generation_count == 0
    assert not Path(".judge-cache.jsonl").exists() and not Path("judge.db").exists()


def test_undefined_template_variable_is_exit_2(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    source = (BUILTIN_PROMPTS_DIR / "scope_fidelity" / "v1.md").read_text()
    root = tmp_path / "prompts" / "scope_fidelity"
    root.mkdir(parents=True)
    (root / "v1.md").write_text(source + "\n{{no_such_variable}}\n")
    monkeypatch.setenv("JUDGE_PROMPTS_DIR", str(tmp_path / "prompts"))
    monkeypatch.setenv("JUDGE_BUILTIN_PROMPTS", "off")
    code, _, err = judge(REFUND, PASS)
    assert code == 2 and "no_such_variable" in err and len(err.strip().splitlines()) == 1


def test_bad_trace_is_reported_and_the_others_graded(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "x", "events": [{"kind": "tool_call"}]}\n')
    code, _, err = judge(REFUND, PASS, bad, "-o", tmp_path / "v.jsonl")
    assert code == 2
    assert "bad.jsonl:1" in err and len(err.strip().splitlines()) == 1
    assert read_verdicts(tmp_path / "v.jsonl")


def test_missing_scenario_is_exit_2(tmp_path: Path) -> None:
    code, _, err = judge(tmp_path / "nope.yaml", PASS)
    assert code == 2 and "nope.yaml" in err


def test_progress_bar_goes_to_stderr_and_leaves_stdout_clean(tmp_path: Path) -> None:
    code, out, err = judge(REFUND, PASS, "--progress", "--format", "json")
    assert code == 0 and "Traceback" not in err
    assert json.loads(out)["summary"]["items"] >= 1  # stdout is still pure JSON


def test_only_bad_traces_is_one_line_per_trace_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    code, out, err = judge(REFUND, bad)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "bad.jsonl:1" in err
