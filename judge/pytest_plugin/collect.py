"""The collector of the judge pytest plugin (imported only when `judge_scenarios` is set).

Node tree: `ScenarioFile` (the YAML file) → `ScenarioNode` (named by the scenario id) →
one `TraceItem` per trace (named by the trace id), or one `BadTrace` per trace that does not
load (its collection error names the file, line and field).

Collecting reads every trace once (to name the items and find bad input); running the first
item of a trace file checks every trace of that file in one streaming pass, and the other
items of that file take their reports from it — so a file is read twice in all, whatever the
number of traces in it.
"""

from __future__ import annotations

import glob
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from judge.checks import CheckReport
from judge.checks.report import printable
from judge.checks.runner import Checker
from judge.checks.validate import validate_scenario
from judge.drafting import unreviewed
from judge.errors import InputError
from judge.ledger.loader import LoadedScenario, load_scenario
from judge.pytest_plugin import JudgeWarning
from judge.trace.loader import iter_trace_streams

_LineKey = int | None  # a trace's first line in its file (None: a .json file)


class JudgeScenarios:
    """The plugin object registered when `judge_scenarios` is configured."""

    def __init__(self, config: pytest.Config, patterns: list[str]) -> None:
        self.config = config
        self.patterns = patterns
        self.root = config.rootpath
        self.matched: dict[str, int] = dict.fromkeys(patterns, 0)
        self.traces: list[str] = list(config.getini("judge_traces"))
        opt = config.getoption("judge_strict", None)
        self.strict = bool(opt if opt is not None else config.getini("judge_strict"))

    def matching(self, path: Path) -> list[str]:
        """The patterns `path` matches, as pytest matches `python_files`: a pattern without
        `/` against the file name, one with `/` against the path under the rootdir (or any
        tail of the absolute path)."""
        found: list[str] = []
        for pattern in self.patterns:
            if "/" not in pattern:
                if fnmatch(path.name, pattern):
                    found.append(pattern)
                continue
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                rel = None
            if (rel is not None and fnmatch(rel, pattern)) or fnmatch(path.as_posix(),
                                                                       "*/" + pattern):
                found.append(pattern)
        return found

    def matches(self, path: Path) -> bool:
        return bool(self.matching(path))

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector
                            ) -> ScenarioFile | None:
        if file_path.suffix not in (".yaml", ".yml"):
            return None
        found = self.matching(file_path)
        if not found:
            return None
        for pattern in found:
            self.matched[pattern] += 1
        node: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
        node.plugin = self
        return node

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Warn of each pattern that matched no scenario file, when pytest walked a
        directory (a run of chosen test files or node ids may well meet no scenario)."""
        if not self._walked_a_directory():
            return
        for pattern, n in self.matched.items():
            if n == 0:
                session.warn(JudgeWarning(printable(
                    f"judge_scenarios: {pattern!r} matched no scenario file (.yaml or .yml) in "
                    "the directories pytest collected; a pattern without '/' is matched "
                    "against file names, one with '/' against paths under the rootdir, and "
                    "the scenarios' directory must be among testpaths or the paths given")))

    def _walked_a_directory(self) -> bool:
        start = self.config.invocation_params.dir
        args = self.config.args or [str(start)]
        return any((start / a.split("::", 1)[0]).is_dir() for a in args)


class ScenarioFile(pytest.File):
    plugin: JudgeScenarios

    def collect(self) -> Iterator[ScenarioNode]:
        shown = _shown(self.path, self.config)
        try:
            loaded = load_scenario(shown)
        except InputError as exc:
            raise self.CollectError(printable(exc.message)) from None
        problems = validate_scenario(loaded)
        if problems:
            raise self.CollectError("\n".join(printable(p.message) for p in problems))
        draft = unreviewed(loaded)
        if draft is not None:
            if self.plugin.strict:
                raise self.CollectError(printable(draft.message)
                                        + " (refused under --judge-strict)")
            self.warn(JudgeWarning(printable(draft.message)))
        node: ScenarioNode = ScenarioNode.from_parent(self, name=printable(loaded.scenario.id))
        node.loaded = loaded
        node.plugin = self.plugin
        yield node


class ScenarioNode(pytest.Collector):
    """One scenario; its children are its traces."""

    loaded: LoadedScenario
    plugin: JudgeScenarios

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._checker: Checker | None = None
        self._reports: dict[str, dict[_LineKey, CheckReport | InputError]] = {}

    def trace_files(self) -> tuple[list[Path], list[InputError]]:
        """Absolute paths of the files `judge_traces` matches beside this scenario, and one
        error for each pattern that reaches outside the rootdir (its files are not read)."""
        scenario_file = self.path.resolve()
        root = self.plugin.root.resolve()
        sid = glob.escape(self.loaded.scenario.id)
        found: dict[Path, None] = {}
        outside: list[InputError] = []
        for pattern in self.plugin.traces:
            full = os.path.join(glob.escape(str(scenario_file.parent)),
                                pattern.replace("{scenario}", sid))
            static = os.path.normpath(os.path.join(str(scenario_file.parent), _static_prefix(
                pattern.replace("{scenario}", self.loaded.scenario.id))))
            if not _under(Path(static).resolve(), root):
                outside.append(self._outside(pattern, Path(static), root))
                continue
            out: list[Path] = []
            for name in sorted(glob.glob(full, recursive=True)):
                p = Path(os.path.normpath(name))
                real = p.resolve()
                if not _under(real, root):
                    out.append(p)
                elif p.is_file() and real != scenario_file:
                    found.setdefault(p, None)
            if out:
                outside.append(self._outside(pattern, out[0], root, len(out) - 1))
        return list(found), outside

    def _outside(self, pattern: str, first: Path, root: Path, more: int = 0) -> InputError:
        also = f" (and {more} more)" if more else ""
        return InputError(
            f"judge_traces: {pattern!r} reaches {first}{also}, outside the project root "
            f"({root}): trace files must lie under pytest's rootdir (links followed); "
            "nothing there was read", file=str(_shown(self.path, self.config)))

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        files, outside = self.trace_files()
        for i, err in enumerate(outside):
            yield BadTrace.from_parent(self, name=f"judge_traces-outside-{i + 1}", error=err)
        if not files and not outside:
            self.warn(JudgeWarning(printable(f"{self.loaded.file}: no trace file matches "
                                             f"judge_traces ({', '.join(self.plugin.traces)})")))
        names: set[str] = set()
        sid = self.loaded.scenario.id
        for file in files:
            errors: list[InputError] = []
            for stream in iter_trace_streams(_shown(file, self.config), errors):
                header = stream.header
                try:
                    for _ in stream.events:
                        pass
                except InputError as exc:
                    errors.append(exc)
                    continue
                if header.scenario is not None and header.scenario != sid:
                    errors.append(InputError(
                        f"trace '{header.trace_id}' is for scenario '{header.scenario}', not "
                        f"'{sid}'", file=stream.file, line=stream.line, field="scenario"))
                    continue
                name = printable(header.trace_id)
                if name in names:
                    name = f"{name}@{file.name}:{stream.line or 1}"
                names.add(name)
                yield TraceItem.from_parent(self, name=name, trace_file=str(file),
                                            line=stream.line, trace_id=header.trace_id)
            for err in errors:
                where = file.name + (f":{err.line}" if err.line is not None else "")
                if where in names:
                    where = f"{where}#{len(names)}"
                names.add(where)
                yield BadTrace.from_parent(self, name=printable(where), error=err)

    def report(self, file: str, line: _LineKey) -> CheckReport | InputError:
        """The report of the trace at `line` of `file`: every trace of the file is checked the
        first time one of them is asked for; each report is handed out once."""
        if file not in self._reports:
            if self._checker is None:
                self._checker = Checker(self.loaded)
            self._reports[file] = self._check_file(file, self._checker)
        found = self._reports[file].pop(line, None)
        if found is None:  # asked twice (a rerun): check the file again
            assert self._checker is not None
            found = self._check_file(file, self._checker).pop(line, None)
        if not self._reports[file]:
            del self._reports[file]
        if found is None:
            return InputError("this trace is no longer in the file (changed since collection)",
                              file=file, line=line)
        return found

    def _check_file(self, file: str, checker: Checker) -> dict[_LineKey,
                                                                CheckReport | InputError]:
        out: dict[_LineKey, CheckReport | InputError] = {}
        errors: list[InputError] = []
        sid = self.loaded.scenario.id
        for stream in iter_trace_streams(file, errors):
            if stream.header.scenario not in (None, sid):
                stream.events = iter(())
                continue
            try:
                out[stream.line] = checker.check(stream)
            except InputError as exc:
                out[stream.line] = exc
        return out


class JudgeFailure(Exception):
    """A trace the checks vetoed (or, under strict, that failed any check)."""

    def __init__(self, text: str, path: str, line: int, message: str) -> None:
        super().__init__(text)
        self.repr = JudgeRepr(text, _Crash(path, line, message))


@dataclass(frozen=True)
class _Crash:
    """Where and what in one line: pytest's short summary (`FAILED id - message`), JUnit
    XML's failure message and `--tb=line` read it."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


@dataclass(frozen=True)
class JudgeRepr:
    """A failure shown as the check report's diagnosis, not as a Python traceback."""

    text: str
    reprcrash: _Crash

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


class TraceItem(pytest.Item):
    parent: ScenarioNode

    def __init__(self, *, trace_file: str, line: int | None, trace_id: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.trace_file = trace_file
        self.line = line
        self.trace_id = trace_id

    def runtest(self) -> None:
        found = self.parent.report(self.trace_file, self.line)
        if isinstance(found, InputError):
            raise found
        report = found
        self.user_properties.extend([
            ("judge_eligible", report.eligible), ("judge_quality_score", report.quality_score),
            ("judge_failures", len(report.failures))])
        failures = report.failures
        if not failures:
            return
        first = failures[0]
        shown = printable(str(_shown(Path(self.trace_file), self.config)))
        where = shown + (f":{self.line}" if self.line is not None else "")
        crash = (shown, self.line or 1, printable(first.message))
        if report.vetoed:
            raise JudgeFailure(f"{report.diagnosis()}\n  trace: {where}", *crash)
        if self.parent.plugin.strict:
            raise JudgeFailure(f"{report.diagnosis()}\n  trace: {where}\n  (failed checks "
                               "that are not vetoes fail under --judge-strict)", *crash)
        warnings.warn_explicit(  # shown in pytest's warnings summary, at the trace's line
            JudgeWarning(f"{printable(self.trace_id)}: eligible, but {len(failures)} check(s) "
                         f"failed (quality score {report.quality_score:.2f}); first: "
                         f"{printable(first.message)}"),
            JudgeWarning, filename=shown, lineno=self.line or 1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, JudgeFailure):
            return excinfo.value.repr
        if isinstance(excinfo.value, InputError):
            return printable(excinfo.value.message)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # (the domain is the failure's headline; pytest rewrites `.` in a domain that ends
        # the node id, as if it were a Python qualname, so it must not be that tail)
        return (Path(self.trace_file), None if self.line is None else self.line - 1,
                f"{self.name} (scenario {self.parent.name})")


class BadTrace(pytest.Collector):
    """A trace that does not load: collecting it is the error, naming file, line, field."""

    def __init__(self, *, error: InputError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def collect(self) -> list[pytest.Item]:
        raise self.CollectError(printable(self.error.message))


def _static_prefix(path: str) -> str:
    """The leading directories of a glob that hold no wildcard (`/etc` of `/etc/*`)."""
    parts = Path(path).parts
    keep: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        keep.append(part)
    return str(Path(*keep)) if keep else "."


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _shown(path: Path, config: pytest.Config) -> Path:
    """`path` as people see it in messages: relative to where pytest was started, if under."""
    try:
        return path.relative_to(config.invocation_params.dir)
    except ValueError:
        return path
