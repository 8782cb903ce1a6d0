"""Prompt files `<rubric>/<version>.md`: YAML front matter plus a template.

Where they are found: the built-in prompts are the repository's top-level `prompts/`,
shipped in the wheel as package data (`judge/data/prompts/`, judge.data.builtin); a user
prompts directory (`JUDGE_PROMPTS_DIR`, or `prompts_dir`
in judge.toml: `judge.settings.prompts_dir`) is laid over them, or used alone with
`JUDGE_BUILTIN_PROMPTS=off` / `builtin_prompts = false`. A user `scope_fidelity/v1.md`
replaces the built-in file of the same rubric and version; a new rubric or version adds.
Every Prompt says where it came from (`source`, and `replaces`: the hash of the built-in
file it replaced, if any).

    ---
    rubric: scope_fidelity
    version: v1
    description: one line
    labels: [pass, fail]
    ---
    === system ===
    ...system template...
    === user ===
    ...user template...

Templates use `{{name}}` substitution from a fixed set of variables (TEMPLATE_VARIABLES);
an undefined variable or a broken front matter is a ConfigError naming the file, the line
and the field, raised at load time, before any provider call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from judge.data.builtin import prompts_dir as builtin_prompts_dir
from judge.errors import ConfigError
from judge.prompts.identity import prompt_hash
from judge.verdicts.schema import verdict_schema

ALLOWED_LABELS = ("pass", "fail")
FRONT_FIELDS = ("rubric", "version", "description", "labels")
#: Variables a template may use; `render` fills every one of them.
TEMPLATE_VARIABLES = frozenset({
    "goal", "ledger", "events", "target", "rubric", "rubric_labels", "item_kind",
    "target_seq", "ledger_keys", "event_seqs", "nonce", "fence_open", "fence_close",
    "ledger_as_of", "unsupported", "end_state", "actions", "foreign", "leak_key",
})
VAR_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
SECTION_RE = re.compile(r"^===\s*(system|user)\s*===\s*$", re.MULTILINE)
_VERSION_RE = re.compile(r"^v(\d+)(.*)$")


@dataclass(frozen=True)
class Prompt:
    """One version of one rubric's prompt. `hash` is its identity (see identity.py)."""

    rubric: str
    version: str
    description: str
    labels: tuple[str, ...]
    template: str  # the body after the front matter (both sections)
    path: Path
    hash: str
    system: str = ""
    user: str = ""
    variables: frozenset[str] = field(default_factory=frozenset)
    #: where the file was found: BUILTIN or USER
    source: str = "built-in"
    #: for a user file of the same rubric and version as a built-in one: the built-in's hash
    replaces: str | None = None

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The output schema (shared by every request of this prompt: do not mutate)."""
        return verdict_schema(self.labels)


BUILTIN = "built-in"
USER = "user"
#: the built-in prompts: the package's copy in a wheel, the checkout's `prompts/` in the source tree
BUILTIN_PROMPTS_DIR = builtin_prompts_dir()


def user_prompts_dir() -> Path | None:
    """The user prompts directory (JUDGE_PROMPTS_DIR, else judge.toml `prompts_dir`), or None."""
    from judge.settings import prompts_dir  # lazy: parsing prompts needs no pydantic

    return prompts_dir()


def prompt_dirs() -> list[tuple[str, Path]]:
    """(source, directory) in rising precedence: the built-in prompts, then the user's.
    With `builtin_prompts` off (and a user directory), the user's alone."""
    from judge.settings import builtin_prompts

    user = user_prompts_dir()
    if user is not None and not builtin_prompts():
        return [(USER, user)]
    dirs = [(BUILTIN, BUILTIN_PROMPTS_DIR)]
    if user is not None:
        dirs.append((USER, user))
    return dirs


def prompts_root() -> Path:
    """Where prompt files are looked up first: the user prompts directory, else the
    built-in one."""
    return prompt_dirs()[-1][1]


def version_key(version: str) -> tuple[int, str]:
    m = _VERSION_RE.match(version)
    return (int(m.group(1)), m.group(2)) if m else (-1, version)


def _err(file: Path, line: int | None, fld: str | None, message: str) -> ConfigError:
    where = str(file) + (f":{line}" if line is not None else "")
    if fld:
        where += f": field '{fld}'"
    return ConfigError(f"{where}: {message}")


def _split_front_matter(text: str, file: Path) -> tuple[str, str, int]:
    """(front matter, body, line number where the body starts)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise _err(file, 1, None, "prompt file must start with a '---' front matter line")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1:]), i + 2
    raise _err(file, 1, None, "front matter is not closed by a '---' line")


def _front_line(front: str, name: str) -> int | None:
    for i, line in enumerate(front.split("\n")):
        if re.match(rf"^{re.escape(name)}\s*:", line):
            return i + 2  # +1 for 1-based, +1 for the opening '---'
    return None


def parse_prompt(text: str, path: Path) -> Prompt:
    """Parse and check one prompt file's text (ConfigError on any problem)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    front, body, body_line = _split_front_matter(text, path)
    try:
        meta: Any = yaml.safe_load(front) if front.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise _err(path, line, None, f"malformed front matter ({problem})") from None
    if not isinstance(meta, dict):
        raise _err(path, 2, None, "front matter must be a mapping")
    for name in meta:
        if name not in FRONT_FIELDS:
            raise _err(path, _front_line(front, str(name)), str(name),
                       f"unknown front matter field (expected {', '.join(FRONT_FIELDS)})")
    for name in FRONT_FIELDS:
        if name not in meta or meta[name] in (None, ""):
            raise _err(path, 1, name, "required in the front matter")
    for name in ("rubric", "version", "description"):
        if not isinstance(meta[name], str):
            raise _err(path, _front_line(front, name), name, "must be a string")
    labels = meta["labels"]
    if (not isinstance(labels, list) or not labels
            or not all(isinstance(x, str) and x in ALLOWED_LABELS for x in labels)
            or len(set(labels)) != len(labels)):
        raise _err(path, _front_line(front, "labels"), "labels",
                   f"must be a list drawn from {list(ALLOWED_LABELS)}")
    rubric, version = meta["rubric"], meta["version"]
    if path.parent.name != rubric:
        raise _err(path, _front_line(front, "rubric"), "rubric",
                   f"'{rubric}' does not match the directory name '{path.parent.name}'")
    if path.stem != version:
        raise _err(path, _front_line(front, "version"), "version",
                   f"'{version}' does not match the file name '{path.stem}'")
    system, user = _sections(body, body_line, path)
    _check_variables(body, body_line, path)
    used = {m.group(1) for m in VAR_RE.finditer(body)}
    return Prompt(
        rubric=rubric, version=version, description=meta["description"].strip(),
        labels=tuple(labels), template=body, path=path,
        hash=prompt_hash(text, verdict_schema(tuple(labels))), system=system, user=user,
        variables=frozenset(used),
    )


def _sections(body: str, body_line: int, path: Path) -> tuple[str, str]:
    marks = list(SECTION_RE.finditer(body))
    names = [m.group(1) for m in marks]
    if names != ["system", "user"]:
        raise _err(path, body_line, None,
                   "the template needs a '=== system ===' section then a '=== user ===' "
                   f"section (found {names or 'none'})")
    if body[: marks[0].start()].strip():
        line = body_line + body[: marks[0].start()].lstrip("\n").count("\n")
        raise _err(path, line, None, "text before the '=== system ===' section")
    system = body[marks[0].end(): marks[1].start()].strip("\n")
    user = body[marks[1].end():].strip("\n")
    for name, section in (("system", system), ("user", user)):
        if not section.strip():
            raise _err(path, body_line, None, f"the {name} section is empty")
    return system, user


def _check_variables(body: str, body_line: int, path: Path) -> None:
    for lineno, line in enumerate(body.split("\n"), start=body_line):
        for m in VAR_RE.finditer(line):
            if m.group(1) not in TEMPLATE_VARIABLES:
                raise _err(path, lineno, m.group(1),
                           "undefined template variable (known: "
                           f"{', '.join(sorted(TEMPLATE_VARIABLES))})")
        rest = VAR_RE.sub("", line)
        if "{{" in rest or "}}" in rest:
            raise _err(path, lineno, None,
                       "malformed template placeholder (use {{name}} with a known name)")


_CACHE: dict[tuple[str, int, int, str, str | None], Prompt] = {}


def read_prompt(path: Path, source: str = BUILTIN, replaces: Path | None = None) -> Prompt:
    """Load one prompt file (cached by path, mtime and size). `replaces`: the built-in file
    a user file of the same rubric and version replaces."""
    base = read_prompt(replaces).hash if replaces is not None else None
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size, source, base)
        if key in _CACHE:
            return _CACHE[key]
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _err(path, None, None, f"cannot read prompt file ({exc.strerror})") from None
    prompt = replace(parse_prompt(text, path), source=source, replaces=base)
    _CACHE[key] = prompt
    return prompt


@dataclass(frozen=True)
class _Found:
    path: Path
    source: str
    replaces: Path | None

    def load(self) -> Prompt:
        return read_prompt(self.path, self.source, self.replaces)


_RUBRIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def is_rubric_name(name: str) -> bool:
    """A rubric name is one directory name under a prompts directory: never empty (that is
    the directory itself, README and all), never `..` or a path (`../../../etc`)."""
    return bool(_RUBRIC_NAME.fullmatch(name)) and ".." not in name


def _versions(rubric: str) -> list[_Found]:
    """The files of one rubric, every directory laid over the one before, by version."""
    found: dict[str, _Found] = {}
    if not is_rubric_name(rubric):
        return []
    for source, root in prompt_dirs():
        d = root / rubric
        if not d.is_dir():
            continue
        for p in d.glob("*.md"):
            under = found.get(p.stem)
            found[p.stem] = _Found(p, source, under.path if under is not None else None)
    return [found[v] for v in sorted(found, key=version_key)]


def rubric_versions(rubric: str) -> list[Path]:
    """The prompt files of `rubric` in version order (a user file in place of a built-in)."""
    return [f.path for f in _versions(rubric)]


def known_rubrics() -> list[str]:
    names: set[str] = set()
    for _, root in prompt_dirs():
        if root.is_dir():
            names.update(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.md")))
    return sorted(names)


def load_prompt(rubric: str, version: str | None = None) -> Prompt:
    """The prompt of `rubric` at `version` (None = the highest version of any source)."""
    found = _versions(rubric)
    if not found:
        known = ", ".join(known_rubrics()) or "none"
        if not is_rubric_name(rubric):
            raise ConfigError(f"{_quoted(rubric)} is not a rubric name (letters, digits, "
                              f"'_', '-', '.'; known rubrics: {known})")
        where = " or ".join(str(root / rubric) for _, root in prompt_dirs())
        raise ConfigError(f"unknown rubric '{rubric}': no prompt files under "
                          f"{where} (known rubrics: {known})")
    if version is None:
        return found[-1].load()
    for f in found:
        if f.path.stem == version:
            return f.load()
    have = ", ".join(f.path.stem for f in found)
    raise ConfigError(f"rubric '{rubric}' has no prompt version '{version}' (have: {have})")


def list_prompts() -> list[Prompt]:
    """Every prompt version of every rubric, in (rubric, version) order."""
    return [f.load() for r in known_rubrics() for f in _versions(r)]


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "…")
