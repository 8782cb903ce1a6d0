"""`judge prompts list|show|diff`: the versioned prompt files and their identities."""

from __future__ import annotations

import difflib

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.prompts.files import Prompt, list_prompts, load_prompt, prompt_dirs

app = typer.Typer(help="Versioned judge prompts: list, show, diff.", no_args_is_help=True,
                  add_completion=False)


@app.command("list")
def list_cmd() -> None:
    """Every prompt: rubric, version, hash, source and description.

    The source is `built-in` (shipped in the package), `user` (the user prompts directory:
    JUDGE_PROMPTS_DIR or judge.toml `prompts_dir`), or, for a user file of the same rubric
    and version as a built-in one, `user, replaces built-in` with `(same text)` or
    `(text differs from built-in sha256:…)`: the user's text is what runs, and its hash, not
    the built-in's, is what verdicts and calibration records carry. A version marked
    `status: draft` (what `judge align` writes) says so: it is never the default.
    """
    with cli_errors():
        prompts = list_prompts()
        dirs = prompt_dirs()
    if not prompts:
        where = " or ".join(str(d) for _, d in dirs)
        echo(f"no prompt files under {field(where)}")
        return
    width = max(len(p.rubric) for p in prompts)
    for p in prompts:
        echo(f"{field(p.rubric):<{width}}  {field(p.version):<4}  {p.hash}  "
             f"{_source(p):<8}  {field(p.description)}")


def _source(p: Prompt) -> str:
    draft = f", draft (aligned from {field(str(p.aligned.get('parent')))}; not the default " \
        "until accepted)" if p.is_draft and p.aligned else ", draft (not the default)" \
        if p.is_draft else ""
    if p.replaces is None:
        return p.source + draft
    if p.replaces == p.hash:
        return f"{p.source}, replaces built-in (same text){draft}"
    return f"{p.source}, replaces built-in (text differs from built-in {p.replaces}){draft}"


@app.command("show")
def show_cmd(
    rubric: str = typer.Argument(..., help="rubric name, e.g. scope_fidelity"),
    version: str | None = typer.Option(None, "--version", "-v",
                                       help="prompt version (default: the highest that "
                                            "is not a draft)"),
) -> None:
    """Print one prompt file with its identity."""
    with cli_errors():
        p = load_prompt(rubric, version)
        text = p.path.read_text(encoding="utf-8")
    echo(f"# {field(p.path)}  {p.hash}  {_source(p)}")
    echo(text.rstrip("\n"))  # the file as it is, control characters shown


@app.command("diff")
def diff_cmd(
    rubric: str = typer.Argument(..., help="rubric name"),
    v1: str = typer.Argument(..., help="older version, e.g. v1"),
    v2: str = typer.Argument(..., help="newer version, e.g. v2"),
) -> None:
    """Unified diff between two versions of a rubric's prompt, with both hashes."""
    with cli_errors():
        a, b = load_prompt(rubric, v1), load_prompt(rubric, v2)
        ta = a.path.read_text(encoding="utf-8").splitlines(keepends=True)
        tb = b.path.read_text(encoding="utf-8").splitlines(keepends=True)
    echo(f"# {field(rubric)} {field(a.version)}: {a.hash}")
    echo(f"# {field(rubric)} {field(b.version)}: {b.hash}")
    diff = list(difflib.unified_diff(ta, tb, fromfile=f"{rubric}/{a.version}.md",
                                     tofile=f"{rubric}/{b.version}.md"))
    if not diff:
        echo("(no differences)")
        return
    echo("".join(diff).rstrip("\n"))
