"""The new prompt version `judge align` proposes: written beside its parent, never over a file.

`<user prompts dir>/<rubric>/v(N+1).md`, N the highest version of the rubric in any source
(drafts included). Its body is the parent's, with the proposal added at the end of the
system message (examples and/or rules); its front matter is the parent's fields, then
`status: draft` and the `aligned` record (docs/formats.md, "Aligned prompt versions"). The
proposal's control and format characters (trace text) are written as escapes
(judge.safe_text.visible; line breaks and tabs kept). Every
string in the record is a plain word (`v3`, `fewshot`) or a double-quoted YAML scalar with
everything outside printable ASCII escaped, so no item id can end the front matter, add a
field or hide a character.

The file is created without clobbering (a temporary file hard-linked to its name: an
existing file of that name, whoever wrote it meanwhile, is never replaced), then loaded back
as any prompt file is; a file that does not load is removed and the failure reported.

A rerun that would write the same proposal from the same parent and split reuses the version
it wrote before (a draft, or accepted since) instead of adding another. Accepting deletes the
`status: draft` line (the hash leaves that line out, so it is unchanged; this is checked).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from judge.errors import ConfigError
from judge.prompts.files import (
    DRAFT,
    USER,
    Prompt,
    load_prompt,
    next_version,
    parse_prompt,
    rubric_versions,
    user_prompts_dir,
)
from judge.safe_text import visible

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def quote(text: str) -> str:
    """`text` as one YAML scalar: plain when it is a word YAML reads back as that string
    (`scope_fidelity`, `v4`), else double-quoted, pure ASCII (everything else escaped)."""
    if len(text) <= 200 and _PLAIN.fullmatch(text) and yaml.safe_load(text) == text:
        return text
    out = yaml.safe_dump(text, default_style='"', allow_unicode=False, width=2**31 - 1)
    return out.rstrip("\n").removesuffix("\n...")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return quote(str(value))


def emit(value: Any, indent: int = 0) -> list[str]:
    """Block-style YAML lines of a record of mappings (our keys), lists and scalars."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(v, Mapping | list) and v:
                lines.append(f"{pad}{k}:")
                lines += emit(v, indent + 2)
            else:
                empty = "[]" if isinstance(v, list) else "{}" if isinstance(v, Mapping) else None
                lines.append(f"{pad}{k}: {empty or _scalar(v)}")
        return lines
    for v in value:
        if isinstance(v, Mapping) and v:
            sub = emit(v, indent + 2)
            lines.append(f"{pad}- {sub[0].lstrip()}")
            lines += sub[1:]
        else:
            lines.append(f"{pad}- {_scalar(v)}")
    return lines


def candidate_text(parent: Prompt, version: str, addition: str,
                   record: Mapping[str, Any]) -> str:
    """The new version's whole file."""
    front = [
        "---",
        f"rubric: {quote(parent.rubric)}",
        f"version: {quote(version)}",
        f"description: {quote(parent.description + f' (aligned from {parent.version})')}",
        f"labels: [{', '.join(parent.labels)}]",
        f"status: {DRAFT}",
        "aligned:",
        *emit(record, 2),
        "---",
    ]
    # the examples and rules hold trace text: its control and format characters (ESC, BEL,
    # bidi overrides, zero-width spaces) are written as escapes, so `cat` or `git diff` of
    # the committed file shows them instead of acting on them
    shown = visible(addition.rstrip("\n"), keep="\n\t")
    body = ["=== system ===", parent.system.rstrip("\n"), "", shown,
            "=== user ===", parent.user.rstrip("\n")]
    return "\n".join(front + body) + "\n"


def inherited_items(parent: Prompt) -> list[str]:
    """The items whose text (examples) or rules (cited items) the parent prompt already
    holds: its own and those it inherited (`aligned.inherited_items`), so a descendant knows
    them even when an ancestor's file is gone."""
    record = parent.aligned or {}
    found = [*(record.get("inherited_items") or []), *(record.get("examples") or [])]
    for rule in record.get("guidelines") or []:
        if isinstance(rule, dict):
            found += [str(i) for i in rule.get("cites") or []]
    return sorted({str(i) for i in found})


def prompts_root() -> Path:
    """The user prompts directory new versions go into, checked before any work: set, a
    directory if it exists, else one whose parent exists (judge align creates the directory
    itself and the rubric's folder in it, never a missing parent: a mistyped path such as
    `pd/../pd2/../pd3` or `/nonexistent/x/y` is refused, not made). ConfigError otherwise."""
    root = user_prompts_dir()
    if root is None:
        raise ConfigError("judge align writes the new prompt version into the user prompts "
                          "directory, and none is set: set JUDGE_PROMPTS_DIR (or prompts_dir "
                          "in judge.toml), e.g. JUDGE_PROMPTS_DIR=prompts")
    where = f"the user prompts directory {str(root)!r} (JUDGE_PROMPTS_DIR or prompts_dir)"
    if root.exists():
        if not root.is_dir():
            raise ConfigError(f"{where} is not a directory")
    elif not root.parent.is_dir():
        raise ConfigError(f"{where}: its parent {str(root.parent)!r} does not exist; judge "
                          "align creates only the last directory (create the parent, or "
                          "point JUDGE_PROMPTS_DIR at an existing directory)")
    return root


def target_dir(rubric: str) -> Path:
    """Where new versions of `rubric` go: the user prompts directory's rubric folder."""
    return prompts_root() / rubric


def same_proposal(a: Prompt, text: str) -> bool:
    """Whether the file of `a` says what `text` says, apart from its version."""
    try:
        b = parse_prompt(text, a.path)
    except ConfigError:
        return False
    return a.template == b.template and a.aligned == b.aligned and a.labels == b.labels


def earlier_version(parent: Prompt, text_for: Any) -> Prompt | None:
    """A version of the rubric in the user directory — a draft, or one accepted since —
    that says what this run would write (`text_for(version)` gives the text for a version),
    or None."""
    for path in reversed(rubric_versions(parent.rubric)):
        prompt = load_prompt(parent.rubric, path.stem)
        if prompt.source == USER and prompt.aligned is not None \
                and prompt.aligned.get("parent_hash") == parent.hash \
                and same_proposal(prompt, text_for(prompt.version)):
            return prompt
    return None


def write_new(path: Path, text: str) -> None:
    """Create `path` (`<prompts dir>/<rubric>/<version>.md`) with `text`, making at most the
    prompts directory and the rubric's folder; never replaces an existing file (ConfigError
    if there is one, whoever made it)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        path.parent.parent.mkdir(exist_ok=True)  # the prompts directory (its parent exists)
        path.parent.mkdir(exist_ok=True)  # the rubric's folder
        with open(tmp, "x", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ConfigError(f"{path}: exists already; judge align never writes over a "
                              "prompt version (run it again to take the next version)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the new prompt version ({exc.strerror})"
                          ) from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def propose(parent: Prompt, addition: str, record: Mapping[str, Any]) -> tuple[Prompt, bool]:
    """The candidate version: an earlier version that says the same (written: False; a
    draft, or accepted since), else a new file (written: True), loaded back."""
    def text_for(version: str) -> str:
        return candidate_text(parent, version, addition, record)

    earlier = earlier_version(parent, text_for)
    if earlier is not None:
        return earlier, False
    version = next_version(parent.rubric)
    path = target_dir(parent.rubric) / f"{version}.md"
    text = text_for(version)
    parse_prompt(text, path)  # what is written must load: a ConfigError here is a bug
    write_new(path, text)
    try:
        prompt = load_prompt(parent.rubric, version)
    except ConfigError:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    if prompt.path.resolve() != path.resolve():
        raise ConfigError(f"{path}: written, but {prompt.path} is what version {version} "
                          "loads (check JUDGE_BUILTIN_PROMPTS and the prompts directories)")
    return prompt, True


def accept(prompt: Prompt) -> Prompt:
    """Make the draft `prompt` a version that can be the default: delete its `status:
    draft` line (its hash stays as it was). Returns it as loaded now."""
    text = prompt.path.read_text(encoding="utf-8")
    lines = text.split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    kept = [ln for i, ln in enumerate(lines) if not (0 < i < end and ln == f"status: {DRAFT}")]
    new = "\n".join(kept)
    if parse_prompt(new, prompt.path).hash != prompt.hash:
        raise ConfigError(f"{prompt.path}: accepting would change the prompt's hash; "
                          "the file was edited since judge align wrote it")
    tmp = prompt.path.with_name(f".{prompt.path.name}.{secrets.token_hex(6)}.tmp")
    try:
        tmp.write_text(new, encoding="utf-8", newline="\n")
        os.replace(tmp, prompt.path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ConfigError(f"{prompt.path}: cannot accept ({exc.strerror})") from None
    return load_prompt(prompt.rubric, prompt.version)
