"""A SQLite database with real items (tau-bench airline trajectories under the tau-airline
scenario) and human labels from a known rule, plus a scripted judge of known reliability."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from types import SimpleNamespace

from judge.formats import HumanLabel
from judge.importers import iter_tau_bench
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.providers.base import JudgeRequest
from judge.store import open_store

ROOT = Path(__file__).resolve().parent.parent
TAU_BENCH = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
RUBRIC = "scope_fidelity"
FAIL_TOOLS = ("cancel_reservation", "book_reservation")  # the known rule: these are "fail"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@cache
def airline_items() -> tuple[Item, ...]:
    loaded = load_scenario(SCENARIO)
    return tuple(it for tr in iter_tau_bench(TAU_BENCH) for it in extract_items(loaded, tr))


def human(item: Item) -> str:
    return "fail" if item.target.get("tool") in FAIL_TOOLS else "pass"


def fail_key(item: Item) -> str:
    keys = sorted(item.ledger_keys)
    return "confirmBeforeWrite" if "confirmBeforeWrite" in item.ledger_keys else keys[0]


def label_for(item: Item, *, annotator: str = "asha", label: str | None = None,
              at: datetime | None = None) -> HumanLabel:
    lab = label or human(item)
    return HumanLabel(item_id=item.item_id, label=lab,  # type: ignore[arg-type]
                      violated_key=fail_key(item) if lab == "fail" else None,
                      evidence_event=item.seq if lab == "fail" else None, annotator=annotator,
                      created_at=at or T0)


def unit(item_id: str, salt: str) -> float:
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def judge_answer(item: Item, flip_salt: str = "agree") -> dict[str, object]:
    """A judge whose raw confidence is calibrated: it agrees with the human rule with
    probability equal to its confidence (drawn per item, reproducibly)."""
    conf = 1.0 - 0.5 * unit(item.item_id, "conf") ** 3  # mostly sure, sometimes not
    agrees = unit(item.item_id, flip_salt) < conf
    truth = human(item)
    label = truth if agrees else ("pass" if truth == "fail" else "fail")
    return {"label": label, "violated_key": fail_key(item) if label == "fail" else None,
            "evidence_event": item.seq if label == "fail" else None,
            "confidence": round(conf, 4),
            "rationale": f"rule judge ({flip_salt})"}


def scripted_judge(flip_salt: str = "agree") -> Callable[[JudgeRequest], str]:
    def answer(request: JudgeRequest) -> str:
        view = request.view  # what the rendered request shows (there is no raw item)
        assert view is not None and view.target is not None
        shown = SimpleNamespace(item_id=request.item_id, seq=view.seq,
                                ledger_keys=view.ledger_keys, target=view.target)
        return json.dumps(judge_answer(shown, flip_salt))  # type: ignore[arg-type]
    return answer


def seed_database(url: str, *, n_labelled: int | None = None,
                  items: tuple[Item, ...] | None = None) -> list[Item]:
    """Store every airline item and label the first `n_labelled` (all by default)."""
    items = items if items is not None else airline_items()
    labelled = list(items[:n_labelled] if n_labelled is not None else items)
    with open_store(url) as store:
        store.save_items(items)
        store.add_labels([label_for(it, at=T0 + timedelta(seconds=i))
                          for i, it in enumerate(labelled)])
    return labelled
