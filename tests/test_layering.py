"""Imports point down the data flow: import → ledger → checks → items → render (redacted) →
provider → validated verdict → route → store → labels → agreement/calibration → reports.

Every judge package (and top-level module) has a rule set of packages it must never import,
and the packages' import graph has no cycle. Imports are read with `ast` from every file,
lazy ones included (inside functions, under TYPE_CHECKING, and module paths handed to
`importlib` as string literals)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "judge"

#: the units of the graph: subpackages and top-level modules ("__init__" is judge/__init__.py)
UNITS = sorted({p.name for p in PKG.iterdir() if p.is_dir() and any(p.glob("*.py"))}
               | {p.stem for p in PKG.glob("*.py")})

#: upstream of any judge, model or database
_PRE_JUDGE = {"providers", "store", "grading", "prompts", "items", "verdicts", "suite",
              "calibration", "review", "routing", "pipeline", "labels", "reports", "settings",
              "request", "redaction", "compare"}
_EVERYTHING = set(UNITS) - {"errors"}

FORBIDDEN: dict[str, set[str]] = {
    "__init__": set(),
    "errors": _EVERYTHING,
    "data": _EVERYTHING,  # where the built-in prompts are: read by prompts and by checks
    "formats": _EVERYTHING,
    "trace": _PRE_JUDGE | {"checks", "ledger", "importers", "formats"},
    "ledger": _PRE_JUDGE | {"checks", "importers"},
    "checks": _PRE_JUDGE | {"importers"},
    "importers": _PRE_JUDGE | {"checks", "ledger"},
    "drafting": _PRE_JUDGE,  # judge init: traces -> a draft scenario; no judge, no database
    "pytest_plugin": _PRE_JUDGE,  # deterministic checks only
    "record": _EVERYTHING - {"trace"},  # traces written where the agent runs: trace, errors
    "diff": _PRE_JUDGE | {"checks", "importers"},  # traces against a baseline: no judge
    "items": _PRE_JUDGE - {"items"},
    "request": _EVERYTHING,
    "redaction": _EVERYTHING - {"request"},  # the adapter takes the settings' Redaction type
    "safe_text": _EVERYTHING,
    "lifeline": _EVERYTHING,  # a forked child's tie to its parent: below everything
    "outputs": _EVERYTHING,
    "prompts": {"providers", "store", "grading", "suite", "pipeline", "calibration", "review",
                "routing", "labels", "reports"},
    "verdicts": {"providers", "prompts", "store", "grading", "suite", "pipeline",
                 "calibration", "review", "routing", "labels", "reports"},
    "providers": {"store", "suite", "grading", "pipeline", "review", "calibration", "routing",
                  "labels", "reports", "compare"},
    "settings": {"providers", "prompts", "verdicts", "store", "grading", "suite", "pipeline",
                 "calibration", "review", "routing", "labels", "reports"},
    "grading": {"store", "suite", "pipeline", "routing", "review", "calibration", "labels",
                "reports", "compare"},
    "routing": _EVERYTHING - {"formats"},
    "store": {"routing", "review", "calibration", "reports", "suite", "grading", "pipeline",
              "labels", "checks", "ledger", "items", "prompts", "verdicts", "settings",
              "compare"},
    "pipeline": {"suite", "review", "labels", "reports", "compare"},
    "suite": {"review", "labels", "reports", "compare"},
    # two versions on the same tasks (judge compare, judge canary): beside suite and
    # reports, over checks, diff, suite, stats, the store and the grading pipeline
    "compare": {"review", "labels", "reports", "calibration", "probes", "serve", "drafting",
                "record"},
    "review": {"providers", "grading", "pipeline", "suite", "calibration", "reports"},
    "labels": {"providers", "grading", "pipeline", "suite", "routing"},
    "calibration": {"suite", "probes"},
    "probes": {"suite", "review", "reports", "pipeline", "routing"},
    "reports": {"providers", "grading", "pipeline", "suite", "routing", "compare"},
    "stats": _EVERYTHING - {"formats", "stats"},
    "testing": set(),
    "serve": set(),  # the web app: a consumer like the CLI (and the CLI starts it)
    "cli": set(),
}
for _unit in FORBIDDEN:
    if _unit != "cli":
        FORBIDDEN[_unit] = FORBIDDEN[_unit] | {"cli"}  # nothing imports the CLI
    if _unit != "testing":
        FORBIDDEN[_unit] = FORBIDDEN[_unit] | {"testing"}  # production code never imports it
    if _unit != "pytest_plugin":
        FORBIDDEN[_unit] = FORBIDDEN[_unit] | {"pytest_plugin"}  # only pytest loads it
    FORBIDDEN[_unit] = FORBIDDEN[_unit] - {_unit}

_MODULE_PATH = re.compile(r"^judge(\.[A-Za-z_]\w*)+$")


def unit_of(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def judge_imports(path: Path) -> set[str]:
    """The judge units a module imports (at any depth, lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "judge":
                names = [f"judge.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _MODULE_PATH.match(node.value):
            names = [node.value]  # importlib.import_module("judge.x.y") and lazy tables
        for name in names:
            parts = name.split(".")
            if parts[0] == "judge" and len(parts) > 1 and parts[1] in UNITS:
                found.add(parts[1])
    return found


@cache
def graph() -> dict[str, dict[str, list[str]]]:
    """unit → imported unit → the files that import it."""
    edges: dict[str, dict[str, list[str]]] = {u: {} for u in UNITS}
    for f in sorted(PKG.rglob("*.py")):
        src = unit_of(f)
        for dst in judge_imports(f) - {src}:
            edges[src].setdefault(dst, []).append(str(f.relative_to(PKG.parent)))
    return edges


def strongly_connected(edges: dict[str, dict[str, list[str]]] | None = None) -> list[set[str]]:
    """The graph's cycles, as strongly connected components of more than one unit."""
    edges = graph() if edges is None else edges
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_every_unit_has_a_rule_set() -> None:
    assert set(UNITS) == set(FORBIDDEN), "give each judge package a rule set in FORBIDDEN"


@pytest.mark.parametrize("unit", sorted(FORBIDDEN))
def test_imports_point_down(unit: str) -> None:
    bad = {dst: files for dst, files in graph()[unit].items() if dst in FORBIDDEN[unit]}
    assert not bad, f"judge.{unit} must not import: {bad}"


@pytest.mark.parametrize("unit", UNITS)
def test_unit_is_on_no_import_cycle(unit: str) -> None:
    cycles = [c for c in strongly_connected() if unit in c]
    assert not cycles, f"judge.{unit} is on an import cycle through {sorted(cycles[0])}: " \
        + str({u: sorted(d for d in graph()[u] if d in cycles[0]) for u in sorted(cycles[0])})


def test_no_import_cycles_at_all() -> None:
    assert strongly_connected() == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    fake: dict[str, dict[str, list[str]]] = {
        "store": {"routing": ["x"]}, "routing": {"formats": ["y"]}, "formats": {"store": ["z"]},
        "trace": {"store": ["w"]}}
    assert strongly_connected(fake) == [{"store", "routing", "formats"}]
    del fake["formats"]["store"]
    assert strongly_connected(fake) == []


def test_lazy_imports_count(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from judge.store import Store\n"
                   "def f():\n    import judge.routing\n"
                   "LAZY = {'x': 'judge.calibration.lookup'}\n"
                   "NOT_A_MODULE = 'judge.toml'\n"
                   "from judge import formats\n")
    assert judge_imports(mod) == {"store", "routing", "calibration", "formats"}
