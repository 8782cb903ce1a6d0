"""The suite manifest (YAML): named suites of scenarios, trace sources, rubrics and release rules.

```yaml
suites:
  nightly:
    rubrics: [scope_fidelity, summary_fidelity]
    scenarios:
      - scenario: ../scenarios/refund-once          # a scenario.yaml or its directory
        traces: ["../scenarios/refund-once/*.json"] # files or globs, relative to this file
        repetitions: 2                              # expected trials per task
        tasks:                                      # task id -> its trials (trace ids or
          refund-once: [refund-once/pass*]          # globs); else metadata.task_id, else
          second-refund:                            # the scenario's one task
            traces: [refund-once/fail-second-refund]
            expect: fail                            # designed to fail: caught is as expected
      - scenario: ../scenarios/tau-airline
        traces:
          - {path: ../data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json,
             format: tau-bench}                     # imported on the fly
    release:
      max_safety_critical: 0        # safety-critical violations allowed
      min_scenario_pass_rate: 0.5   # mean over scenarios of their tasks' pass rate
      quality_floor: 0.6            # mean weighted quality score
      max_review_share: 0.5         # share of judge items sent to human review
      max_agreement_drop: 0.05      # fail when the audit share's agreement fell by more
                                    # than this, beyond its interval (judge report drift)
```

Every path (scenarios, trace files, globs and every file a glob matches) must lie under the
manifest's directory once resolved — no `..` out of it, no absolute path elsewhere, no
symbolic link that leads out — unless `judge run --allow-outside`: a manifest must not make
judge read (and send to a judge) files from anywhere on the machine. A path that leaves is
one error naming the manifest, the path and the field.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.errors import InputError
from judge.ledger.loader import load_yaml_model
from judge.trace.task import MAX_TASK_ID


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceSource(_Strict):
    path: str
    format: Literal["judge", "tau-bench", "openai-chat"] = "judge"


class TaskSpec(_Strict):
    """One task of a scenario entry (docs/formats.md, "Task ids and trials"): the trace ids
    (glob patterns) that are its trials — none: the traces whose `metadata.task_id` is this
    task's id — and what its trials are expected to do."""

    traces: list[str] = Field(default_factory=list)
    expect: Literal["pass", "fail"] = "pass"
    description: str | None = None

    @field_validator("traces")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        if any(not p.strip() for p in value):
            raise ValueError("a trace id pattern is empty")
        return value


class SuiteScenario(_Strict):
    scenario: str
    traces: list[str | TraceSource] = Field(min_length=1)
    repetitions: int | None = Field(default=None, ge=1)  # expected trials of each task
    tasks: dict[str, TaskSpec | list[str]] = Field(default_factory=dict)

    @field_validator("tasks")
    @classmethod
    def _task_ids(cls, value: dict[str, TaskSpec | list[str]]) -> dict[str, TaskSpec | list[str]]:
        for task_id in value:
            if not task_id.strip() or len(task_id) > MAX_TASK_ID:
                raise ValueError(f"a task id must be a non-empty string of at most "
                                 f"{MAX_TASK_ID} characters")
        return value

    def task_specs(self) -> dict[str, TaskSpec]:
        """The `tasks:` map with its list shorthand (`id: [patterns]`) spelled out."""
        return {k: TaskSpec(traces=v) if isinstance(v, list) else v
                for k, v in self.tasks.items()}

    def sources(self) -> list[TraceSource]:
        return [TraceSource(path=t) if isinstance(t, str) else t for t in self.traces]


class ReleaseRules(_Strict):
    max_safety_critical: int = Field(default=0, ge=0)
    min_scenario_pass_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    quality_floor: float = Field(default=0.0, ge=0.0, le=1.0)
    max_review_share: float = Field(default=1.0, ge=0.0, le=1.0)
    max_agreement_drop: float | None = Field(default=None, ge=0.0, le=1.0)  # None: no rule


class Suite(_Strict):
    description: str | None = None
    scenarios: list[SuiteScenario] = Field(min_length=1)
    rubrics: list[str] = Field(default_factory=list)
    release: ReleaseRules = Field(default_factory=ReleaseRules)


class Manifest(_Strict):
    suites: dict[str, Suite] = Field(min_length=1)
    model: str | None = None


class ResolvedSource(BaseModel):
    path: Path
    format: str


def load_manifest(path: str | Path) -> tuple[Manifest, Path]:
    """Load a suite manifest; returns it with the directory its relative paths start from."""
    p = Path(path)
    manifest = load_yaml_model(p, Manifest, "suite manifest")
    return manifest, p.resolve().parent


def pick_suite(manifest: Manifest, name: str | None, file: str) -> tuple[str, Suite]:
    if name is None:
        if len(manifest.suites) == 1:
            return next(iter(manifest.suites.items()))
        if "nightly" in manifest.suites:
            return "nightly", manifest.suites["nightly"]
        raise InputError(f"several suites ({', '.join(manifest.suites)}); choose one with "
                         "--suite", file=file, field="suites")
    if name not in manifest.suites:
        raise InputError(f"no suite named '{name}' (have: {', '.join(manifest.suites)})",
                         file=file, field="suites")
    return name, manifest.suites[name]


class Confine:
    """Keeps a manifest's paths under its directory (`root`); `root=None` lets them go
    anywhere (`judge run --allow-outside`)."""

    def __init__(self, root: Path | None, file: str) -> None:
        self.root = Path(os.path.realpath(root)) if root is not None else None
        self.file = file

    def check(self, path: Path, given: str, where: str, *, resolved: bool = True) -> None:
        """Refuse `path` (written `given` in the manifest, at `where`) if it lies outside the
        root: as written (normalized, `..` applied) and, with `resolved`, once every symbolic
        link on the way is followed."""
        if self.root is None:
            return
        if not Path(os.path.normpath(path)).is_relative_to(self.root):
            self._refuse(given, where, "is")
        if resolved and not Path(os.path.realpath(path)).is_relative_to(self.root):
            self._refuse(given, where, "leads (through a symbolic link)")

    def _refuse(self, given: str, where: str, how: str) -> None:
        raise InputError(f"'{given}' {how} outside the manifest's directory ({self.root}); "
                         "judge run --allow-outside allows it", file=self.file, path=where)


def resolve_sources(entry: SuiteScenario, base: Path, file: str, where: str,
                    confine: Confine | None = None) -> list[ResolvedSource]:
    """Expand globs; a source that matches no file is an error naming it, and so is one
    outside the manifest's directory (`confine`; every match is checked)."""
    out: list[ResolvedSource] = []
    for i, src in enumerate(entry.sources()):
        at = f"{where}.traces[{i}]"
        pattern = src.path if Path(src.path).is_absolute() else str(base / src.path)
        if confine is not None:
            confine.check(Path(pattern), src.path, at, resolved=not glob.has_magic(pattern))
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else (
            [pattern] if os.path.lexists(pattern) else [])
        if not matches:
            raise InputError(f"no trace file matches '{src.path}'", file=file, path=at)
        if confine is not None:
            for m in matches:
                confine.check(Path(m), m if m != pattern else src.path, at)
        out.extend(ResolvedSource(path=Path(m), format=src.format) for m in matches)
    return out


def resolve_scenario(entry: SuiteScenario, base: Path) -> Path:
    p = Path(entry.scenario)
    return p if p.is_absolute() else base / p
