"""Every float option of every command is finite and in its range (issue 21: `--lease nan`
started `judge serve` and then answered 500 on every page; NaN options said "should be ≤ 2").

The options are found by walking the real click commands (no list to keep in step): each
float option, given `nan`, `inf`, `-inf` or `1e300`, ends the command before it starts, with
exit 2 and one line naming the option and saying why."""

from __future__ import annotations

import math
import sys

import pytest

from judge.cli.lazy import LazyCommand, build_command
from judge.cli.main import COMMANDS, main
from judge.cli.numbers import number


def _float_options(names: frozenset[str] | None = None) -> list[tuple[list[str], str]]:
    """(command path, option name) of every float option of every command and sub-command
    (with `names`: every option so named, whatever its type)."""
    import typer

    found: list[tuple[list[str], str]] = []

    def walk(path: list[str], command: object) -> None:
        if isinstance(command, LazyCommand):
            command = command.real()
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk([*path, name], sub)
        for param in getattr(command, "params", []):
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if not isinstance(param, typer.core.TyperOption):
                continue
            if (names is None and annotation is float) or (names is not None
                                                           and set(param.opts) & names):
                found.append((path, max(param.opts, key=len)))

    for entry in COMMANDS:
        walk([entry.name], build_command(entry))
    return found


FLOAT_OPTIONS = _float_options()
SEED_OPTIONS = _float_options(frozenset({"--seed"}))


def test_the_walk_finds_the_options_we_know() -> None:
    names = {(" ".join(p), o) for p, o in FLOAT_OPTIONS}
    assert {("serve", "--lease"), ("grade", "--temperature"), ("run", "--audit-share"),
            ("worker", "--lease"), ("labels plan", "--target-width")} <= names
    assert len(names) >= 15


@pytest.mark.parametrize(("path", "option"), FLOAT_OPTIONS,
                         ids=[f"{' '.join(p)} {o}" for p, o in FLOAT_OPTIONS])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "NaN", "1" * 5000])
def test_a_float_option_refuses_what_is_not_a_finite_number_in_range(
        path: list[str], option: str, value: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["judge", *path, option, value])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    assert done.value.code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and not out, err
    assert lines[0].startswith("judge: error: Invalid value for") and option in lines[0]
    assert "finite" in lines[0] or "is not in" in lines[0]


@pytest.mark.parametrize(("lo", "hi", "lo_open", "hi_open", "text", "ok"), [
    (0.0, 2.0, False, False, "0", True), (0.0, 2.0, False, False, "2", True),
    (0.0, 2.0, False, False, "2.0000001", False), (0.0, 2.0, False, False, "-0.1", False),
    (0.0, 1e9, True, False, "0", False), (0.0, 1e9, True, False, "1e-9", True),
    (0.0, 1.0, True, True, "1", False), (0.0, 1.0, True, True, "0.999", True),
    (None, None, False, False, "-1e308", True), (None, None, False, False, "abc", False),
    (None, None, False, False, " 1.5 ", True), (None, None, False, False, "", False),
])
def test_number_bounds(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool,
                       text: str, ok: bool) -> None:
    import typer

    parse = number(lo, hi, lo_open=lo_open, hi_open=hi_open)
    if ok:
        assert math.isfinite(parse(text))
    else:
        with pytest.raises(typer.BadParameter):
            parse(text)


def test_the_walk_finds_the_seeds() -> None:
    names = {" ".join(p) for p, _o in SEED_OPTIONS}
    assert {"agreement", "align", "compare", "route", "labels plan"} <= names


@pytest.mark.parametrize(("path", "option"), SEED_OPTIONS,
                         ids=[f"{' '.join(p)} {o}" for p, o in SEED_OPTIONS])
@pytest.mark.parametrize("value", ["-1", str(2**32), "1.5", "nan"])
def test_a_seed_is_a_whole_number_numpy_takes(
        path: list[str], option: str, value: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--seed -1` was "internal error: ValueError: expected non-negative integer" (numpy's
    generators take 0 to 2**32 - 1)."""
    monkeypatch.setattr(sys, "argv", ["judge", *path, option, value])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert done.value.code == 2 and len(lines) == 1 and not out, err
    assert lines[0].startswith("judge: error: Invalid value for '--seed'"), err
