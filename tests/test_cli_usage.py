"""Usage errors from the console script are one line on stderr with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [["schema", "nope"], ["run", "--bogus"], ["check"]])
def test_usage_error_is_one_line_exit_2(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "judge.cli.main", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("judge: error: "), done.stderr
    assert "--help" in lines[0] and "Traceback" not in done.stderr


def test_help_still_works() -> None:
    done = subprocess.run([sys.executable, "-m", "judge.cli.main", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "check" in done.stdout
