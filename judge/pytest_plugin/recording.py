"""The `judge_recorder` fixture's work (imported only by a test that asks for it).

Each call of the fixture makes a `judge.record.Recorder` whose trace file lives in the test's
`tmp_path` (or under `judge_record_dir`), named after the trace id. When the test body
passes, `check_all` saves every trace and checks it against its scenario, reading the saved
file as `judge check` does: a veto (or, under `--judge-strict`, any failed check) fails the
test with the diagnosis, first divergence first, and the trace's path; failures that are not
vetoes warn (`JudgeWarning`). When the body fails, the traces are saved all the same (the
report names them), and not checked: the test has failed already.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.checks.report import printable
from judge.checks.runner import Checker
from judge.checks.validate import validate_scenario
from judge.drafting import unreviewed
from judge.errors import InputError
from judge.ledger.loader import LoadedScenario, load_scenario
from judge.pytest_plugin import JudgeWarning
from judge.record import Recorder
from judge.record.recorder import file_name
from judge.trace.loader import iter_trace_streams

_SCENARIOS = pytest.StashKey[dict[Path, LoadedScenario]]()
@dataclass
class Entry:
    recorder: Recorder
    loaded: LoadedScenario | None
    saved: bool = False


class Recordings:
    """The traces one test records."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.item = request.node
        self.config = request.config
        self.tmp_path = tmp_path
        self.entries: list[Entry] = []
        opt = self.config.getoption("judge_strict", None)
        self.strict = bool(opt if opt is not None else self.config.getini("judge_strict"))

    # -- making recorders -------------------------------------------------------------------
    def new(self, scenario: str | Path | None = None, **options: Any) -> Recorder:
        loaded = self._scenario(scenario) if scenario is not None else None
        n = len(self.entries) + 1
        trace_id = options.pop("trace_id", None) or (
            self.item.nodeid if n == 1 else f"{self.item.nodeid}#{n}")
        path = options.pop("path", None) or self._path_for(trace_id)
        rec = Recorder(trace_id, loaded.scenario.id if loaded else options.pop("scenario", None),
                       path=path, **options)
        self.entries.append(Entry(rec, loaded))
        return rec

    def _path_for(self, trace_id: str) -> Path:
        record_dir = str(self.config.getini("judge_record_dir") or "")
        if record_dir:
            base = self.config.rootpath / record_dir / file_name(self.item.nodeid)
        else:
            base = self.tmp_path
        taken = {e.recorder.path for e in self.entries}
        name = file_name(trace_id)
        path = base / f"{name}.json"
        i = 2
        while path in taken:
            path = base / f"{name}-{i}.json"
            i += 1
        return path

    def _scenario(self, spec: str | Path) -> LoadedScenario:
        where = Path(spec)
        tries = [where] if where.is_absolute() else [self.config.rootpath / where,
                                                     self.item.path.parent / where]
        found = next((p for p in tries if p.is_file() or (p / "scenario.yaml").is_file()),
                     None)
        if found is None:
            pytest.fail(printable(f"judge_recorder: no scenario at '{spec}' (looked for "
                                  + " and ".join(str(p) for p in tries) + ")"), pytrace=False)
        key = found.resolve()
        cache = self.config.stash.setdefault(_SCENARIOS, {})
        loaded = cache.get(key)
        if loaded is None:
            try:
                loaded = load_scenario(found)
            except InputError as exc:
                pytest.fail(printable(f"judge_recorder: {exc.message}"), pytrace=False)
            problems = validate_scenario(loaded)
            if problems:
                pytest.fail("\n".join(printable(f"judge_recorder: {p.message}")
                                      for p in problems), pytrace=False)
            cache[key] = loaded
        draft = unreviewed(loaded)
        if draft is not None:
            if self.strict:
                pytest.fail(printable(f"judge_recorder: {draft.message}") + " (refused under "
                            "--judge-strict)", pytrace=False)
            warnings.warn(JudgeWarning(printable(draft.message)), stacklevel=3)
        return loaded

    # -- at the end of the test -----------------------------------------------------------------
    def _save(self, entry: Entry) -> Path:
        path = entry.recorder.save()
        if not entry.saved:
            entry.saved = True
            self.item.user_properties.append(("judge_trace", str(path)))
        return path

    def save_all(self, when: str) -> None:
        """Save every trace (the test failed: keep what it recorded, name where)."""
        lines: list[str] = []
        for entry in self.entries:
            try:
                lines.append(f"trace: {printable(str(self._save(entry)))}")
            except (OSError, ValueError) as exc:  # do not hide the test's own failure
                lines.append(f"trace {printable(entry.recorder.trace_id)} not saved: "
                             f"{printable(str(exc))}")
        if lines:
            self.item.add_report_section(when, "judge", "\n".join(lines))

    def save_unsaved(self) -> None:
        for entry in self.entries:
            if not entry.saved:
                self._save(entry)

    def check_all(self) -> None:
        """Save and check every trace; fail the test on a veto (any failure under strict)."""
        failures: list[str] = []
        shown: list[str] = []
        for entry in self.entries:
            path = self._save(entry)
            shown.append(f"trace: {printable(str(path))}")
            if entry.loaded is None:
                continue
            text = self._check(entry, path)
            if text is not None:
                failures.append(text)
        if shown:
            self.item.add_report_section("call", "judge", "\n".join(shown))
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)

    def _check(self, entry: Entry, path: Path) -> str | None:
        assert entry.loaded is not None
        checker = Checker(entry.loaded)
        where = printable(str(path))
        for stream in iter_trace_streams(path):
            try:
                report = checker.check(stream)
            except InputError as exc:
                return printable(f"judge_recorder: {exc.message}")
            failures = report.failures
            if not failures:
                return None
            if report.vetoed:
                return f"{report.diagnosis()}\n  trace: {where}"
            if self.strict:
                return (f"{report.diagnosis()}\n  trace: {where}\n  (failed checks that are "
                        "not vetoes fail under --judge-strict)")
            warnings.warn(JudgeWarning(
                f"{printable(report.trace_id)}: eligible, but {len(failures)} check(s) failed "
                f"(quality score {report.quality_score:.2f}); first: "
                f"{printable(failures[0].message)}; trace: {where}"), stacklevel=2)
        return None
