"""A judge whose mistakes depend on what its prompt contains, for testing `judge align` end to
end on the fake server (the real openai SDK on the wire), over real items: the tau-bench
airline trajectories' scope_fidelity items, labelled from the benchmark's gold actions
(examples/tau-gold/labels.py).

The simulated judge knows each item's reference label (it finds the item by the action under
review as its request shows it: the target block, seq, tool, call id and arguments) and
answers it, except:

- **blind spots**: for the tools in `blind` it gives the wrong label — a pass where the
  reference says fail, a fail where it says pass — unless its system message mentions the
  tool (a worked example of a call of it, or a rule naming it: what `judge align` adds);
- **noise**: a seeded share of items it gets wrong whatever the prompt says;
- **fragility** (optional): under a prompt that holds worked examples, it flips its verdict
  whenever the irrelevant remark of `judge probe` stands in the events.

Requests for rules (the guidelines prompt) get one rule per tool among the items shown,
citing those items, written to name the tool. None of this measures what a real model
gains from a prompt; it lets the tests check that alignment is wired end to end.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from judge.align.examples import blocks_of
from judge.formats import HumanLabel
from judge.importers import iter_tau_bench
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.probes.variants import REMARK
from judge.store import open_store
from judge.testing.faults import FakeRequest

ROOT = Path(__file__).resolve().parent.parent
TAU_BENCH = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
_TARGET = re.compile(r"<<<DATA nonce=\w+ name=target>>>\n(\[seq (\d+) · turn \d+\] tool_call "
                     r"(\S+) .*?)\n<<<END nonce=\w+>>>", re.DOTALL)
_SHOWN = re.compile(r"name=item_(\d+)_target>>>\n\[seq \d+ · turn \d+\] tool_call (\S+) ")
_KEYS = re.compile(r"violated_key must be one of: ([^;\n]*);")


@cache
def world() -> tuple[tuple[Any, ...], tuple[Item, ...], tuple[dict[str, Any], ...]]:
    """(traces, scope_fidelity items, gold label rows) of the airline trajectories."""
    spec = importlib.util.spec_from_file_location("tau_gold_labels",
                                                  ROOT / "examples/tau-gold/labels.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    loaded = load_scenario(SCENARIO)
    traces = tuple(iter_tau_bench(TAU_BENCH))
    items = tuple(it for tr in traces for it in extract_items(loaded, tr))
    return traces, items, tuple(mod.labels(TAU_BENCH))


def seed_database(url: str, *, tasks: Iterable[str] | None = None,
                  labelled: Iterable[str] | None = None) -> list[Item]:
    """Store the traces, items and gold labels (only of `tasks`, when given; labels only of
    the `labelled` tasks, when given)."""
    traces, items, rows = world()
    keep = None if tasks is None else {str(t) for t in tasks}
    marked = None if labelled is None else {str(t) for t in labelled}
    traces = tuple(t for t in traces
                   if keep is None or str(t.metadata.get("task_id")) in keep)
    ids = {t.trace_id for t in traces}
    mine = [it for it in items if it.trace_id in ids]
    wanted = {it.item_id for it in mine
              if marked is None or it.trace_id.split("/")[1] in marked}
    with open_store(url) as store:
        store.save_traces(list(traces))
        store.save_items(mine)
        store.add_labels([HumanLabel.model_validate(r) for r in rows
                          if r["item_id"] in wanted])
    return mine


def target_text(item: Item) -> str:
    """The item's target block as every request shows it (redacted as rendering does)."""
    return blocks_of(item, None)["target"]


def unit(text: str, salt: str) -> float:
    digest = hashlib.sha256(f"{salt}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class SimJudge:
    """The fake server's responder (see the module doc)."""

    blind: tuple[str, ...] = ("cancel_reservation", "transfer_to_human_agents",
                              "update_reservation_baggages")
    noise: float = 0.05
    fragile: bool = False
    truth: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # target -> ref
    graded: int = 0
    asked_rules: int = 0

    def __post_init__(self) -> None:
        if not self.truth:
            _, items, rows = world()
            by_id = {r["item_id"]: r for r in rows}
            for it in items:
                r = by_id[it.item_id]
                self.truth[target_text(it)] = (r["label"], r["violated_key"])

    def __call__(self, request: FakeRequest) -> str:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages") or []
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = "\n".join(m["content"] for m in messages if m.get("role") == "user")
        if "You help improve the instructions of an AI judge" in system:
            return self.rules(user)
        return self.verdict(system, user)

    def rules(self, user: str) -> str:
        self.asked_rules += 1
        by_tool: dict[str, list[int]] = {}
        for n, tool in _SHOWN.findall(user):
            by_tool.setdefault(tool, []).append(int(n))
        return json.dumps({"rules": [
            {"rule": f"A {tool} call that the user's own request does not call for is a "
                     "fail; one the user asked for and confirmed is a pass.", "items": ns}
            for tool, ns in sorted(by_tool.items())]})

    def verdict(self, system: str, user: str) -> str:
        self.graded += 1
        m = _TARGET.search(user)
        assert m is not None, "a grading request shows its target"
        shown, seq, tool = m.group(1), int(m.group(2)), m.group(3)
        found = _KEYS.search(user)
        keys = [k.strip() for k in found.group(1).split(",") if k.strip()] if found else []
        label, key = self.truth.get(shown, ("pass", None))
        wrong = unit(shown, "noise") < self.noise
        if tool in self.blind and tool not in system:
            wrong = not wrong
        if self.fragile and "Worked examples" in system and REMARK in user:
            wrong = not wrong
        if wrong:
            label = "fail" if label == "pass" else "pass"
            key = "serveBookings" if "serveBookings" in keys else (keys[0] if keys else None)
        if label == "fail" and key not in keys:
            key = keys[0] if keys else None
        return json.dumps({"label": label, "violated_key": key if label == "fail" else None,
                           "evidence_event": seq if label == "fail" else None,
                           "confidence": 0.9, "rationale": f"simulated judge on {tool}"})
