"""What a judge item shows of the scenario's `leakage:` block: the facts that belong to
someone else, by owner, so a judge can tell a paraphrased leak where the deterministic match
(`state_leakage`, authoritative) finds none.

`foreign_facts(leakage, session)` is the item's `foreign` data: `{"key", "owners": [{"owner",
"kind", "introduced_in", "facts": [{"value", "aliases"} | {"pattern", "note"}]}]}` — every
other tenant, and every other session but the item's own (a session's facts are its own
there), at most `MAX_FACTS` facts in all (then `"more": n`).
"""

from __future__ import annotations

from typing import Any

from judge.ledger.leakage import Leakage, LeakFact

MAX_FACTS = 200


def _fact(f: LeakFact) -> dict[str, Any]:
    if f.pattern is not None:
        return {"pattern": f.pattern, **({"note": f.note} if f.note else {})}
    return {"value": f.value, **({"aliases": list(f.aliases)} if f.aliases else {})}


def foreign_facts(leakage: Leakage | None, session: str | None) -> dict[str, Any] | None:
    """The foreign facts an item of `session` is shown (None: the scenario lists none)."""
    if leakage is None or not leakage.n_facts():
        return None
    owners: list[dict[str, Any]] = []
    room, more = MAX_FACTS, 0
    groups: list[tuple[str, str, str | None, list[LeakFact]]] = [
        (t.owner, "tenant", None, t.facts) for t in leakage.other_tenants]
    groups += [(s.owner_name(), "session", s.session, s.facts)
               for s in leakage.other_sessions if s.session != session]
    for owner, kind, introduced, facts in groups:
        shown = facts[:room]
        more += len(facts) - len(shown)
        room -= len(shown)
        if shown:
            owners.append({"owner": owner, "kind": kind, "introduced_in": introduced,
                           "facts": [_fact(f) for f in shown]})
    if not owners:
        return None
    out: dict[str, Any] = {"key": leakage.key, "owners": owners}
    if more:
        out["more"] = more
    return out
