"""Imports point down the data flow: traces, ledger and checks know nothing of judges,
providers or the database; providers know nothing of the store; statistics take plain arrays."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "judge"

FORBIDDEN = {
    "trace": {"providers", "store", "grading", "prompts", "items", "verdicts", "suite",
              "calibration", "review", "routing", "checks", "ledger", "cli"},
    "ledger": {"providers", "store", "grading", "prompts", "items", "verdicts", "suite",
               "calibration", "review", "routing", "checks", "cli"},
    "checks": {"providers", "store", "grading", "prompts", "items", "verdicts", "suite",
               "calibration", "review", "routing", "cli"},
    "importers": {"providers", "store", "grading", "prompts", "items", "suite", "calibration",
                  "review", "routing", "checks", "cli"},
    "providers": {"store", "suite", "grading", "review", "calibration", "cli", "testing"},
    "prompts": {"providers", "store", "suite", "grading", "review", "calibration", "cli",
                "testing"},
    "verdicts": {"providers", "prompts", "store", "suite", "grading", "review", "calibration",
                 "cli", "testing"},
    # single modules (judge/<name>.py)
    "settings": {"providers", "prompts", "verdicts", "store", "suite", "grading", "review",
                 "calibration", "cli", "testing"},
    "request": {"providers", "prompts", "verdicts", "settings", "items", "store", "suite",
                "grading", "review", "calibration", "cli", "testing"},
    "stats": {"trace", "ledger", "checks", "providers", "store", "grading", "prompts", "items",
              "suite", "calibration", "review", "routing", "labels", "formats", "cli"},
}


def judge_imports(path: Path) -> set[str]:
    """The judge subpackages a module imports (at any depth, lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "judge" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_down(layer: str) -> None:
    files = sorted((PKG / layer).rglob("*.py")) or [PKG / f"{layer}.py"]
    assert files[0].is_file()
    for f in files:
        bad = judge_imports(f) & FORBIDDEN[layer]
        assert not bad, f"{f.relative_to(PKG.parent)} imports judge.{sorted(bad)}"
