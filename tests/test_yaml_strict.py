"""The strict YAML reader of scenarios and suites (judge.ledger.strict_yaml).

Duplicate keys are errors naming both lines; anchors, aliases and merge keys are refused
(an alias bomb fails at once); nesting is bounded; only JSON's types come out. Properties: any
text gives a value or a YAMLError (nothing else), and any JSON-like document written as YAML
reads back equal.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.errors import InputError
from judge.ledger.loader import load_scenario
from judge.ledger.strict_yaml import StrictYAMLError, load_yaml
from judge.suite.manifest import load_manifest
from judge.trace.document import MAX_DEPTH

ROOT = Path(__file__).resolve().parent.parent
BROWSER = ROOT / "examples" / "scenarios" / "browser-correction"
HOSTILE = Path(__file__).resolve().parent / "data" / "hostile"
JUDGE = [sys.executable, "-m", "judge.cli.main"]


def refused(text: str) -> StrictYAMLError:
    with pytest.raises(StrictYAMLError) as info:
        load_yaml(text)
    return info.value


def line_of(err: yaml.MarkedYAMLError) -> int:
    assert err.problem_mark is not None
    return int(err.problem_mark.line) + 1


# -- duplicate keys -------------------------------------------------------------------------

def test_a_duplicate_key_names_both_lines() -> None:
    err = refused("a: 1\nb:\n  c: 2\n  d: 3\n  c: 4\n")
    assert "duplicate key 'c'" in str(err.problem) and "lines 3 and 5" in str(err.problem)
    assert line_of(err) == 5


@pytest.mark.parametrize("text", [
    "a: 1\na: 1\n",                 # same value: still two keys
    "{a: 1, a: 2}\n",               # flow style
    "a: 1\n'a': 2\n",               # quoting does not make a key different
    "1: x\n0x1: y\n",               # the same integer, written twice
    "true: x\nTrue: y\n",           # the same boolean
    "- {k: 1, k: 2}\n",             # inside a list
])
def test_duplicates_in_every_spelling_are_refused(text: str) -> None:
    assert "duplicate key" in str(refused(text).problem)


def test_keys_that_only_look_alike_are_kept_apart() -> None:
    assert load_yaml("1: a\n'1': b\nyes: c\n")[1] == {1: "a", "1": "b", "yes": "c"}


def test_a_second_forbidden_list_cannot_switch_the_veto_off(tmp_path: Path) -> None:
    """The issue's case: `forbidden: []` once more under `rules:` used to validate "ok" and
    let the trace that edits app code through as eligible (exit 0)."""
    scen = tmp_path / "browser-correction"
    shutil.copytree(BROWSER, scen)
    text = (scen / "scenario.yaml").read_text()
    first = next(i for i, ln in enumerate(text.splitlines(), 1) if ln == "  forbidden:")
    text = text.replace("  stale_values: true", "  forbidden: []\n  stale_values: true", 1)
    (scen / "scenario.yaml").write_text(text)
    second = next(i for i, ln in enumerate(text.splitlines(), 1) if ln == "  forbidden: []")
    with pytest.raises(InputError) as info:
        load_scenario(scen)
    assert f"lines {first} and {second}" in info.value.message
    for argv in (["validate", str(scen)],
                 ["check", str(scen), str(scen / "fail-edit-app-code.json")]):
        done = subprocess.run([*JUDGE, *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done
        assert done.stderr.count("\n") == 1 and "duplicate key 'forbidden'" in done.stderr
        assert "eligible" not in done.stdout


# -- anchors, aliases, merge keys -----------------------------------------------------------

def test_an_alias_is_refused_naming_its_line() -> None:
    err = refused("a: x\nb: *a\n")  # an alias of an anchor that does not exist: still refused
    assert "YAML aliases are not allowed" in str(err.problem) and line_of(err) == 2


def test_an_anchor_is_refused_before_any_alias() -> None:
    err = refused("base: &b {x: 1}\nother: *b\n")
    assert "anchors and aliases are not allowed (&b)" in str(err.problem) and line_of(err) == 1


def test_a_merge_key_is_refused() -> None:
    assert "merge keys" in str(refused("a: {<<: {x: 1}, y: 2}\n").problem)


def test_the_alias_bomb_fails_in_milliseconds() -> None:
    text = (HOSTILE / "scenarios" / "alias-bomb.yaml").read_text()
    assert 3000 < len(text.encode()) < 4000 and text.count("*") > 60
    started = time.perf_counter()
    err = refused(text)
    # ~0.5 ms; expanded, the bomb would take minutes. The bound leaves room for a pause of
    # the test process (a collection of its large heap late in the suite: 0.2-0.4 s)
    assert time.perf_counter() - started < 1.0
    assert "anchors and aliases" in str(err.problem)
    # and as a scenario: one InputError naming the file and the line
    with pytest.raises(InputError) as info:
        load_scenario(HOSTILE / "scenarios" / "alias-bomb.yaml")
    assert "alias-bomb.yaml:12:" in info.value.message


def test_suite_manifests_share_the_reader(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("suites:\n  a: {scenarios: [{scenario: x, traces: [y]}]}\n"
                     "  a: {scenarios: [{scenario: z, traces: [w]}]}\n")
    with pytest.raises(InputError) as info:
        load_manifest(suite)
    assert "duplicate key 'a' (lines 2 and 3" in info.value.message
    suite.write_text("suites:\n  a: {scenarios: &s [{scenario: x, traces: [y]}]}\n")
    with pytest.raises(InputError, match="anchors and aliases"):
        load_manifest(suite)


# -- nesting --------------------------------------------------------------------------------

def _flow(levels: int) -> str:
    """`levels` lists under the document's own mapping, in flow style."""
    return "v: " + "[" * levels + "1" + "]" * levels + "\n"


def _block(levels: int) -> str:
    """`levels` mappings under the document's own, as indented blocks."""
    return "v:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(levels - 1)) \
        + "  " * levels + "k: x\n"


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@pytest.mark.parametrize("make", [_flow, _block])
def test_nesting_up_to_the_limit_reads_and_one_more_is_refused(make: Any) -> None:
    _, data = load_yaml(make(MAX_DEPTH - 1))  # plus the document's own mapping
    assert _depth(data) == MAX_DEPTH
    err = refused(make(MAX_DEPTH))
    assert f"nested deeper than {MAX_DEPTH} levels" in str(err.problem)


def test_very_deep_yaml_is_refused_quickly_without_recursion_error() -> None:
    started = time.perf_counter()
    refused(_flow(200_000))
    assert time.perf_counter() - started < 5


# -- types ----------------------------------------------------------------------------------

def test_only_json_types_come_out() -> None:
    _, data = load_yaml("a: yes\nb: on\nc: 2024-01-01\nd: true\ne: 1.5\nf: null\ng: 0x10\n")
    assert data == {"a": "yes", "b": "on", "c": "2024-01-01", "d": True, "e": 1.5,
                    "f": None, "g": 16}


@pytest.mark.parametrize("value", ["!!binary aGVsbG8=", "!!set {a, b}", "!!timestamp 2024-01-01",
                                   "!!python/object/apply:os.system [echo]", "!custom x",
                                   "!!omap [{a: 1}]"])
def test_other_tags_are_refused(value: str) -> None:
    assert "is not allowed" in str(refused(f"v: {value}\n").problem)


def test_an_integer_too_long_for_python_is_an_error() -> None:
    assert "integer out of range" in str(refused("v: " + "9" * 5000 + "\n").problem)


# -- properties -----------------------------------------------------------------------------

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab:- \n\t[]{},&*!|>'\"#%@`?<=~0.\x00\ufeff"))
               | st.characters(), max_size=200))
def test_any_text_gives_a_value_or_a_yaml_error(text: str) -> None:
    """No other exception: a RecursionError, ValueError or TypeError here was a traceback."""
    try:
        node, data = load_yaml(text)
    except yaml.YAMLError:
        return
    assert (node is None) == (data is None) or data is None


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


_scalars = (st.none() | st.booleans() | st.integers()
            | st.floats(allow_nan=False) | st.text(max_size=20))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
                     max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_json_like_documents_read_back_equal(value: Any) -> None:
    text = yaml.dump({"v": value}, Dumper=_NoAliases)  # (raw NEL in a key would fold)
    assert load_yaml(text)[1] == {"v": value}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_as_a_scenario_file_are_one_input_error(tmp_path: Path, data: bytes) -> None:
    """Whatever the file holds, loading it succeeds or raises one InputError naming it —
    no other exception (a traceback at the CLI)."""
    path = tmp_path / "scenario.yaml"
    path.write_bytes(data)
    try:
        load_scenario(path)
    except InputError as exc:
        assert exc.message.startswith(str(path))
