"""Shared fixtures: paths to the repository's examples and data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Hypothesis in the README's test command (and so in CI) runs a fixed, derandomized set of
# examples: the suite gives the same answer on every run, so a red CI is a real regression,
# never the luck of the draw. Exploring new examples is a separate, deliberate step:
#   ./scripts/test.sh --hypothesis-profile=explore --hypothesis-seed=N   (N = 1, 2, ...)
# (or JUDGE_HYPOTHESIS_PROFILE=explore); what it finds becomes an @example or a fix.
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, deadline=None,
                                     print_blob=True)
hypothesis_settings.load_profile(os.environ.get("JUDGE_HYPOTHESIS_PROFILE", "ci"))

pytest_plugins = ["conftest_store"]  # store fixtures (SQLite + throwaway PostgreSQL)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TAU_BENCH = (EXAMPLES / "data" / "tau-bench-airline" / "historical_trajectories"
             / "gpt-4o-airline.json")


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own working directory with no judge settings leaking in, and
    its own cache directory (the structured-output modes found per server are remembered
    under $XDG_CACHE_HOME/judge)."""
    monkeypatch.chdir(tmp_path)
    for var in ("JUDGE_DATABASE_URL", "JUDGE_ANNOTATOR", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                "OPENAI_BASE_URL", "JUDGE_MODEL", "JUDGE_CONFIG", "JUDGE_RESPONSE_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
