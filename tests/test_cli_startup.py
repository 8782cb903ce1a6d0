"""The CLI starts at once: commands load on use, and `judge check` imports no heavy library.

Regression guards, not timings (those are in benchmarks/cli.py): each runs a fresh Python so
that nothing another test imported can hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from judge.cli import main as main_module
from judge.cli.main import COMMANDS, app

HEAVY = ("sqlalchemy", "sqlmodel", "numpy", "scipy", "sklearn", "openai", "anthropic",
         "matplotlib")

TRACE = {"trace_id": "t/1", "events": [
    {"kind": "user", "text": "refund order-17"},
    {"kind": "tool_call", "tool": "refund_order", "args": {"orderId": "order-17"}},
    {"kind": "tool_result", "tool": "refund_order", "result": {"status": "ok"}}]}
SCENARIO = """\
id: refund
goal: Refund order-17 once
ledger:
  - {turn: 1, op: set, key: refunded, class: completion, persistence: task,
     sensitivity: costly, source: user, value: rf}
rules:
  mutating_tools: [refund_order]
  completion: {all_of: [{key: refunded, tool: refund_order}]}
"""

PROBE = """
import json, sys
watch = set(json.loads(sys.argv[2]))
sys.argv = ["judge", *json.loads(sys.argv[1])]
from judge.cli.main import main
code = None
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & watch)
cli = sorted(m for m in sys.modules if m.startswith("judge.cli."))
print(json.dumps({"code": code, "heavy": heavy, "cli": cli}), file=sys.stderr)
"""


def probe(*args: str) -> dict[str, Any]:
    """Run `judge ARGS` in a fresh interpreter; what it imported and its exit code."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
                          capture_output=True, text=True, timeout=120)
    last = done.stderr.strip().splitlines()[-1]
    result: dict[str, Any] = json.loads(last)
    return result


def test_help_imports_no_command_module_and_no_heavy_library() -> None:
    r = probe("--help")
    assert r["code"] in (0, None)
    assert r["heavy"] == []
    assert r["cli"] == ["judge.cli.lazy", "judge.cli.main"]


def test_check_imports_no_database_numpy_or_sdk(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    (tmp_path / "t.json").write_text(json.dumps(TRACE))
    for fmt in ("text", "json", "jsonl"):
        r = probe("check", str(tmp_path / "scenario.yaml"), str(tmp_path / "t.json"),
                  "--format", fmt)
        assert r["code"] in (0, None), r
        assert r["heavy"] == [], fmt
        assert "judge.cli.grade" not in r["cli"] and "judge.cli.check" in r["cli"]


def test_modules_judge_check_needs_import_no_heavy_library() -> None:
    code = ("import json, sys, judge.cli.main, judge.cli.check, judge.checks, judge.trace, "
            "judge.ledger; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    loaded = set(json.loads(out))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.fixture
def eager() -> Iterator[typer.Typer]:
    """The CLI as main.py registered it before commands loaded lazily: every module imported,
    `judge report run` added to the report sub-app (and taken off again afterwards)."""
    application = typer.Typer(name="judge", no_args_is_help=True,
                              pretty_exceptions_enable=False, add_completion=False,
                              help="Grade AI-agent trajectories with calibrated, model-blind "
                                   "LLM judges.")
    application.callback()(main_module._root)  # the root options (--debug)
    added: list[typer.Typer] = []
    for entry in COMMANDS:
        target = entry.load()
        if isinstance(target, typer.Typer):
            application.add_typer(target, name=entry.name, rich_help_panel=entry.panel)
            for sub in entry.extra:
                target.command(sub.name)(sub.load())
                added.append(target)
        else:
            application.command(entry.name, rich_help_panel=entry.panel)(target)
    try:
        yield application
    finally:
        for target in added:
            target.registered_commands.pop()


def command_paths(group: TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for name, cmd in group.commands.items():
        paths.append((*prefix, name))
        if isinstance(cmd, TyperGroup):
            paths.extend(command_paths(cmd, (*prefix, name)))
    return paths


def help_text(application: typer.Typer, path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(application, [*path, "--help"], prog_name="judge")
    assert result.exit_code == 0, (path, result.output)
    return result.stdout


def test_every_help_is_what_eager_registration_showed(eager: typer.Typer) -> None:
    """Names, order and one-line help of the lazy table match the commands themselves, and
    every command's own --help (options included) is unchanged."""
    group = typer.main.get_command(eager)
    assert isinstance(group, TyperGroup)
    paths = command_paths(group)
    assert ("report", "run") in paths and ("check",) in paths and len(paths) > len(COMMANDS)
    assert help_text(app, ()) == help_text(eager, ())
    for path in paths:
        assert help_text(app, path) == help_text(eager, path), path
    assert "--format" in help_text(app, ("check",))


def test_help_groups_the_commands_by_workflow() -> None:
    """`judge --help` lists every command under one of five panels, in the order of the
    work (issue 22), each panel in one piece."""
    from judge.cli.main import PANELS

    assert PANELS == ("Traces and checks", "Judging", "People", "Reports", "Operations")
    assert all(entry.panel in PANELS for entry in COMMANDS)
    order = [entry.panel for entry in COMMANDS]
    assert order == sorted(order, key=PANELS.index)  # no panel comes back later
    text = help_text(app, ())
    starts = [text.index(f"─ {panel} ─") for panel in PANELS]
    assert starts == sorted(starts) and "─ Commands ─" not in text
    for entry in COMMANDS:  # each command inside its own panel's box
        at = text.index(f"│ {entry.name} ")
        panel = max((p for p in PANELS if text.index(f"─ {p} ─") < at), key=text.index)
        assert panel == entry.panel, entry.name


def test_no_help_shows_a_type_for_a_flag(eager: typer.Typer) -> None:
    """A flag takes no value: `--debug`, never `--debug <bool>`; options that take one keep
    their type."""
    group = typer.main.get_command(eager)
    assert isinstance(group, TyperGroup)
    for path in [(), *command_paths(group)]:
        text = help_text(app, path)
        assert "<bool>" not in text, path
    run_help = help_text(app, ("run",))
    assert "--replay-only" in run_help and "<int" in run_help and "<str>" in run_help


@pytest.mark.parametrize("args", [["nope"], ["report", "nope"], ["chek"]])
def test_unknown_commands_are_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
