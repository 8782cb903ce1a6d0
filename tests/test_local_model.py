"""A real model server: llama-cpp-python's OpenAI-compatible server with the pip-shipped
Gemma 3 270M GGUF (tests/llama_server.py), and `judge grade` on refund-once through the
openai SDK, as a user runs it.

The server refuses JSON Schema (HTTP 500), so the first run finds JSON mode with the schema
(llama.cpp turns it into a grammar) from that one refusal; every item then costs at most two
requests, no verdict is unscored for a provider failure, and every fail names a key of its
own item (the grammar cannot write another). A rerun makes no request at all. A timeout
shorter than the model's first token ends the item unscored with the reason. The quality of
a 270M model is not what this checks: the wire, the modes, constrained decoding and timeouts
are.

The command is the README's ("Local and self-hosted models"), pointed at this server.
Skips without the `[local-model]` extra, unless JUDGE_REQUIRE_LOCAL_MODEL=1 (.ci/run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_server import MODEL, REQUIRE_VAR, LlamaServer, missing, required, start_server
from test_readme_local_models import grade_command

from judge.items import extract_items
from judge.ledger import load_scenario
from judge.trace import load_traces

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "examples" / "scenarios" / "refund-once"
TRACES = sorted(SCENARIO.glob("*.json"))

pytestmark = pytest.mark.slow


def unavailable(why: str) -> None:
    """Skip, or under JUDGE_REQUIRE_LOCAL_MODEL=1 (CI) fail loudly."""
    if required():
        pytest.fail(f"{REQUIRE_VAR}=1 but the local model cannot run: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    why = missing()
    if why is not None:
        unavailable(why)
    try:
        srv = start_server()
    except RuntimeError as exc:
        unavailable(f"llama_cpp.server did not start: {exc}")
        raise
    try:
        yield srv
    finally:
        srv.stop()  # the whole process group: the server never outlives the tests


def test_a_missing_local_model_fails_loudly_when_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_VAR, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no llama here"):
        unavailable("no llama here")
    monkeypatch.setenv(REQUIRE_VAR, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_VAR}=1 but"):
        unavailable("no llama here")


def test_the_server_never_outlives_its_process_group(tmp_path: Path) -> None:
    """stop() kills the group: a child the server started dies with it."""
    import signal
    import time

    from llama_server import LlamaServer

    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                             "p = subprocess.Popen([sys.executable, '-c', 'import time; "
                             "time.sleep(600)']); print(p.pid, flush=True); time.sleep(600)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    log = tmp_path / "log"
    log.write_text("")
    LlamaServer(proc=proc, port=0, root=tmp_path / "nothing", log=log).stop()
    assert proc.poll() == -signal.SIGKILL

    def alive(pid: int) -> bool:  # a zombie waiting for init to reap it is not alive
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"

    deadline = time.monotonic() + 10
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)  # the server's own children die with it


def judge(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "JUDGE_CONCURRENCY": "1", "JUDGE_TIMEOUT": "600", **env}
    return subprocess.run([sys.executable, "-m", "judge.cli.main", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=1800, check=False)


def items_by_id() -> dict[str, Any]:
    loaded = load_scenario(SCENARIO)
    return {i.item_id: i for t in TRACES for i in extract_items(loaded, load_traces([t])[0])}


def grade(server: LlamaServer, cwd: Path, cache: str) -> tuple[
        subprocess.CompletedProcess[str], dict[str, Any]]:
    """The README's command, at this server, keeping its calls in `cache`."""
    command = grade_command().replace("http://127.0.0.1:8080/v1", server.base_url)
    assert server.base_url in command and f"--model openai:{MODEL}" in command
    if not (cwd / "examples").exists():
        (cwd / "examples").symlink_to(ROOT / "examples")
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", f"{command} --cache {cache} --format json"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=1800,
                          check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: a fail or a veto, never bad input
    return done, json.loads(done.stdout)


def test_refund_once_against_llama_cpp_python(server: LlamaServer, tmp_path: Path) -> None:
    items = items_by_id()
    done, doc = grade(server, tmp_path, "calls.jsonl")
    verdicts = doc["verdicts"]
    assert {v["item_id"] for v in verdicts} == set(items)
    requests = server.requests()
    # the one refusal that found the mode: llama-cpp-python's HTTP 500 for json_schema
    assert Counter(requests)[500] == 1 and requests[0] == 500
    assert done.stderr.count("refused JSON Schema") == 1
    assert "response_format.type: Input should be 'text' or 'json_object'" in done.stderr
    # requests per item: the calls stored for it, and the refusal for the first one asked
    stored = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()
              if line.startswith('{"cache_key"')]
    per_item = Counter(r["item_id"] for r in stored)
    per_item[stored[0]["item_id"]] += 1
    assert len(requests) == len(stored) + 1 == sum(per_item.values())
    assert max(per_item.values()) <= 2, per_item
    assert all(r["request"]["response_format"] == "json_object" for r in stored)
    for v in verdicts:
        assert v["metadata"]["response_format"] == "json_object"
        if v["label"] == "unscored":  # a content reason, never a provider failure
            assert v["reason"].startswith("invalid verdict"), v["reason"]
        if v["label"] == "fail":
            assert v["violated_key"] in items[v["item_id"]].ledger_keys, v
            assert v["evidence_event"] in items[v["item_id"]].slice_seqs, v
    assert not any((v["reason"] or "").startswith("provider") for v in verdicts)
    # the rerun: the mode is remembered and every call is in the cache, so no request
    again, doc2 = grade(server, tmp_path, "calls.jsonl")
    assert server.requests() == requests and again.stderr.count("refused") == 0
    assert [v["label"] for v in doc2["verdicts"]] == [v["label"] for v in verdicts]
    print(f"\nllama-cpp-python: server up in {server.started_s:.1f} s; {len(requests)} "
          f"requests for {len(items)} items; labels "
          f"{dict(Counter(v['label'] for v in verdicts))}; "
          f"grading {doc['summary'].get('elapsed_s')} s")


def test_a_timeout_shorter_than_the_first_token_is_unscored_with_the_reason(
        server: LlamaServer, tmp_path: Path) -> None:
    """Last in the file: the server goes on computing the answer nobody waits for."""
    trace = SCENARIO / "fail-second-refund.json"
    done = judge(["grade", str(SCENARIO), str(trace), "--rubric", "scope_fidelity",
                  "--model", f"openai:{MODEL}", "--cache", "t.jsonl", "--format", "json",
                  "--retries", "1"], tmp_path, OPENAI_BASE_URL=server.base_url,
                 JUDGE_TIMEOUT="0.05", JUDGE_RESPONSE_FORMAT="json_object")
    assert done.returncode in (0, 1), done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    assert verdicts and all(v["label"] == "unscored" for v in verdicts)
    assert all(v["reason"].startswith("provider failed after 2 attempts") and
               "request timed out" in v["reason"] for v in verdicts)
