"""Load a scenario YAML file; errors name the file, the line and the field.

Scenarios and suite manifests are read by one strict YAML reader (`judge.ledger.strict_yaml`:
no duplicate keys, anchors, aliases or merge keys, bounded nesting, JSON's types only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from judge.errors import InputError
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import Scenario
from judge.ledger.strict_yaml import StrictLoader, StrictYAMLError, load_yaml
from judge.trace.files import unusable_file
from judge.trace.loader import first_error, format_loc

_Loader = StrictLoader  # the YAML loader class `load_scenario` reads with (for yaml.load)


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


def _problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    if problem and getattr(exc, "context", None):
        problem = f"{exc.context}: {problem}"  # type: ignore[attr-defined]
    return str(problem or str(exc).splitlines()[0])


def _error_line(exc: yaml.YAMLError, text: str) -> int | None:
    """The 1-based line a YAML error points at (a reader error has a character position)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    position = getattr(exc, "position", None)
    if isinstance(position, int):
        return text.count("\n", 0, position) + 1
    return None


def load_yaml_model(path: Path, model: type[M], what: str) -> M:
    """Read a YAML file into a strict pydantic model; every error is one InputError naming
    the file, the line and the field (the strict reader: `judge.ledger.strict_yaml`)."""
    file = str(path)
    problem = unusable_file(path)
    if problem is not None:
        raise InputError(f"cannot read {what}: {problem}", file=file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror})", file=file) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         file=file) from None
    try:
        node, data = load_yaml(text)
    except StrictYAMLError as exc:  # well-formed, but not allowed (duplicate key, alias...)
        raise InputError(_problem(exc), file=file, line=_error_line(exc, text)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML ({_problem(exc)})", file=file,
                         line=_error_line(exc, text)) from None
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
    ledger = Ledger.reduce(scenario.ledger, file=file, sessions=scenario.sessions)
    return LoadedScenario(scenario, ledger, file)
