"""How rendering uses judge.redaction: a scenario's `redaction:` block (allow-list, its own
secret shapes and agent names), one scrub over every block of an item, the counts a request
carries for the run's record, and the names redaction never rewrites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.errors import InputError
from judge.items import Item, extract_items
from judge.ledger import load_scenario
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import Ledger
from judge.ledger.scenario import RubricUse, Scenario, ScenarioRedaction
from judge.prompts import Redaction, load_prompt, render
from judge.trace import Trace

SCOPE = load_prompt("scope_fidelity")


def _item(events: list[dict[str, Any]], redaction: ScenarioRedaction | None = None,
          candidate: dict[str, Any] | None = None, goal: str = "help the customer") -> Item:
    trace = Trace.model_validate({"trace_id": "t", "events": events,
                                  "candidate": candidate or {"model": "zz-model-9"}})
    sc = Scenario(id="s", goal=goal, judge=[RubricUse(rubric="scope_fidelity", on="tool_call")],
                  redaction=redaction or ScenarioRedaction())
    return extract_items(LoadedScenario(sc, Ledger.reduce([]), "s.yaml"), trace)[-1]


def _data(item: Item, redaction: Redaction | None = None) -> str:
    request = render(SCOPE, item, redaction=redaction)
    return request.messages[0]["content"].split("<<<DATA", 1)[1]


def test_scenario_allow_list_keeps_a_value_that_looks_like_a_secret() -> None:
    token = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    events = [{"kind": "user", "text": f"use voucher {token} please"},
              {"kind": "tool_call", "tool": "apply_voucher", "args": {"code": token}}]
    assert token not in _data(_item(events))
    assert _data(_item(events, ScenarioRedaction(allow=[token]))).count(token) >= 2


def test_scenario_secret_patterns_and_agent_names_are_added_to_the_built_in_rules() -> None:
    events = [{"kind": "user", "text": "ask AcmeBot-7 about ticket ACME-SECRET-99812"},
              {"kind": "tool_call", "tool": "lookup", "args": {"q": "ACME-SECRET-99812"}}]
    plain = _data(_item(events))
    assert "ACME-SECRET-99812" in plain and "AcmeBot-7" in plain
    extra = ScenarioRedaction(secret_patterns=[r"ACME-SECRET-\d+"], identity=["AcmeBot-7"])
    data = _data(_item(events, extra))
    assert "ACME-SECRET-99812" not in data and "AcmeBot-7" not in data
    assert "[redacted:secret]" in data and "[agent]" in data


def test_settings_and_scenario_additions_combine() -> None:
    events = [{"kind": "user", "text": "ping HelperX and OrderBot"},
              {"kind": "tool_call", "tool": "noop", "args": {}}]
    item = _item(events, ScenarioRedaction(identity=["OrderBot"]))
    data = _data(item, Redaction(extra_identity=("HelperX",)))
    assert "HelperX" not in data and "OrderBot" not in data


def test_a_secret_first_seen_in_a_tool_result_is_scrubbed_from_the_goal_too() -> None:
    password = "Tr0ub4dor&3-horse"
    events = [{"kind": "user", "text": "reset it"},
              {"kind": "tool_call", "tool": "get_account", "args": {"id": "a-1"}},
              {"kind": "tool_result", "tool": "get_account",
               "result": {"password": password, "id": "a-1"}},
              {"kind": "tool_call", "tool": "reset", "args": {"id": "a-1"}}]
    item = _item(events, goal=f"reset the account whose old password was {password}")
    data = _data(item)
    assert password not in data
    assert data.count("[redacted:secret]") >= 2


def test_request_carries_counts_by_class_never_values() -> None:
    events = [{"kind": "user", "text": "I am bob@example.com, card 4111 1111 1111 1111, "
                                       "bob@example.com again; I'm gpt-4o by the way"},
              {"kind": "tool_call", "tool": "noop", "args": {"email": "bob@example.com"}}]
    request = render(SCOPE, _item(events))
    counts = dict(request.redactions)
    assert counts["card"] == 1 and counts["email"] >= 2 and counts["identity"] >= 1
    assert all(isinstance(n, int) for n in counts.values())
    assert "bob@example.com" not in repr(counts)
    data = request.messages[0]["content"]
    assert data.count("[email-1]") >= 2 and "[email-2]" not in data  # one customer, one name


def test_ledger_keys_and_tool_names_are_never_rewritten() -> None:
    events = [{"kind": "user", "text": "run it"},
              {"kind": "tool_call", "tool": "gpt4o_lookup", "args": {"orderId": "order-1"}}]
    item = _item(events, candidate={"model": "gpt4o_lookup", "agent": "order"})
    data = _data(item)
    assert "gpt4o_lookup" in data and '"orderId":"order-1"' in data


def test_scenario_redaction_survives_the_store_round_trip() -> None:
    item = _item([{"kind": "tool_call", "tool": "x", "args": {}}],
                 ScenarioRedaction(allow=["a-1"], secret_patterns=["S-\\d+"]))
    again = Item.from_dict(item.to_dict())
    assert again.redaction == {"allow": ("a-1",), "secret_patterns": ("S-\\d+",)}
    assert render(SCOPE, again) == render(SCOPE, item)


@pytest.mark.parametrize(("block", "message"), [
    ("  secret_patterns: ['(unclosed']", "secret_patterns"),
    ("  identity_patterns: ['a*']", "matches the empty string"),
    ("  allow: ['  ']", "an empty string"),
    ("  allowed: ['x']", "allowed"),
])
def test_bad_scenario_redaction_is_one_line_naming_the_field(
        tmp_path: Path, block: str, message: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(f"id: s\ngoal: g\nredaction:\n{block}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    text = exc.value.message
    assert "\n" not in text and str(path) in text and message in text and "redaction" in text


def test_a_grading_run_counts_what_it_replaced_by_class() -> None:
    """Each run records how many values of each class were replaced, never the values: the
    grading stats sum the requests' counts, and a rerun served by the render memo renders
    (and counts) nothing."""
    from judge.grading.cache import MemoryCache
    from judge.grading.engine import GradingStats, grade_items_sync
    from judge.providers.base import ModelParams
    from judge.providers.scripted import ScriptedProvider

    opts: dict[str, Any] = {"params": ModelParams(), "concurrency": 1, "rpm": None,
                            "retries": 0}
    pass_reply = ('{"label": "pass", "violated_key": null, "evidence_event": null, '
                  '"confidence": 0.9, "rationale": "ok"}')
    events = [{"kind": "user", "text": "card 4111 1111 1111 1111, mail bob@example.com"},
              {"kind": "tool_call", "tool": "noop", "args": {"email": "bob@example.com"}}]
    item = _item(events)
    cache = MemoryCache()
    first = GradingStats()
    grade_items_sync([item], SCOPE, ScriptedProvider(default=pass_reply), cache=cache,
                     stats=first, **opts)
    assert first.rendered == 1
    assert first.redactions["card"] == 1 and first.redactions["email"] >= 2
    assert "bob@example.com" not in repr(first.to_dict())
    again = GradingStats()
    grade_items_sync([item], SCOPE, ScriptedProvider(), cache=cache, stats=again, **opts)
    assert again.rendered == 0 and again.redactions == {} and again.cache_hits == 1
