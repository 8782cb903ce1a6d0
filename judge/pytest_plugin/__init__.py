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

This module is what pytest imports at start-up in every project of the environment, so it
imports nothing but pytest: the collector (`judge.pytest_plugin.collect`, with pydantic,
YAML and the checks) is imported only when `judge_scenarios` is set.
"""

from __future__ import annotations

import pytest


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


def pytest_configure(config: pytest.Config) -> None:
    patterns = config.getini("judge_scenarios")
    if not patterns:
        return
    from judge.pytest_plugin.collect import JudgeScenarios

    config.pluginmanager.register(JudgeScenarios(config, list(patterns)), "judge-scenarios")
