"""Commands that are named and described up front, and imported only when they run.

`judge --help` needs each command's name and one line of help, nothing more; importing every
command module for it would import sqlalchemy, numpy and the provider SDKs through them. A
`LazyCommand` stands in the group for one command (a function) or one sub-app (a `typer.Typer`)
until click asks it to parse arguments — to run it, or to show its own `--help` — and then
builds the real click command exactly as an eagerly registered one would be built, and hands
over to it. Click and typer see the real command from there on (`ctx.command` is the real one).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:  # typer vendors click; only its types are named here
    from typer._click import Command, Context, Parameter


def _flags_show_no_type() -> None:
    """Typer (0.29) prints a flag's type in the help, `--debug <bool>`, as if it took a
    value; it takes none (`--debug`, not `--debug true`). Every flag of every judge command,
    `--help` included, is shown without one; options that take a value keep theirs."""
    shown = TyperOption.display_type_rich
    if getattr(shown, "judge_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Context) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.judge_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_show_no_type()


class ClosedStdout(Exception):
    """The reader of stdout went away (`judge ... | head`). Raised by the root group instead
    of the BrokenPipeError, which click itself would turn into exit 1 (a veto's code);
    `judge.cli.main` ends it with 141."""


@dataclass(frozen=True)
class Entry:
    """One command: `module:attr` is the command function or a `typer.Typer` sub-app.

    `help` is the one line shown in the parent's command list (a test keeps it equal to the
    real command's); `panel` the help panel it is listed under (`judge --help` groups the
    commands by workflow); `extra` adds lazy commands to a sub-app (`judge report run`).
    """

    name: str
    module: str
    attr: str
    help: str
    extra: tuple[Entry, ...] = field(default=())
    panel: str | None = None

    def load(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attr)


def build_command(entry: Entry) -> Command:
    """The click command typer builds for `entry` when it is registered eagerly."""
    target = entry.load()
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    holder.callback()(_noop)  # a callback makes `holder` a group, so the name is kept
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=entry.name, rich_help_panel=entry.panel)
    else:
        holder.command(entry.name, rich_help_panel=entry.panel)(target)
    group = cast(TyperGroup, typer.main.get_command(holder))
    command = group.commands[entry.name]
    if entry.extra and isinstance(command, TyperGroup):
        for sub in entry.extra:
            command.add_command(LazyCommand(sub), sub.name)
    return command


def _noop() -> None:
    """Placeholder callback of the throwaway group used to build one command."""


class LazyCommand(TyperCommand):
    """Stands in for `entry` in a group: its name and help now, the real command on use."""

    def __init__(self, entry: Entry) -> None:
        super().__init__(entry.name, help=entry.help, rich_help_panel=entry.panel)
        self.entry = entry
        self._real: Command | None = None

    def real(self) -> Command:
        if self._real is None:
            self._real = build_command(self.entry)
        return self._real

    # Everything that parses, runs or describes the command in full goes to the real one.
    def make_context(self, info_name: str | None, args: list[str],
                     parent: Context | None = None,
                     **extra: Any) -> Context:
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Context) -> Any:
        return self.real().invoke(ctx)

    def get_params(self, ctx: Context) -> list[Parameter]:
        return self.real().get_params(ctx)

    def get_help(self, ctx: Context) -> str:
        return self.real().get_help(ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        return self.real().main(args, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)


class LazyGroup(TyperGroup):
    """A typer group whose commands are the `ENTRIES` of a subclass, loaded on use."""

    ENTRIES: tuple[Entry, ...] = ()

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for entry in self.ENTRIES:
            self.add_command(LazyCommand(entry), entry.name)

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:  # click would exit 1 (a veto's code): see ClosedStdout
            raise ClosedStdout() from exc
