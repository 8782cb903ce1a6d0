"""The one grading entry point, with the checks in a forked child and in this process: the
same verdicts, vetoes, errors and stored rows either way; a failing reader surfaces."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.grading.cache import MemoryCache
from judge.ledger import load_scenario
from judge.pipeline import GradeOptions, Hooks, Source, grade_traces
from judge.pipeline.checkproc import can_fork
from judge.pipeline.collect import TraceChecked
from judge.prompts import load_prompt
from judge.providers.heuristic import HeuristicProvider
from judge.settings import Settings
from judge.store import Store
from judge.trace import Trace, iter_traces

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
MODES = [pytest.param(True, id="child"), pytest.param(False, id="in-process")]


def source(errors: list[InputError], extra: list[Path] = ()) -> Source:  # type: ignore[assignment]
    paths = [*sorted(REFUND.glob("*.json")), *extra]
    return Source(load_scenario(REFUND), (t for p in paths for t in iter_traces(p, errors)),
                  ["scope_fidelity"])


def grade(store: Store | None, child: bool, extra: list[Path] = ()):  # type: ignore[no-untyped-def,assignment]
    errors: list[InputError] = []
    seen: list[TraceChecked] = []
    run_id = store.save_run() if store is not None else None
    result = grade_traces(
        [source(errors, extra)], prompts={"scope_fidelity": load_prompt("scope_fidelity")},
        provider=HeuristicProvider(), settings=Settings.load(environ={}), store=store,
        run_id=run_id, cache=None if store is not None else MemoryCache(), errors=errors,
        hooks=Hooks(on_checked=seen.append),
        options=GradeOptions(keep_verdicts=True, check_process=child))
    return result, seen


@pytest.mark.parametrize("child", MODES)
def test_the_same_results_either_way(store: Store, tmp_path: Path, child: bool) -> None:
    if child and not can_fork(store):
        pytest.skip("no fork here")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "x", "events": [{"kind": "tool_call"}]}\n')
    result, seen = grade(store, child, [bad])
    baseline, _ = grade(None, False, [bad])
    def digest(graded):  # type: ignore[no-untyped-def]
        return [(v.item_id, v.label, v.confidence, v.overruled, v.route, v.route_reason)
                for v in graded.verdicts]

    assert digest(result) == digest(baseline) and len(result.verdicts) > 3
    assert result.checked.vetoes == baseline.checked.vetoes and result.checked.vetoes
    assert result.checked.n_traces == len(seen) == 3
    assert all(tc.scenario is not None for tc in seen)
    assert [e.message for e in result.errors] == [e.message for e in baseline.errors]
    assert len(result.errors) == 1 and "bad.jsonl:1" in result.errors[0].message
    run_id = result.run_id
    assert run_id is not None
    assert store.count_verdicts(run_id) == len(result.verdicts) == len(result.checked.items)
    assert all(store.get_item(it.item_id) is not None for it in result.checked.items)
    vetoed = [v for v in result.verdicts if v.route == "veto"]
    assert vetoed and all(v.overruled for v in vetoed)


def _exploding(errors: list[InputError]) -> Iterator[Trace]:
    yield from iter_traces(REFUND / "pass.json", errors)
    raise RuntimeError("the reader broke")


@pytest.mark.parametrize("child", MODES)
def test_a_failing_reader_is_not_swallowed(child: bool) -> None:
    errors: list[InputError] = []
    with pytest.raises(RuntimeError, match="the reader broke"):
        grade_traces([Source(load_scenario(REFUND), _exploding(errors), ["scope_fidelity"])],
                     prompts={"scope_fidelity": load_prompt("scope_fidelity")},
                     provider=HeuristicProvider(), settings=Settings.load(environ={}),
                     cache=MemoryCache(), errors=errors,
                     options=GradeOptions(check_process=child))


def test_a_compact_request_keeps_everything_a_remote_grader_reads() -> None:
    """What crosses from the checking child for remote judges (judge.pipeline.grade.compact):
    the same cache key, item schema, enums and chat body as the full request; the view's
    data (read by local providers only) is not sent, and reading it says so."""
    import pickle

    from judge.grading.keys import KeyMaker
    from judge.pipeline.collect import Checker
    from judge.pipeline.grade import compact
    from judge.prompts import render
    from judge.providers.openai_provider import chat_body
    from judge.verdicts.schema import request_enums, request_schema

    errors: list[InputError] = []
    items = Checker([source(errors)], None).run().items
    prompt = load_prompt("scope_fidelity")
    settings = Settings.load(environ={})
    assert items
    for it in items:
        full = render(prompt, it, settings.model_params(), settings.redaction())
        light = compact(full)
        keys = KeyMaker(prompt.hash, "openai:m", full.params, full.schema, endpoint="http://x")
        assert keys.key(light) == keys.key(full)
        assert request_enums(light) == request_enums(full)
        assert request_schema(light) == request_schema(full)
        assert chat_body(light, "m") == chat_body(full, "m")
        assert light == full  # the request's equality is its messages
        assert len(pickle.dumps(light)) < len(pickle.dumps(full))
        assert light.view is not None and full.view is not None
        assert full.view.goal is not None
        with pytest.raises(RuntimeError, match="only local providers read it"):
            _ = light.view.goal
