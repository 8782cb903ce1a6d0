"""The collector's settings for a grading run (judge.pipeline.heap): what is alive when the
run starts is frozen and young collections are rarer during it, then both are undone, even
when the run raises."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
from test_pipeline_grade import REFUND

from judge.grading.cache import MemoryCache
from judge.ledger import load_scenario
from judge.pipeline import GradeOptions, Source, grade_traces
from judge.pipeline.heap import RUN_GEN0_THRESHOLD, settled_heap
from judge.prompts import load_prompt
from judge.providers.base import JudgeRequest, ProviderResponse
from judge.providers.heuristic import HeuristicProvider
from judge.settings import Settings
from judge.trace import iter_traces


class Watching(HeuristicProvider):
    """The heuristic judge, noting the collector's state at every request."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, int]] = []

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return await super().generate(request)


def test_a_run_grades_with_its_start_frozen_and_rarer_young_collections() -> None:
    before = (gc.get_freeze_count(), gc.get_threshold())
    alive = gc.get_count()[0] + len(gc.get_objects())
    provider = Watching()
    paths = sorted(REFUND.glob("*.json"))
    grade_traces([Source(load_scenario(REFUND), (t for p in paths for t in iter_traces(p)),
                         ["scope_fidelity"])],
                 prompts={"scope_fidelity": load_prompt("scope_fidelity")}, provider=provider,
                 settings=Settings.load(environ={}), cache=MemoryCache(),
                 options=GradeOptions(check_process=False))
    assert provider.seen, "the judge was asked nothing"
    for frozen, gen0 in provider.seen:
        assert frozen >= alive // 2  # (what was alive at the start, give or take)
        assert gen0 == max(RUN_GEN0_THRESHOLD, before[1][0])
    assert (gc.get_freeze_count(), gc.get_threshold()) == before


def test_the_settings_are_undone_when_the_run_raises() -> None:
    before = (gc.get_freeze_count(), gc.get_threshold())
    with pytest.raises(RuntimeError), settled_heap(gen0=12_345):
        assert gc.get_threshold()[0] == max(12_345, before[1][0])
        assert gc.get_freeze_count() > 0
        raise RuntimeError("boom")
    assert (gc.get_freeze_count(), gc.get_threshold()) == before


def test_a_cycle_made_during_the_run_is_still_collected() -> None:
    import weakref

    class Node:
        other: object = None

    with settled_heap():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None


def test_the_process_exits_with_its_heap_frozen(tmp_path: Path) -> None:
    """What is alive at exit is frozen before the interpreter's finalization (which would
    otherwise walk all of it in its collections): seen by an exit handler registered before
    the run's, so run after it."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count()))\n"
        "from judge.pipeline.heap import settled_heap\n"
        "keep = [[i] for i in range(50_000)]\n"
        "with settled_heap():\n"
        "    pass\n"
        "print('frozen after the run', gc.get_freeze_count())\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    after, at_exit = (int(line.rsplit(" ", 1)[1]) for line in done.stdout.splitlines())
    assert after == 0 and at_exit >= 50_000


def test_the_judges_are_prepared_before_the_children_fork_and_the_heap_is_frozen(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The SDK is imported, then frozen, then the children are forked: what it made is never
    walked by a collection, in this process or in a child."""
    import judge.pipeline.callproc as callproc
    import judge.pipeline.checkproc as checkproc
    from judge.pipeline.checkproc import can_fork
    from judge.store import open_store

    events: list[str] = []
    made: list[object] = []

    def frozen(obj: object) -> bool:  # in the permanent generation: in none of the three
        return gc.is_tracked(obj) and all(o is not obj for o in gc.get_objects())

    class Preparing(Watching):
        def prepare(self) -> None:
            made.append([{"sdk": i} for i in range(1000)])  # what an SDK import leaves
            events.append("prepare")

    for cls in (checkproc.CheckerProcess, callproc.CallWriterProcess):
        real = cls.start

        def start(self: object, *a: object, _real=real, _name=cls.__name__,  # type: ignore[no-untyped-def]
                  **k: object) -> None:
            events.append(f"fork {_name}: {'frozen' if frozen(made[0]) else 'not frozen'}")
            _real(self, *a, **k)

        monkeypatch.setattr(cls, "start", start)
    store = open_store(f"sqlite:///{tmp_path / 'j.db'}")
    if not can_fork(store):
        pytest.skip("no fork here")
    paths = sorted(REFUND.glob("*.json"))
    try:
        grade_traces([Source(load_scenario(REFUND), (t for p in paths for t in iter_traces(p)),
                             ["scope_fidelity"])],
                     prompts={"scope_fidelity": load_prompt("scope_fidelity")},
                     provider=Preparing(), settings=Settings.load(environ={}), store=store,
                     run_id=store.save_run())
    finally:
        store.close()
    assert events == ["prepare", "fork CheckerProcess: frozen", "fork CallWriterProcess: frozen"]
