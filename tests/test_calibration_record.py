"""Calibration records: save/load round trip, paths, lookup, staleness."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from judge.calibration import (
    CalibrationRecord,
    build_record,
    find_record,
    load_records,
    stale_rubrics,
)
from judge.calibration.record import record_path
from judge.errors import InputError


def make_record(seed: int = 0, *, model: str = "openai:gpt-4.1-mini", prompt_hash: str = "h2",
                version: str = "v2", n: int = 400) -> CalibrationRecord:
    rng = np.random.default_rng(seed)
    conf = rng.beta(4, 0.35, n)
    agreed = (rng.random(n) < conf**3).astype(float)
    human_fail = rng.random(n) < 0.4
    return build_record(conf, agreed, human_fail, rubric="scope_fidelity",
                        prompt_version=version, prompt_hash=prompt_hash, model=model,
                        label_set_hash="sha256:x", n_labelled=n)


def test_record_fields_and_calibrate(tmp_path: Path) -> None:
    rec = make_record()
    assert rec.n == 400 and rec.n_per_class["pass"] + rec.n_per_class["fail"] == 400
    assert rec.method in ("isotonic", "platt")
    assert 0.0 <= rec.expected_review_share <= 1.0
    scalar = rec.calibrate(0.9)
    assert isinstance(scalar, float)
    arr = rec.calibrate(np.array([0.1, 0.5, 0.9, 0.999]))
    assert arr.shape == (4,) and np.all(np.diff(arr) >= 0)
    assert float(arr[1]) < 0.5  # overconfident judge: 0.5 raw means well below 0.5
    if rec.threshold is not None:
        assert rec.auto_accepts(1.0) and not rec.auto_accepts(0.0)
    # metrics are finite JSON numbers
    doc = json.loads(rec.model_dump_json())
    assert doc["metrics"]["ece"] >= 0 and doc["calibrator"]["kind"] == rec.method


def test_save_path_sanitizes_and_round_trips(tmp_path: Path) -> None:
    rec = make_record(model="openai:org/gpt-4.1-mini")
    path = rec.save(tmp_path / "calibration")
    assert path == tmp_path / "calibration" / "scope_fidelity" / "v2__openai-org-gpt-4.1-mini.json"
    loaded = load_records(tmp_path / "calibration")
    assert loaded == [rec]
    assert loaded[0].calibrate(0.93) == rec.calibrate(0.93)
    assert record_path("r", "a/b", "c:d", "e").name == "c-d__e.json"


def test_find_record_picks_newest_matching(tmp_path: Path) -> None:
    old = make_record(1)
    new = make_record(2).model_copy(update={"created_at": old.created_at + timedelta(days=1)})
    other = make_record(3, model="anthropic:claude", version="v3")
    assert find_record([old, new, other], "scope_fidelity", "h2", "openai:gpt-4.1-mini") == new
    assert find_record([old, new], "scope_fidelity", "h9", "openai:gpt-4.1-mini") is None
    other.save(tmp_path)
    assert find_record(tmp_path, "scope_fidelity", "h2", "anthropic:claude") == other
    assert find_record(tmp_path / "absent", "scope_fidelity", "h2", "m") is None


def test_broken_record_file_names_file(tmp_path: Path) -> None:
    bad = tmp_path / "scope_fidelity" / "v1__m.json"
    bad.parent.mkdir()
    bad.write_text('{"rubric": "x"}')
    with pytest.raises(InputError) as info:
        load_records(tmp_path)
    assert str(bad) in info.value.message
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load_records(tmp_path)


def test_stale_rubrics() -> None:
    rec = make_record(model="m", prompt_hash="h2").model_copy(
        update={"created_at": datetime(2026, 11, 1, tzinfo=UTC)})
    current = [("scope_fidelity", "v2", "h2", "m")]
    assert stale_rubrics([rec], current, {"scope_fidelity": 480}) == []  # +20% is the limit
    grown = stale_rubrics([rec], current, {"scope_fidelity": 481})
    assert len(grown) == 1 and "400 to 481" in grown[0]
    changed = stale_rubrics([rec], [("scope_fidelity", "v3", "h3", "m")])
    assert len(changed) == 1 and "v3" in changed[0] and "records exist for prompt v2" in changed[0]
    other_model = stale_rubrics([rec], [("scope_fidelity", "v2", "h2", "m2")])
    assert len(other_model) == 1 and "m2" in other_model[0]
    missing = stale_rubrics([], [("summary_fidelity", "v1", "h", "m")])
    assert missing and "summary_fidelity" in missing[0]
