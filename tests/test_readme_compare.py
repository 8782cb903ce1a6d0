"""The README's "Compare two agent versions" and "Gate a rollout" run as written, in order, in
a scratch directory that links the repository's examples (its own database and out/): each
command with the exit code the text gives it, and the figures the text quotes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("## Compare two agent versions", "## Gate a rollout")
#: the commands the text says fail: --fail-on broken finds the broken tasks; the 25% stage
#: rolls back
EXIT = {"--fail-on broken": 1, "--stage 25%": 1}


def section_commands(title: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(title + "\n", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", body, flags=re.S)
            for line in block.splitlines() if line.strip().startswith(("judge ", "python "))]


def test_the_compare_and_canary_sections_run(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "out").mkdir()
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'judge.db'}"}
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL"):
        env.pop(var, None)
    outputs: dict[str, str] = {}
    commands = [c for title in SECTIONS for c in section_commands(title)]
    assert len(commands) == 13
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        want = next((code for key, code in EXIT.items() if key in command), 0)
        assert done.returncode == want, (command, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        outputs[command] = done.stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    compare = next(out for c, out in outputs.items()
                   if c.startswith("judge compare out/baseline.jsonl") and "--format" not in c)
    for line in compare.splitlines():  # every line the README quotes, as printed
        if line.startswith(("paired ", "pass rate", "tasks passing", "new failure", "drift ",
                            "  tau-airline/2:", "  tau-airline/41:", "  tau-airline/14:",
                            "  tau-airline/28:", "  confirmation:-@turn4")):
            assert line in readme, line
    one = next(out for c, out in outputs.items() if "--fail-on broken" in c)
    assert "pass rate: baseline 86.0% → candidate 84.0%: -2.0 points, 95% CI [-16.0, +12.0]" \
        " (exact McNemar p = 1 (5 fixed, 6 broken); Newcombe interval)" in one
    page = (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "50 paired task(s)" in page
    stage5 = next(out for c, out in outputs.items() if "--stage 5%" in c)
    stage25 = next(out for c, out in outputs.items() if "--stage 25%" in c)
    for out in (stage5, stage25):
        for line in out.splitlines():
            if not line.startswith("  sample:") or "13 task(s)" in line:
                assert line in readme, line
    shown = next(out for c, out in outputs.items() if "--show" in c)
    assert "rollout airline-v2: 2 look(s), last decision ROLLBACK" in shown
