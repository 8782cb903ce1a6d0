"""The scenarios two versions' traces are checked against: from `--scenario` (one or more) or a
suite manifest's scenario entries (`--suite`, with the entries' `tasks:` maps).

A suite manifest's trace sources are not read here: `judge compare` and `judge canary` are
given the traces of each version. Its scenario paths must still lie under the manifest's
directory (judge.suite.manifest's rule), and every scenario is validated as `judge validate`
does before any trace is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from judge.errors import InputError, InputErrors
from judge.ledger import LoadedScenario, load_scenario
from judge.suite.manifest import Confine, load_manifest, pick_suite, resolve_scenario
from judge.suite.tasks import EntryTasks


@dataclass
class ScenarioSet:
    """Scenario id → its loaded scenario, and (from a suite) its entry's `tasks:` map."""

    scenarios: dict[str, LoadedScenario] = field(default_factory=dict)
    tasks: dict[str, EntryTasks] = field(default_factory=dict)
    manifest: str | None = None  # the suite manifest they came from

    @property
    def ids(self) -> list[str]:
        return list(self.scenarios)

    def entry_of(self, scenario_id: str) -> int | None:
        """The index of the scenario among `ids` (the `entry` judge.suite.tasks reads)."""
        return self.ids.index(scenario_id) if scenario_id in self.scenarios else None

    def entries(self) -> list[EntryTasks | None]:
        return [self.tasks.get(s) for s in self.ids]

    def pick(self, trace_scenario: str | None, trace_id: str) -> LoadedScenario:
        """The scenario a trace is checked against: the only one, or the one it names."""
        if len(self.scenarios) == 1 and trace_scenario is None:
            return next(iter(self.scenarios.values()))
        if trace_scenario in self.scenarios:
            return self.scenarios[trace_scenario]
        if len(self.scenarios) == 1:
            only = next(iter(self.scenarios))
            raise InputError(f"trace '{trace_id}' is for scenario '{trace_scenario}', not "
                             f"'{only}'", field="scenario")
        raise InputError(f"trace '{trace_id}' names scenario '{trace_scenario}', which is none "
                         f"of {', '.join(self.scenarios)}", field="scenario")


def _validated(path: Path) -> LoadedScenario:
    from judge.checks import validate_scenario

    loaded = load_scenario(path)
    problems = validate_scenario(loaded)
    if problems:
        raise InputErrors(problems)
    return loaded


def load_scenarios(scenarios: list[Path], suite: Path | None = None,
                   suite_name: str | None = None, *, allow_outside: bool = False
                   ) -> ScenarioSet:
    """The scenarios named by `--scenario` paths, or by a suite of a manifest."""
    out = ScenarioSet()
    if suite is not None:
        file = str(suite)
        manifest, base = load_manifest(suite)
        confine = Confine(None if allow_outside else base, file)
        name, chosen = pick_suite(manifest, suite_name, file)
        out.manifest = file
        for i, entry in enumerate(chosen.scenarios):
            where = f"suites.{name}.scenarios[{i}]"
            spath = resolve_scenario(entry, base)
            confine.check(spath, entry.scenario, f"{where}.scenario")
            if not spath.exists():
                raise InputError(f"no scenario at '{entry.scenario}'", file=file,
                                 path=f"{where}.scenario")
            loaded = _validated(spath)
            sid = loaded.scenario.id
            if sid in out.scenarios:
                raise InputError(f"scenario '{sid}' is named twice", file=file,
                                 path=f"{where}.scenario")
            out.scenarios[sid] = loaded
            specs = entry.task_specs()
            if specs:
                out.tasks[sid] = EntryTasks(specs, f"{where}.tasks")
    for path in scenarios:
        loaded = _validated(path)
        sid = loaded.scenario.id
        if sid in out.scenarios:
            raise InputError(f"scenario '{sid}' is given twice", file=str(path))
        out.scenarios[sid] = loaded
    return out
