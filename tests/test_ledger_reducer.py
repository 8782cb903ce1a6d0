"""The reducer enforces the transition rules of formats §2 and names the delta that breaks one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.errors import InputError, LedgerError
from judge.ledger import Delta, Ledger, load_scenario


def d(turn: int, op: str, key: str, source: str = "user", **kw: Any) -> Delta:
    return Delta.model_validate({"turn": turn, "op": op, "key": key, "source": source, **kw})


def first(key: str, cls: str = "constraint", turn: int = 1, source: str = "user",
          value: Any = "v1", **kw: Any) -> Delta:
    return d(turn, "set", key, source, value=value, persistence="task", sensitivity="normal",
             **{"class": cls}, **kw)


def test_supersede_keeps_the_old_value_visible() -> None:
    ledger = Ledger.reduce([first("browser", value="chromium"),
                            d(4, "supersede", "browser", value="firefox")])
    before, after = ledger.at(3), ledger.at(4)
    assert before.value("browser") == "chromium" and before.superseded == ()
    assert after.value("browser") == "firefox"
    (old,) = after.superseded_values("browser")
    assert (old.value, old.set_turn, old.superseded_turn) == ("chromium", 1, 4)
    assert ledger.at(99).superseded_values("browser") == [old]
    assert [x.op.value for x in after.deltas] == ["supersede"] and ledger.at(5).deltas == ()


def test_at_before_the_first_delta_is_empty_and_turns_are_listed() -> None:
    ledger = Ledger.reduce([first("a", turn=2), first("b", turn=5)])
    assert ledger.at(1).entries == {} and ledger.turns() == [2, 5]
    assert set(ledger.at(4).entries) == {"a"} and set(ledger.at(5).entries) == {"a", "b"}


@pytest.mark.parametrize(("deltas", "index", "fld", "words"), [
    # only a user source grants or expands a permission
    ([first("canRefund", cls="permission", source="tool")], 0, "source",
     "only a user source may grant"),
    ([first("canRefund", cls="permission"),
      d(2, "supersede", "canRefund", "agent", value="more")], 1, "source",
     "only a user source may grant"),
    # only a user source revokes a constraint
    ([first("noWrites"), d(2, "revoke", "noWrites", "tool")], 1, "source",
     "only a user source may revoke"),
    # a tool result updates facts, never sets a constraint or goal
    ([first("goal", cls="goal", source="tool")], 0, "source", "never sets or changes a goal"),
    ([first("noWrites"), d(2, "supersede", "noWrites", "agent", value="x")], 1, "source",
     "the agent may update a fact"),
    # completed stays completed
    ([first("done", cls="completion"), d(2, "complete", "done"),
      d(3, "supersede", "done", value="again")], 2, "op", "stays completed"),
    ([first("done", cls="completion"), d(2, "complete", "done"), d(3, "complete", "done")],
     2, "op", "already completed at turn 2"),
    ([first("done", cls="completion"), d(2, "complete", "done"),
      d(3, "set", "done", value="x")], 2, "op", "already completed"),
    # structure
    ([d(1, "supersede", "ghost", value="x")], 0, "op", "has not been set"),
    ([d(1, "set", "x", value=1, persistence="task", sensitivity="normal")], 0, "class",
     "must give class"),
    ([first("a"), d(2, "supersede", "a", value="b", **{"class": "goal"})], 1, "class",
     "a key keeps its class"),
    ([first("a", turn=3), first("b", turn=2)], 1, "turn", "must be in turn order"),
    ([first("a"), d(2, "complete", "a")], 1, "op", "only goal and completion keys complete"),
    ([first("a"), d(2, "supersede", "a")], 1, "value", "supersede needs the new value"),
    ([first("a"), first("a", turn=2)], 1, "op", "use 'supersede'"),
])
def test_a_broken_rule_is_rejected_naming_the_delta(deltas: list[Delta], index: int, fld: str,
                                                     words: str) -> None:
    with pytest.raises(LedgerError) as exc:
        Ledger.reduce(deltas, file="s.yaml")
    msg = exc.value.message
    assert msg.startswith(f"s.yaml: ledger[{index}]: field '{fld}'"), msg
    assert words in msg
    assert exc.value.path == f"ledger[{index}]" and exc.value.field == fld


def test_tool_may_update_facts_and_user_may_revoke_and_reset() -> None:
    ledger = Ledger.reduce([
        first("status", cls="mutable_fact", source="tool", value="packed"),
        d(2, "supersede", "status", "tool", value="shipped"),
        first("noWrites", turn=2),
        d(3, "revoke", "noWrites"),
        d(4, "set", "noWrites", value="again"),
    ])
    assert ledger.at(2).value("status") == "shipped"
    assert ledger.at(3).entries["noWrites"].status == "revoked"
    assert ledger.at(3).value("noWrites") is None
    assert ledger.at(4).is_active("noWrites")


def test_failure_rolls_back_a_completion_which_may_then_complete_again() -> None:
    ledger = Ledger.reduce([
        first("receipt", cls="completion"), d(2, "complete", "receipt", "tool"),
        d(3, "fail", "receipt", "tool", value="bounced"), d(4, "complete", "receipt", "tool"),
    ])
    assert [ledger.at(t).entries["receipt"].status for t in (1, 2, 3, 4)] == [
        "active", "completed", "failed", "completed"]
    assert ledger.at(3).value("receipt") is None


def test_turn_persistence_expires_after_its_turn() -> None:
    hint = d(1, "set", "hint", value="maybe", persistence="turn", sensitivity="normal",
             **{"class": "uncertainty"})
    ledger = Ledger.reduce([hint, first("other", turn=3)])
    assert ledger.at(1).is_active("hint")
    assert ledger.at(2).entries["hint"].status == "expired"
    assert ledger.at(3).entries["hint"].status == "expired"


def test_scenario_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "scenario.yaml"
    p.write_text("id: x\ngoal: g\nledger:\n  - turn: 1\n    op: set\n    key: a\n"
                 "    source: user\n    clas: constraint\n")
    with pytest.raises(InputError) as exc:
        load_scenario(tmp_path)
    assert exc.value.message.startswith(f"{p}:8: ledger[0].clas: unknown field")

    p.write_text("id: x\ngoal: g\nledger:\n  - {turn: 1, op: set, key: a, source: tool,\n"
                 "     class: permission, persistence: task, sensitivity: normal}\n")
    with pytest.raises(LedgerError, match=r"ledger\[0\]: field 'source'"):
        load_scenario(p)

    p.write_text("id: x\ngoal: [unclosed\n")
    with pytest.raises(InputError, match=r"scenario\.yaml:\d+: malformed YAML"):
        load_scenario(p)


def test_yaml_words_stay_words(tmp_path: Path) -> None:
    """`on:` is a key and `no` a string (YAML 1.2 booleans), not true/false."""
    p = tmp_path / "scenario.yaml"
    p.write_text("id: x\ngoal: g\nrules:\n  forbidden:\n    - name: n\n      tool: book\n"
                 "      args: [{path: insurance, equals: no}]\n"
                 "judge:\n  - rubric: scope_fidelity\n    on: tool_call\n")
    sc = load_scenario(p).scenario
    assert sc.rules.forbidden[0].args[0].equals == "no"
    assert sc.judge[0].on == "tool_call"
