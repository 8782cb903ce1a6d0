"""`judge check --jobs N` writes exactly what `--jobs 1` writes, keeps memory bounded, and a
closed stdout ends it quietly.

The size thresholds are lowered here so that small files are cut into many chunks and
checked by real worker processes (forked, as in production).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_check import FAIL, PASS, SCENARIO
from typer.testing import CliRunner

from judge.checks import parallel
from judge.checks.output import Rendered, ReportFormat
from judge.checks.parallel import check_and_render
from judge.cli.main import app
from judge.errors import InputError
from judge.ledger import LoadedScenario, load_scenario

STREAMED = [json.dumps({"trace_id": "streamed", "scenario": "refund"}),
            *(json.dumps(ev) for ev in FAIL["events"])]
BAD_LINES = {
    "malformed": "{not json",
    "bad kind": json.dumps({**PASS, "trace_id": "k", "events": [{"kind": "shout", "text": "x"}]}),
    "dup seq": json.dumps({**PASS, "trace_id": "d", "events": [
        {"seq": 1, "kind": "user", "text": "a"}, {"seq": 1, "kind": "user", "text": "b"}]}),
    "other scenario": json.dumps({**PASS, "trace_id": "o", "scenario": "tau-airline"}),
    "orphan event": json.dumps({"kind": "user", "text": "hi"}),
    "not an object": "[1, 2]",
}


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every .jsonl file is split, in chunks of a few lines."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 700)


def scenario_dir(tmp_path: Path) -> Path:
    d = tmp_path / "refund"
    d.mkdir(exist_ok=True)
    (d / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO, sort_keys=False))
    return d


def trace_line(i: int, vetoed: bool) -> str:
    return json.dumps({**(FAIL if vetoed else PASS), "trace_id": f"t/{i}"})


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def same_with_jobs(*args: str) -> tuple[int, str, str]:
    """`judge check ARGS` with --jobs 1 and --jobs 3: the same exit code, stdout, stderr."""
    one = run("check", *args, "--jobs", "1")
    three = run("check", *args, "--jobs", "3")
    assert three == one
    return one


def test_output_is_identical_in_every_format(tmp_path: Path, small_chunks: None) -> None:
    d = scenario_dir(tmp_path)
    lines = [trace_line(i, vetoed=i % 7 == 3) for i in range(40)]
    for i, bad in enumerate(BAD_LINES.values()):
        lines.insert(3 + 5 * i, bad)
    lines.insert(11, "   ")
    many = tmp_path / "many.jsonl"
    many.write_text("\n".join(lines) + "\n")
    crlf = tmp_path / "crlf.jsonl"
    # (trace ids are unique within one input: the second file's traces have their own)
    crlf.write_bytes(b"\r\n".join(x.replace('"t/', '"crlf-t/').encode() for x in lines[:12])
                     + b"\r" + b"\xff{\n" + trace_line(99, vetoed=False).encode())
    for fmt in ("text", "json", "jsonl"):
        for verbose in ((), ("--verbose",)):
            code, out, err = same_with_jobs(str(d), str(many), str(d / "gone.json"),
                                            str(crlf), "--format", fmt, *verbose)
            assert code == 2
            assert out.count('"t/5"' if fmt != "text" else "t/5") >= 1
            assert "crlf-t/5" in out and "t/99" in out  # two files; the last line
            err_lines = err.splitlines()
            # every bad line of many.jsonl, gone.json, and in crlf.jsonl two bad lines and
            # one that is not UTF-8
            assert len(err_lines) == len(BAD_LINES) + 1 + 2 + 1
            assert any(f"{crlf}:13: not UTF-8" in e for e in err_lines)
            assert f"{many}:4: malformed JSON" in err_lines[0]


def test_exit_codes_are_the_same(tmp_path: Path, small_chunks: None) -> None:
    d = scenario_dir(tmp_path)
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(trace_line(i, vetoed=False) + "\n" for i in range(30)))
    assert same_with_jobs(str(d), str(clean))[0] == 0
    vetoed = tmp_path / "vetoed.jsonl"
    vetoed.write_text("".join(trace_line(i, vetoed=i == 17) + "\n" for i in range(30)))
    code, out, _ = same_with_jobs(str(d), str(vetoed), "--format", "json")
    assert code == 1 and json.loads(out)["eligible"] is False
    bad = tmp_path / "bad.jsonl"
    bad.write_text(vetoed.read_text() + "{\n")
    assert same_with_jobs(str(d), str(bad))[0] == 2


def test_a_streamed_trace_inside_a_split_file_is_read_in_order(
        tmp_path: Path, small_chunks: None) -> None:
    d = scenario_dir(tmp_path)
    lines = [trace_line(i, vetoed=False) for i in range(20)]
    lines[9:9] = STREAMED
    lines.append("{bad")
    p = tmp_path / "mixed.jsonl"
    p.write_text("\n".join(lines) + "\n")
    code, out, err = same_with_jobs(str(d), str(p), "--format", "jsonl")
    ids = [json.loads(x)["trace_id"] for x in out.splitlines()]
    assert ids == [f"t/{i}" for i in range(9)] + ["streamed"] + [f"t/{i}" for i in range(9, 20)]
    assert code == 2 and f"{p}:{len(lines)}: malformed JSON" in err
    opening = tmp_path / "opening.jsonl"  # opens with a streamed trace: not split at all
    opening.write_text("\n".join([*STREAMED, *lines[:5]]) + "\n")
    code, out, _ = same_with_jobs(str(d), str(opening), "--format", "jsonl")
    assert code == 1 and len(out.splitlines()) == 6


# --- a property over random files ------------------------------------------------------------

LINES = st.one_of(
    st.builds(trace_line, st.integers(0, 50), st.booleans()),
    st.sampled_from([*BAD_LINES.values(), "", "  ", *STREAMED, "\n".join(STREAMED)]),
    st.text(max_size=8),
)
ENDINGS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def trace_files(draw: st.DrawFn) -> bytes:
    parts = []
    for line in draw(st.lists(LINES, max_size=30)):
        parts.append(line.encode() + draw(ENDINGS))
    if draw(st.booleans()) and parts:  # a line that is not UTF-8
        parts.insert(draw(st.integers(0, len(parts))), b"\xc3(\n")
    return b"".join(parts)


def rendered(loaded: LoadedScenario, path: Path, fmt: ReportFormat,
             jobs: int) -> tuple[list[Rendered], list[str]]:
    errors: list[InputError] = []
    outs = list(check_and_render(loaded, [path], errors, fmt, jobs=jobs))
    return outs, [e.message for e in errors]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=trace_files(), fmt=st.sampled_from(list(ReportFormat)),
       chunk=st.sampled_from([1, 300, 5000]))
def test_random_files_give_the_same_reports_and_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, fmt: ReportFormat,
        chunk: int) -> None:
    loaded = load_scenario(scenario_dir(tmp_path))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", chunk)
    p = tmp_path / "random.jsonl"
    p.write_bytes(trace_line(0, vetoed=False).encode() + b"\n" + data)  # opens with a trace
    one = rendered(loaded, p, fmt, jobs=1)
    assert rendered(loaded, p, fmt, jobs=2) == one
    assert one[0], "the first line is a valid trace"


# --- memory: chunks in flight are bounded ----------------------------------------------------

def test_chunks_in_flight_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 100)
    read: list[int] = []
    chunks = parallel._chunks

    def counted(*args: Any) -> Iterator[tuple[int, int, int]]:
        for chunk in chunks(*args):
            read.append(chunk[0])
            yield chunk

    monkeypatch.setattr(parallel, "_chunks", counted)
    p = tmp_path / "long.jsonl"
    p.write_text("".join(trace_line(i, vetoed=False) + "\n" for i in range(200)))
    loaded = load_scenario(scenario_dir(tmp_path))
    reports = check_and_render(loaded, [p], [], ReportFormat.jsonl, jobs=2)
    first = next(reports)
    assert json.loads(first.out)["trace_id"] == "t/0"
    assert len(read) == parallel.WINDOW_PER_JOB * 2  # read ahead no further than the window
    reports.close()
    assert len(read) == parallel.WINDOW_PER_JOB * 2
    assert len(list(check_and_render(loaded, [p], [], ReportFormat.jsonl, jobs=2))) == 200


# --- a closed stdout --------------------------------------------------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_closed_stdout_ends_quietly_with_141(tmp_path: Path, jobs: str) -> None:
    d = scenario_dir(tmp_path)
    p = tmp_path / "big.jsonl"
    p.write_text("".join(trace_line(i, vetoed=False) + "\n" for i in range(20_000)))
    assert p.stat().st_size > parallel.PARALLEL_MIN_BYTES
    judge = Path(sys.executable).parent / "judge"
    proc = subprocess.Popen([str(judge), "check", str(d), str(p), "--jobs", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()  # as `| head -c 100` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    d = scenario_dir(tmp_path)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(PASS))
    judge = Path(sys.executable).parent / "judge"
    done = subprocess.run([str(judge), "check", str(d), str(one), "--jobs", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--jobs" in done.stderr


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_until_idle(pids: list[int], timeout: float = 60) -> None:
    """Until every one of `pids` has been asleep (not running) at two looks in a row."""
    assert pids
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2 and time.monotonic() < deadline:
        states = [Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for p in pids]
        quiet = quiet + 1 if all(st == "S" for st in states) else 0
        time.sleep(0.2)
    assert quiet >= 2, "the workers never went idle"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_interrupt_exits_130_without_a_traceback(tmp_path: Path, jobs: str) -> None:
    d = scenario_dir(tmp_path)
    p = tmp_path / "big.jsonl"
    p.write_text("".join(trace_line(i, vetoed=False) + "\n" for i in range(20_000)))
    judge = Path(sys.executable).parent / "judge"
    proc = subprocess.Popen([str(judge), "check", str(d), str(p), "--jobs", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)  # checking has begun; it waits on the full pipe now,
    if jobs != "1":
        wait_until_idle(children(proc.pid))  # and its workers, their chunks done, for more
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the command and its workers
    proc.stdout.read()
    assert proc.wait(timeout=60) == 130
    assert "Traceback" not in proc.stderr.read().decode()
