"""The built wheel, installed into a fresh venv, works from an empty directory.

What a new user does: `pip install judge-….whl`, then run judge somewhere that is not the
repository. The wheel is built once per session from a copy of the sources (so a stale
`build/` or anything outside the package cannot leak in), installed with `--no-deps` into a
new venv, and the commands run in an empty directory with no JUDGE_* settings. Prompts must
come from the package data, nothing from the repository checkout.

The built-in prompts live in the repository's top-level `prompts/`; setup.py maps them into
the wheel as `judge/data/prompts/`, so the test's copy of the sources takes both.

The examples do not ship in the wheel (they are documentation, and the tau-bench data is
4 MB of third-party trajectories): the test copies `examples/nightly.yaml` and
`examples/scenarios/` into the empty directory, as a user copies the examples they start from.

Dependencies: by default the fresh venv reuses this venv's installed dependencies through a
`.pth` line (the venv's own site-packages stays first, so `import judge` is the wheel), and
`pip check` then proves the wheel's declared requirements are met by what is visible.
Resolving and installing every dependency again from the pip cache took 61 s on the CI
machine, against about 7 s for the build plus this; `JUDGE_WHEEL_FULL_INSTALL=1` does the
full `pip install dist/*.whl` (the package registries only; no other network).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "judge", src / "judge", ignore=ignore)
    shutil.copytree(ROOT / "prompts", src / "prompts", ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = base / "dist"
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("judge-*.whl")

    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    site = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                .stdout.strip())
    full = os.environ.get("JUDGE_WHEEL_FULL_INSTALL") == "1"
    # pip from this venv, installing into the new one (`--python`, pip >= 22.3)
    pip = (sys.executable, "-m", "pip", "--python", py)
    if not full:
        (site / "zz-judge-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(*pip, "install", "-q", *(() if full else ("--no-deps",)), wheel,
                     timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return {"python": py, "judge": venv / "bin" / "judge", "site": site, "wheel": wheel,
            "pip": pip}


@pytest.fixture
def empty_dir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("JUDGE_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                       "PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp_path)
    return work, env


def test_wheel_holds_the_prompts_and_installs_alone(wheel_venv: dict[str, Any],
                                                     empty_dir: tuple[Path, dict[str, str]]
                                                     ) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel_venv["wheel"]).namelist())
    # the repository's top-level prompts/ ships inside the package, as judge/data/prompts/
    shipped = {"judge/data/prompts/" + p.relative_to(ROOT / "prompts").as_posix()
               for p in (ROOT / "prompts").rglob("*.md")}
    assert shipped and shipped <= names
    assert "judge/py.typed" in names and "judge/reports/templates/run.html.j2" in names
    assert not any(n.startswith(("tests/", "examples/", "prompts/")) for n in names)

    work, env = empty_dir
    where = _run(wheel_venv["python"], "-c", "import judge; print(judge.__file__)", cwd=work,
                 env=env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(wheel_venv["site"])
    check = _run(*wheel_venv["pip"], "check", env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_prompts_check_and_run_from_an_empty_directory(wheel_venv: dict[str, Any],
                                                       empty_dir: tuple[Path, dict[str, str]]
                                                       ) -> None:
    work, env = empty_dir
    judge = wheel_venv["judge"]
    listed = _run(judge, "prompts", "list", cwd=work, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["scope_fidelity", "v3"] in [r[:2] for r in rows] and len(rows) >= 8
    assert {r[3] for r in rows} == {"built-in"}
    shown = _run(judge, "prompts", "show", "scope_fidelity", cwd=work, env=env)
    assert shown.returncode == 0 and str(wheel_venv["site"]) in shown.stdout.splitlines()[0]

    shutil.copy(ROOT / "examples" / "nightly.yaml", work / "nightly.yaml")
    shutil.copytree(ROOT / "examples" / "scenarios", work / "scenarios")
    ok = _run(judge, "check", "scenarios/refund-once", "scenarios/refund-once/pass.json",
              cwd=work, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    vetoed = _run(judge, "check", "scenarios/refund-once",
                  "scenarios/refund-once/fail-second-refund.json", cwd=work, env=env)
    assert vetoed.returncode == 1, vetoed.stdout + vetoed.stderr

    run = _run(judge, "run", "nightly.yaml", "--suite", "pull_request", "--junit", "junit.xml",
               "--summary-md", "summary.md", cwd=work, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (work / "judge.db").is_file()
    cases = ET.parse(work / "junit.xml").getroot().iter("testcase")
    assert len(list(cases)) == 4  # three scenario x trace cases and the release gate
    assert "| " in (work / "summary.md").read_text(encoding="utf-8")
    runs = _run(judge, "runs", "list", cwd=work, env=env)
    assert runs.returncode == 0 and "pull_request" in runs.stdout
