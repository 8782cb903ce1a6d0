"""The README's "Local and self-hosted models" section runs: its `judge grade` command against
the fake server imitating llama-cpp-python (started with the section's own command, on a free
port), and against llama-cpp-python's real server in tests/test_local_model.py. The notice it
quotes is the one judge prints."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import free_port

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Local and self-hosted models"


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def commands() -> list[str]:
    """The section's shell commands, continuation lines joined."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", section(), flags=re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #", 1)[0].strip()
            if command:
                out.append(" ".join(command.split()))
    return out


def grade_command() -> str:
    (command,) = [c for c in commands() if " judge grade " in f" {c} "]
    return command


@pytest.fixture
def fake_llama() -> Iterator[int]:
    said = re.search(r"python -m judge\.testing\.fakeserver --port 8080 --dialect\s+"
                     r"llama-cpp-python", " ".join(section().split()))
    assert said, "the section shows how to start the fake server"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judge.testing.fakeserver", "--port",
                             str(port), "--dialect", "llama-cpp-python"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_fake/stats", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_the_sections_grade_command_runs_against_the_fake_llama_cpp_python(
        fake_llama: int, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    command = grade_command().replace("127.0.0.1:8080", f"127.0.0.1:{fake_llama}")
    assert f"127.0.0.1:{fake_llama}/v1" in command and "--model openai:gemma-270m" in command
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", command + " --cache calls.jsonl"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr  # the examples' vetoes
    assert "Traceback" not in done.stderr
    (notice,) = [line for line in done.stderr.splitlines() if "refused" in line]
    quoted = re.search(r"```\n(judge: openai:gemma-270m at .*?)\n```", section(), flags=re.S)
    assert quoted, "the section quotes the notice"
    # the same line, but for the port and where the file is
    mine = re.sub(r"127\.0\.0\.1:\d+", "HOST", notice)
    theirs = re.sub(r"127\.0\.0\.1:\d+", "HOST", quoted.group(1))
    assert re.sub(r"remembered in \S+;", "", mine) == re.sub(r"remembered in \S+;", "", theirs)
    assert "unscored" not in done.stdout.split("graded", 1)[0].lower()


def test_the_sections_settings_are_the_real_ones() -> None:
    from judge.providers.response_format import MODES
    from judge.settings import Settings

    text = " ".join(section().split())
    for mode in ("auto", *MODES):
        assert f"`{mode}`" in text
    literal = Settings.model_fields["response_format"].annotation
    assert set(getattr(literal, "__args__", ())) == {"auto", *MODES}
    assert "JUDGE_RESPONSE_FORMAT" in text and "judge/response-formats.json" in text
