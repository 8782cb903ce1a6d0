"""The one YAML reader of scenarios and suite manifests: strict, so a file means one thing.

PyYAML's SafeLoader with these changes, each refused with a `yaml.MarkedYAMLError` that names
the line:

- **Duplicate keys** are an error naming both lines. YAML forbids them, but PyYAML keeps the
  last one silently: one more `forbidden: []` under `rules:` used to switch a safety veto off
  while `judge validate` said "ok".
- **Anchors and aliases** (`&a`, `*a`) are refused: a scenario is a reviewed document, and
  aliases are how a 3.6 KB "billion laughs" file becomes gigabytes once expanded. The first
  `&` or `*` stops the reading, before anything is built.
- **Merge keys** (`<<:`) are refused too (they exist to work with aliases; YAML 1.2 has none).
- **Nesting** deeper than `MAX_DEPTH` lists and mappings (judge.trace.document: the limit of
  every input document) is refused while composing, before Python's recursion limit.
- **Only JSON's types**: YAML 1.2 booleans (true/false only: YAML 1.1 also reads yes/no/on/off,
  so `on: tool_call` or `equals: no` would silently change meaning); no implicit timestamps
  (`2024-01-01` stays a string) and no explicit tags beyond str/int/float/bool/null/seq/map
  (`!!binary`, `!!set`, `!!timestamp`, `!!python/...` are errors). An integer too long for
  Python's int conversion is an error, not a ValueError; a `"\ud800"` escape that is no
  character (a lone surrogate) is an error, not text that cannot be printed or stored.

PyYAML rather than ruamel.yaml: it is already the dependency, is small to import, and its
composer and constructor have the two hooks needed (`compose_node`, `construct_mapping`);
ruamel.yaml refuses duplicate keys by default but would still need the same custom work for
aliases, depth and types, for a second YAML library in the install.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node

from judge.trace.document import MAX_DEPTH

_ALLOWED_TAGS = frozenset(f"tag:yaml.org,2002:{t}"
                          for t in ("str", "int", "float", "bool", "null", "seq", "map"))


class StrictYAMLError(yaml.MarkedYAMLError):
    """A YAML file that is well-formed but not allowed (see the module docstring)."""


def _error(problem: str, node_or_mark: Any) -> StrictYAMLError:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return StrictYAMLError(problem=problem, problem_mark=mark)


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys, anchors, aliases, merge keys, deep nesting
    and non-JSON types (see the module docstring)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    # -- composing: aliases, anchors and depth, before any value is built -------------------
    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _error(f"YAML aliases are not allowed (*{event.anchor}); write the value "
                         "out in full", event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _error(f"YAML anchors and aliases are not allowed (&{anchor}); write the "
                         "value out in full", event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and tag not in _ALLOWED_TAGS:
            raise _error(f"YAML tag '{tag}' is not allowed (only plain JSON-like values)",
                         event.start_mark)
        nests = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if nests:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _error(f"nested deeper than {MAX_DEPTH} levels (the limit; see "
                             "docs/formats.md)", event.start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            if nests:
                self._depth -= 1
        return node

    # -- constructing: duplicate keys, merge keys, integers ---------------------------------
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise _error("expected a mapping", node)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _error("YAML merge keys (<<) are not allowed", key_node)
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise _error("a mapping key must be a plain value (text or number)",
                             key_node) from None
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _error(f"duplicate key '{key}' (lines {seen[key]} and {line}; YAML keys "
                             "must be unique)", key_node)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_str(self, node: Node) -> str:
        value = str(super().construct_yaml_str(node))
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _error("not Unicode text (a \\ud800-\\udfff escape that is not half of a "
                         "surrogate pair)", node) from None
        return value

    def construct_yaml_int(self, node: Node) -> int:
        try:
            return int(super().construct_yaml_int(node))  # type: ignore[arg-type]
        except ValueError as exc:
            raise _error(f"integer out of range ({exc})", node) from None


# YAML 1.2 booleans only, and no implicit timestamps (they would become date objects).
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:str", StrictLoader.construct_yaml_str)


def load_yaml(text: str) -> tuple[Node | None, Any]:
    """The node tree (for line numbers) and the value of one YAML document; a
    `yaml.YAMLError` (with a mark where one is known) for anything malformed or refused."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data
