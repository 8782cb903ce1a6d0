"""Plan a suite run: load and validate everything before any provider call.

A missing trace file, an unknown rubric, a bad scenario (anything `judge validate` finds)
or model spec, a path outside the manifest's directory fails here, exit 2, so no money is
spent on a run that cannot finish.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judge.errors import ConfigError, InputError, InputErrors
from judge.ledger import LoadedScenario, load_scenario
from judge.prompts import Prompt, load_prompt
from judge.suite.manifest import (
    Confine,
    ResolvedSource,
    Suite,
    load_manifest,
    pick_suite,
    resolve_scenario,
    resolve_sources,
)
from judge.suite.tasks import EntryTasks
from judge.trace import Trace, iter_traces
from judge.trace.files import unusable_file


@dataclass
class PlannedScenario:
    loaded: LoadedScenario
    sources: list[ResolvedSource]
    repetitions: int | None  # expected trials of each task
    rubrics: list[str]  # suite rubrics that the scenario maps to items
    tasks: EntryTasks | None = None  # the entry's `tasks:` map (judge.suite.tasks)


@dataclass
class Plan:
    manifest_path: Path
    suite_name: str
    suite: Suite
    scenarios: list[PlannedScenario]
    prompts: dict[str, Prompt]
    model_spec: str | None = None
    errors: list[InputError] = field(default_factory=list)
    allow_outside: bool = False


def make_plan(manifest_path: str | Path, suite_name: str | None = None, *,
              allow_outside: bool = False) -> Plan:
    """Load and check everything a run needs. Paths must stay under the manifest's
    directory unless `allow_outside` (judge.suite.manifest)."""
    from judge.checks import validate_scenario

    file = str(manifest_path)
    manifest, base = load_manifest(manifest_path)
    confine = Confine(None if allow_outside else base, file)
    name, suite = pick_suite(manifest, suite_name, file)
    prompts: dict[str, Prompt] = {}
    for i, rubric in enumerate(suite.rubrics):
        try:
            prompts[rubric] = load_prompt(rubric)
        except ConfigError as exc:
            raise InputError(f"rubric '{rubric}': {exc.message}", file=file,
                             path=f"suites.{name}.rubrics[{i}]") from None
    planned: list[PlannedScenario] = []
    for i, entry in enumerate(suite.scenarios):
        where = f"suites.{name}.scenarios[{i}]"
        spath = resolve_scenario(entry, base)
        confine.check(spath, entry.scenario, f"{where}.scenario")
        if not spath.exists():
            raise InputError(f"no scenario at '{entry.scenario}'", file=file,
                             path=f"{where}.scenario")
        if spath.is_dir():
            confine.check(spath / "scenario.yaml", entry.scenario, f"{where}.scenario")
        loaded = load_scenario(spath)
        problems = validate_scenario(loaded)
        if problems:
            raise InputErrors(problems)
        sources = resolve_sources(entry, base, file, where, confine)
        mapped = {u.rubric for u in loaded.scenario.judge}
        specs = entry.task_specs()
        planned.append(PlannedScenario(loaded, sources, entry.repetitions,
                                       [r for r in suite.rubrics if r in mapped],
                                       EntryTasks(specs, f"{where}.tasks") if specs else None))
    return Plan(Path(manifest_path), name, suite, planned, prompts, manifest.model,
                allow_outside=allow_outside)


def iter_source(src: ResolvedSource, errors: list[InputError]) -> Iterator[Trace]:
    """Traces of one source; bad traces are recorded in `errors` and skipped. A source that
    is no regular file, or holds no trace, is bad input too."""
    if src.format == "judge":
        yield from iter_traces(src.path, errors)
        return
    from judge.importers import iter_openai_chat, iter_tau_bench

    file = str(src.path)
    problem = unusable_file(src.path)
    if problem is not None:
        errors.append(InputError(problem, file=file))
        return
    it = iter_tau_bench(src.path) if src.format == "tau-bench" else iter_openai_chat(src.path)
    before, found = len(errors), False
    try:
        for trace in it:
            found = True
            yield trace
    except InputError as exc:
        errors.append(exc)
    except OSError as exc:
        errors.append(InputError(f"cannot read ({exc.strerror})", file=file))
    if not found and len(errors) == before:
        errors.append(InputError(f"no trace in the file ({src.format} format)", file=file))
