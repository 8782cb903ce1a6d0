"""Every command of the README's walkthrough runs, in order, with the exit code it should have.

The walkthrough is documentation; this keeps it true. Commands run in a scratch directory
that links the repository's examples, with their own database and `out/` folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The exit code each walkthrough command must give (0 unless named here): checks and grades
# on the examples find real failures (1), calibrating from one label is refused (2), and
# nothing is calibrated yet (1 under --check).
EXPECTED_EXIT = [
    ("judge check examples/scenarios/browser-correction", 1),
    ("judge check examples/scenarios/tau-airline", 1),
    ("judge grade ", 1),
    ("judge calibrate fit", 2),
    ("judge calibrate check", 1),
]


def walkthrough_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Walkthrough", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("judge "):
                commands.append(line)
    return commands


def expected_exit(command: str) -> int:
    return next((code for prefix, code in EXPECTED_EXIT if command.startswith(prefix)), 0)


def test_walkthrough_runs_in_order(tmp_path: Path) -> None:
    commands = walkthrough_commands()
    assert len(commands) >= 15
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "out").mkdir()
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'judge.db'}"}
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL"):
        env.pop(var, None)
    run_id = None
    ran = 0
    for command in commands:
        if command.split()[:2] == ["judge", "label"] and "--item" not in command:
            continue  # interactive
        if "RUN_ID" in command:
            assert run_id is not None, "judge run must come before the report"
            command = command.replace("RUN_ID", run_id)
        shell = command.split("  #", 1)[0]
        done = subprocess.run(["bash", "-c", shell], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        want = expected_exit(command)
        assert done.returncode == want, (shlex.quote(command), done.stdout[-2000:],
                                         done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        if command.split()[:2] == ["judge", "run"]:
            match = re.search(r"run (run-[\w-]+)", done.stdout)
            assert match, done.stdout
            run_id = match.group(1)
        ran += 1
    assert ran >= 14
    assert (tmp_path / "out" / "run.html").read_text().startswith("<!doctype html>")
    assert (tmp_path / "out" / "agreement.html").stat().st_size > 1000
