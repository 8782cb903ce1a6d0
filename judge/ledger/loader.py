"""Load a scenario YAML file; errors name the file, the line and the field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from judge.errors import InputError
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import Scenario
from judge.trace.loader import first_error, format_loc


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false. YAML 1.1 also reads yes/no/on/off
    as booleans, so `on: tool_call` or a matcher `equals: no` would silently change meaning."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))


@dataclass(frozen=True)
class LoadedScenario:
    scenario: Scenario
    ledger: Ledger
    file: str


def _line_of(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the YAML node at `loc` (the deepest node found)."""
    line = None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        nxt: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == part:
                    nxt = v
                    line = k.start_mark.line + 1
                    break
        elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
              and 0 <= part < len(node.value)):
            nxt = node.value[part]
        node = nxt
    if node is not None:
        line = node.start_mark.line + 1
    return line


M = TypeVar("M", bound=BaseModel)


def load_yaml_model(path: Path, model: type[M], what: str) -> M:
    """Read a YAML file into a strict pydantic model; every error is one InputError naming
    the file, the line and the field (YAML 1.2 booleans, see `_Loader`)."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror})", file=file) from None
    try:
        node = yaml.compose(text, Loader=_Loader)
        data: Any = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML ({problem})", file=file, line=line) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping at the top of the {what}", file=file)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = first_error(exc)
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field (not in the {what} format; check its spelling)"
        raise InputError(msg, file=file, line=_line_of(node, loc),
                         path=format_loc(loc)) from None


def load_scenario(path: str | Path) -> LoadedScenario:
    p = Path(path)
    if p.is_dir():
        p = p / "scenario.yaml"
    file = str(p)
    scenario = load_yaml_model(p, Scenario, "scenario")
    ledger = Ledger.reduce(scenario.ledger, file=file)
    return LoadedScenario(scenario, ledger, file)
