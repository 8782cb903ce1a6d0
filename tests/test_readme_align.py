"""The README's section "Align a judge with its people" runs as written, in a scratch copy of
what a clone holds: the labels script writes the committed labels byte for byte, `judge
align` reports the split, the clusters and the draft, finds no gain for the heuristic judge,
and `--accept` refuses (exit 1) reusing the draft."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Align a judge with its people"


def section_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)
            for line in block.splitlines() if line.strip()]


def test_the_align_section_runs(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    for name in ("data", "scenarios"):
        (tmp_path / "examples" / name).symlink_to(ROOT / "examples" / name)
    shutil.copytree(ROOT / "examples" / "tau-gold", tmp_path / "examples" / "tau-gold")
    (tmp_path / "labels").mkdir()
    (tmp_path / "out").mkdir()
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "JUDGE_DATABASE_URL": f"sqlite:///{tmp_path / 'judge.db'}"}
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL",
                "JUDGE_PROMPTS_DIR"):
        env.pop(var, None)
    commands = section_commands()
    expected = {"judge grade": 1, "JUDGE_PROMPTS_DIR=out/prompts judge align --rubric "
                "scope_fidelity --accept": 1}
    assert len(commands) == 7
    out: list[str] = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        want = next((code for prefix, code in expected.items() if command.startswith(prefix)), 0)
        assert done.returncode == want, (command, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        out.append(done.stdout + done.stderr)
    assert (tmp_path / "labels" / "tau-airline-gold.jsonl").read_bytes() == \
        (ROOT / "labels" / "tau-airline-gold.jsonl").read_bytes()
    first, again, diff = out[4], out[5], out[6]
    assert "train 147 (105 fail, 42 pass, 26 groups)" in first
    assert "held out 151 (105 fail, 46 pass, 22 groups)" in first
    assert "105 false passes" in first and "3 clusters" in first
    assert "4 corrected examples, 2741 of 3000 tokens" in first
    assert "wrote out/prompts/scope_fidelity/v4.md" in first
    assert "agreement gain +0.000 [-0.016, +0.016]" in first and "includes 0" in first
    assert "reused the identical draft" in again and "stays a draft" in again
    assert "+status: draft" in diff and "+Worked examples." in diff
    assert not (tmp_path / "out" / "prompts" / "scope_fidelity" / "v5.md").exists()


def test_the_align_section_says_what_the_split_groups_by() -> None:
    """The split groups by trace and task only (judge.align.split.group_of): the section
    says items sharing a user across tasks can sit on both sides, and how to group them."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = " ".join(text.split(SECTION, 1)[1].split("\n## ", 1)[0].split())
    assert "The split groups by trace and by task only." in section
    assert "the held-out gain is optimistic" in section
    assert "`metadata.task_id` set to the shared unit" in section
