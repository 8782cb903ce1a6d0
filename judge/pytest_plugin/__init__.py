"""pytest plugin: check agent traces against reviewed scenarios in a team's own test suite.

Installed with judge (entry point `pytest11: judge`). It does nothing until a project names
its scenario files, in any pytest configuration file:

    [tool.pytest.ini_options]              # pyproject.toml (or [pytest] in pytest.ini)
    judge_scenarios = ["scenario.yaml"]    # globs: a file name, or a path under the rootdir
    judge_traces = ["*.json", "*.jsonl"]   # globs beside each scenario (the default);
                                           #   "{scenario}" is the scenario's id
    judge_strict = false                   # or --judge-strict on the command line

pytest then collects each scenario file it meets while collecting (so the scenarios'
directory must be among `testpaths` or the paths given on the command line), and each
(scenario, trace) pair as one test item, node id `path/scenario.yaml::SCENARIO-ID::TRACE-ID`.
Running an item runs judge's deterministic checks on that trace (no judge model, no network,
no database): a veto fails it with the diagnosis, first divergence first; failures that are
not vetoes pass with a `JudgeWarning` (fail under strict). A bad scenario or trace is a
collection error naming the file, line and field; a scenario still marked `status: draft`
warns (an error under strict).

A pattern that is no usable glob (an unclosed `[`, a TOML list written into an INI file) is
a usage error at start-up; a pattern that matched no scenario file while pytest walked a
directory warns. Trace files must lie under pytest's rootdir (the project root): a
`judge_traces` pattern that reaches outside it (`/etc/*`, `../../..`, a symbolic link that
leads out) is a collection error naming the pattern, and nothing outside is read.

The `judge_recorder` fixture records a trace from inside a test (judge.record) and checks it
against a scenario when the test is done:

    def test_refund(judge_recorder):
        rec = judge_recorder("scenarios/refund-once")   # under the rootdir (or the test's dir)
        ...the agent runs with tools wrapped by @rec.tool...

After the test body passes, each trace is saved (kept: the test's `tmp_path`, or
`judge_record_dir`) and checked as `judge check` would; a veto fails the test with the
diagnosis, first divergence first, and the trace file's path. A test that fails by itself
still has its trace saved, and named in the report.

This module is what pytest imports at start-up in every project of the environment, so it
imports nothing but pytest: the collector (`judge.pytest_plugin.collect`, with pydantic,
YAML and the checks) is imported only when `judge_scenarios` is set, and the recorder
(`judge.pytest_plugin.recording`) only when a test asks for `judge_recorder`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

#: the recordings of a test that used `judge_recorder` (see judge.pytest_plugin.recording)
RECORDINGS = pytest.StashKey[Any]()


class JudgeWarning(UserWarning):
    """A trace failed non-veto checks, or a scenario is an unreviewed draft.

    Turn it into an error with `-W error::judge.pytest_plugin.JudgeWarning` (or strict).
    """


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judge", "judge: deterministic checks of agent traces")
    group.addoption("--judge-strict", action="store_true", default=None, dest="judge_strict",
                    help="judge: fail a trace on any failed check, not only on a veto, and "
                         "refuse unreviewed (draft) scenarios")
    parser.addini("judge_scenarios", type="linelist", default=[],
                  help="judge: globs of scenario files to collect (a file name such as "
                       "scenario.yaml, or a path under the rootdir such as "
                       "scenarios/*/scenario.yaml); unset = the plugin is off")
    parser.addini("judge_traces", type="linelist", default=["*.json", "*.jsonl"],
                  help="judge: globs of trace files, relative to each scenario's "
                       "directory; {scenario} is the scenario id (default: *.json *.jsonl)")
    parser.addini("judge_strict", type="bool", default=False,
                  help="judge: as --judge-strict")
    parser.addini("judge_record_dir", type="string", default="",
                  help="judge: where judge_recorder keeps the traces it records, under the "
                       "rootdir (default: each test's tmp_path)")


def pytest_configure(config: pytest.Config) -> None:
    patterns = config.getini("judge_scenarios")
    if not patterns:
        return
    from judge.pytest_plugin.globs import check_patterns

    problems = (check_patterns("judge_scenarios", list(patterns))
                + check_patterns("judge_traces", list(config.getini("judge_traces"))))
    if problems:
        raise pytest.UsageError("\n".join(problems))
    from judge.pytest_plugin.collect import JudgeScenarios

    config.pluginmanager.register(JudgeScenarios(config, list(patterns)), "judge-scenarios")


@pytest.fixture
def judge_recorder(request: pytest.FixtureRequest,
                   tmp_path: Any) -> Iterator[Callable[..., Any]]:
    """`judge_recorder(scenario, **recorder_options) -> judge.record.Recorder`: record a
    trace in this test; when the test body is done it is saved and checked against the
    scenario (a path under the rootdir, a directory holding scenario.yaml or the file; None:
    saved, not checked). Options go to `Recorder` (`trace_id` defaults to the test's node
    id; `mode`, `state`, `candidate`, `metadata`, `clock`)."""
    from judge.pytest_plugin.recording import Recordings

    recordings = Recordings(request, tmp_path)
    request.node.stash[RECORDINGS] = recordings
    yield recordings.new
    recordings.save_unsaved()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Check what `judge_recorder` recorded once the test body passed (a veto fails it)."""
    try:
        result = yield
    except BaseException:
        recordings = item.stash.get(RECORDINGS, None)
        if recordings is not None:
            recordings.save_all("call")
        raise
    recordings = item.stash.get(RECORDINGS, None)
    if recordings is not None:
        recordings.check_all()
    return result
