"""`draft_scenario(paths)`: read traces, observe, draft, render, and prove the text loads.

The rendered YAML is loaded back with the scenario loader and validated before it is
returned: a draft that would not pass `judge validate` is a bug in judge, raised as an
`InternalDraftError` (never handed to a person as if it were fine).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from judge.checks.validate import validate_scenario
from judge.drafting.draft import Draft, build
from judge.drafting.observe import Observation
from judge.drafting.render import render
from judge.errors import InputError, JudgeError
from judge.ledger.loader import load_scenario
from judge.trace.loader import iter_trace_streams


class InternalDraftError(JudgeError):
    """judge drafted a scenario its own loader or validator refuses (a bug)."""


@dataclass(frozen=True)
class DraftResult:
    text: str
    draft: Draft


def observe_paths(paths: Iterable[str | Path]) -> tuple[Observation, int]:
    """Observe every trace of every file (streaming); the first bad input raises
    `InputError` naming its file, line and field. Returns the observation and file count."""
    obs = Observation()
    files = 0
    for path in paths:
        files += 1
        for stream in iter_trace_streams(path):
            obs.add(stream.header, stream.events)
    return obs, files


def draft_scenario(paths: Iterable[str | Path], scenario_id: str | None = None,
                   *, live: bool = False) -> DraftResult:
    """The commented draft scenario YAML for the traces in `paths`.

    `live` writes the suggestions uncommented (tests use it to check they parse too).
    """
    obs, files = observe_paths(paths)
    if scenario_id is not None and not scenario_id.strip():
        raise InputError("the scenario id is empty", field="--id")
    draft = build(obs, scenario_id)
    text = render(draft, files, live=live)
    verify(text)
    return DraftResult(text, draft)


def verify(text: str) -> None:
    """Load and validate a rendered draft as `judge validate` would, or raise."""
    with tempfile.TemporaryDirectory(prefix="judge-init-") as tmp:
        file = Path(tmp) / "scenario.yaml"
        file.write_text(text, encoding="utf-8")
        try:
            loaded = load_scenario(file)
        except InputError as exc:
            raise InternalDraftError(f"judge init drafted a scenario it cannot load "
                                     f"(a bug in judge): {exc.message}") from None
        problems = validate_scenario(loaded)
        if problems:
            raise InternalDraftError(f"judge init drafted an invalid scenario (a bug in "
                                     f"judge): {problems[0].message}")
