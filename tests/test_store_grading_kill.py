"""A grading run killed with SIGKILL and restarted: no verdict lost or duplicated, no provider
call repeated for a stored result (calls are stored before verdicts; verdicts as they come)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from judge.store import open_store
from judge.store.tables import CallRow, VerdictRow

CALLS = CallRow.__table__
VERDICTS = VerdictRow.__table__

CHILD = Path(__file__).resolve().parent / "grading_child.py"
N_TRACES = "60"


def child(url: str, log: Path, run_id: str, delay: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CHILD), url, str(log), run_id, N_TRACES, delay],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_sigkill_then_rerun(store_url: str, tmp_path: Path) -> None:
    run_id = "nightly-1"
    log = tmp_path / "calls.log"
    proc = child(store_url, log, run_id, "0.05")
    store = open_store(store_url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"child ended before the kill: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if store.count_verdicts(run_id) >= 15:
                break
        except Exception:  # the child may still be creating the schema
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    before = store.stored_item_ids(run_id)
    with store.engine.connect() as conn:
        stored_calls = {r[0] for r in conn.execute(select(CALLS.c.item_id))}
    first_calls = log.read_text().split()
    assert len(before) >= 15

    log2 = tmp_path / "calls2.log"
    again = child(store_url, log2, run_id, "0")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    second_calls = log2.read_text().split() if log2.exists() else []

    # no provider call repeated for a result stored before the kill
    assert not set(second_calls) & stored_calls
    # nothing lost, nothing duplicated
    with store.engine.connect() as conn:
        ids = [r[0] for r in conn.execute(select(VERDICTS.c.item_id)
                                          .where(VERDICTS.c.run_id == run_id))]
        n_calls = conn.execute(select(func.count()).select_from(CALLS)).scalar_one()
    assert len(ids) == len(set(ids))
    n_items = len(ids)
    assert before <= set(ids)
    assert len(before) < n_items  # the kill really cut the run short
    assert set(first_calls) | set(second_calls) == set(ids)  # every item was judged once
    assert n_calls == n_items
    assert f"graded {n_items - len(before)}" in out
    run = store.get_run(run_id)
    assert run is not None and run["status"] == "finished"
    store.close()
