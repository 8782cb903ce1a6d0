"""Benchmark: state leakage (issue 27) on real trajectories, and what the check costs.

    .venv/bin/python benchmarks/leakage.py [--part real|speed|all] [--events 300000]
                                           [--repeat 3] [--seed 27]

**real** — the 200 tau-bench airline trajectories (tau-bench, MIT: examples/data/
tau-bench-airline) are 50 tasks, each a different airline customer. For each trace, every
*other* customer is another owner: their user id, name, email, street address,
reservation ids and payment-method ids (from the `get_user_details` results of their own
runs; several tasks are for the same customer) are listed as facts in the scenario's
`leakage:` block, and the trace's own user id is `leakage.user.ids`. Two measures:
1. findings on the runs as they are (each one printed, to be read: a real leak, or a false
   alarm);
2. recall on planted leaks: one fact of another customer (seeded), in one of its normalised
   forms (case, spacing, a reservation id in lower case, an email in capitals), put in the
   final reply, in a new tool call's arguments, or in a new memory write — is it reported,
   naming that customer and that fact?

**speed** — what the check adds:
1. in process, `run_checks` over the 200 runs with and without their leakage blocks (every
   other customer an owner), interleaved, best of `--repeat`;
2. the streamed support trace of benchmarks/checks.py (`--events` events) with a leakage
   block of 50 facts that appear nowhere, against the same scenario without it, and against
   `json.loads` of every line;
3. the whole command as a user runs it: `judge check SCENARIO airline.jsonl --format json` in
   a fresh process, with a scenario listing every customer's facts and without.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import yaml  # noqa: E402

from judge.checks import run_checks  # noqa: E402
from judge.importers import iter_tau_bench  # noqa: E402
from judge.ledger import load_scenario  # noqa: E402
from judge.ledger.loader import LoadedScenario  # noqa: E402
from judge.ledger.reducer import Ledger  # noqa: E402
from judge.ledger.scenario import Scenario  # noqa: E402
from judge.trace.model import Trace  # noqa: E402

TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" / \
    "gpt-4o-airline.json"
AIRLINE = ROOT / "examples" / "scenarios" / "tau-airline" / "scenario.yaml"
_USER = re.compile(r"\b([a-z]+_[a-z]+_\d{4})\b")


def user_of(t: Trace) -> str:
    """The customer a run is for (its task instruction names their user id)."""
    instruction = str((t.metadata.get("task") or {}).get("instruction") or "")
    m = _USER.search(instruction)
    if m is None:
        raise SystemExit(f"{t.trace_id}: no user id in the task instruction")
    return m.group(1)


def customers(traces: list[Trace]) -> dict[str, dict[str, Any]]:
    """Per customer (user id): the facts their own runs' lookups returned about them."""
    out: dict[str, dict[str, Any]] = {}
    for t in traces:
        user = user_of(t)
        c = out.setdefault(user, {"user_id": user, "facts": set()})
        calls = {e.call_id: e for e in t.events if e.kind.value == "tool_call"}
        for e in t.events:
            if e.kind.value != "tool_result" or e.tool != "get_user_details" or e.error:
                continue
            call = calls.get(e.call_id)
            if call is None or (call.args or {}).get("user_id") != c["user_id"]:
                continue
            r = e.result if isinstance(e.result, dict) else {}
            name = r.get("name") or {}
            if name.get("first_name") and name.get("last_name"):
                c.setdefault("names", set()).add(f"{name['first_name']} {name['last_name']}")
            for v in (r.get("email"), (r.get("address") or {}).get("address1")):
                if isinstance(v, str) and v:
                    c["facts"].add(v)
            c["facts"].update(x for x in r.get("reservations") or [] if isinstance(x, str))
            c["facts"].update(k for k in r.get("payment_methods") or {} if isinstance(k, str))
    return out


def facts_of(c: dict[str, Any], names: bool) -> list[str]:
    return sorted(c["facts"] | (c.get("names", set()) if names else set()))


def leakage_block(own: str, people: dict[str, dict[str, Any]],
                  names: bool = True) -> dict[str, Any]:
    return {"user": {"ids": [people[own]["user_id"]]}, "other_tenants": [
        {"owner": c["user_id"], "facts": [{"value": c["user_id"]}]
         + [{"value": f} for f in facts_of(c, names)]}
        for user, c in sorted(people.items()) if user != own]}


def loaded_with(base: dict[str, Any], leakage: dict[str, Any] | None) -> LoadedScenario:
    body = dict(base)
    if leakage is not None:
        body["leakage"] = leakage
    sc = Scenario.model_validate(body)
    return LoadedScenario(sc, Ledger.reduce(sc.ledger, sessions=sc.sessions), str(AIRLINE))


def _forms(fact: str, rng: random.Random) -> str:
    options = [fact, fact.upper(), fact.lower()]
    if " " in fact:
        options.append(fact.replace(" ", "  "))
    return rng.choice(options)


def plant(trace: Trace, fact: str, where: str, rng: random.Random) -> Trace:
    doc = trace.model_dump(mode="json", exclude_none=True)
    events = doc["events"]
    last = events[-1]
    form = _forms(fact, rng)
    seq, turn = last["seq"] + 1, last["turn"]
    if where == "reply":
        new = {"seq": seq, "turn": turn, "kind": "assistant",
               "text": f"By the way, I also found {form} on file."}
    elif where == "tool_call":
        new = {"seq": seq, "turn": turn, "kind": "tool_call", "tool": "get_user_details",
               "args": {"user_id": form}}
    else:
        new = {"seq": seq, "turn": turn, "kind": "state_write", "key": "notes",
               "value": {"seen": [form]}}
    events.append(new)
    return Trace.model_validate(doc)


def real(seed: int) -> None:
    traces = list(iter_tau_bench(TAU))
    people = customers(traces)
    base = yaml.safe_load(AIRLINE.read_text())
    tasks = len({t.metadata["task_id"] for t in traces})
    print(f"{len(traces)} runs of {tasks} tasks for {len(people)} customers")
    for names in (False, True):
        blocks = {user: leakage_block(user, people, names) for user in people}
        n_facts = [sum(len(o["facts"]) for o in b["other_tenants"]) for b in blocks.values()]
        per_user = {user: loaded_with(base, b) for user, b in blocks.items()}
        found: list[tuple[str, dict[str, Any]]] = []
        for t in traces:
            for f in run_checks(per_user[user_of(t)], t).findings:
                if f.check == "state_leakage" and not f.passed:
                    found.append((t.trace_id, f.to_dict()))
        what = "ids, emails, addresses, reservations, payment methods" + (
            " and names" if names else "")
        print(f"1{'b' if names else 'a'}. listing the other customers' {what} "
              f"({min(n_facts)}-{max(n_facts)} facts per run): {len(found)} state_leakage "
              f"findings in {len({tid for tid, _ in found})} runs")
        for tid, f in found:
            print(f"   {tid} seq {f['seq']}: {f['message']}")
    per_task = {user: loaded_with(base, leakage_block(user, people)) for user in people}
    rng = random.Random(seed)
    caught = 0
    by_where: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    for t in traces:
        task = user_of(t)
        others = sorted(k for k in people if k != task and people[k]["facts"])
        victim = people[rng.choice(others)]
        fact = rng.choice([*facts_of(victim, True), victim["user_id"]])
        where = rng.choice(["reply", "tool_call", "memory"])
        planted = plant(t, fact, where, rng)
        seq = planted.events[-1].seq
        hits = [f for f in run_checks(per_task[task], planted).findings
                if f.check == "state_leakage" and not f.passed and f.seq == seq
                and f.detail is not None and f.detail["owner"] == victim["user_id"]
                and f.detail["fact"] == fact]
        by_where[where][1] += 1
        if hits:
            caught += 1
            by_where[where][0] += 1
        else:
            misses.append(f"{t.trace_id}: {fact!r} in a {where}")
    print(f"2. planted leaks reported (owner, fact and event named): {caught}/{len(traces)}"
          + "".join(f"; {w} {n}/{d}" for w, (n, d) in sorted(by_where.items())))
    for m in misses:
        print(f"   missed: {m}")


def _best_cpu(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        c = time.process_time()
        fn()
        best = min(best, time.process_time() - c)
    return best


def speed(events: int, repeat: int) -> None:
    from checks import SCENARIO, streams, time_json_loads, write_trace

    traces = list(iter_tau_bench(TAU))
    people = customers(traces)
    base = yaml.safe_load(AIRLINE.read_text())
    plain = loaded_with(base, None)
    per_task = {user: loaded_with(base, leakage_block(user, people)) for user in people}

    def without() -> None:
        for t in traces:
            run_checks(plain, t)

    def with_block() -> None:
        for t in traces:
            run_checks(per_task[user_of(t)], t)

    a, b = [], []
    for _ in range(repeat):  # interleaved
        a.append(_best_cpu(without, 1))
        b.append(_best_cpu(with_block, 1))
    print(f"1. run_checks over the 200 airline runs (CPU, best of {repeat}): "
          f"{min(a):.3f} s without the block, {min(b):.3f} s with it: "
          f"{min(b) / min(a):.2f}x")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        trace = d / "big.jsonl"
        write_trace(trace, events)
        s_plain = d / "plain.yaml"
        s_plain.write_text(SCENARIO)
        doc = yaml.safe_load(SCENARIO)
        tenants: list[dict[str, Any]] = [{"owner": f"tenant-{i}", "facts": [
            *({"value": f"ZX-{i}{j:04d}", "aliases": [f"zx account {i}{j:04d}"]}
              for j in range(4)),
            {"value": f"Nobody Person{i}"}, {"pattern": rf"\bQQ{i}-\d{{6}}\b"}]}
            for i in range(8)]
        tenants.append({"owner": "tenant-x", "facts": [{"value": 987654321},
                                                       {"value": "2031-07-19"}]})
        doc["leakage"] = {"other_tenants": tenants}
        s_leak = d / "leak.yaml"
        s_leak.write_text(yaml.safe_dump(doc))
        n = sum(len(o["facts"]) for o in doc["leakage"]["other_tenants"])
        lp, ll = load_scenario(s_plain), load_scenario(s_leak)

        def checks(loaded: LoadedScenario) -> None:
            for stream in streams(trace):
                run_checks(loaded, stream)

        j, p, q = [], [], []
        for _ in range(repeat):
            j.append(time_json_loads(trace)[1])
            p.append(_best_cpu(lambda: checks(lp), 1))
            q.append(_best_cpu(lambda: checks(ll), 1))
        print(f"2. streamed support trace, {events:,} events (CPU, best of {repeat}): "
              f"json.loads {min(j):.2f} s; run_checks {min(p):.2f} s ({min(p) / min(j):.2f}x); "
              f"with {n} listed facts {min(q):.2f} s ({min(q) / min(j):.2f}x json.loads, "
              f"{min(q) / min(p):.2f}x without)")

        airline = d / "airline.jsonl"
        subprocess.run([sys.executable, "-m", "judge.cli.main", "import", "tau-bench", str(TAU),
                        "-o", str(airline)], check=True, capture_output=True)
        everyone = dict(base)
        everyone["leakage"] = {"other_tenants": [
            {"owner": c["user_id"], "facts": [{"value": c["user_id"]}]
             + [{"value": f} for f in facts_of(c, True)]} for _, c in sorted(people.items())]}
        s_all = d / "everyone" / "scenario.yaml"
        s_all.parent.mkdir()
        s_all.write_text(yaml.safe_dump(everyone))
        wall: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(repeat):
            for name, scen in (("without", AIRLINE), ("with", s_all)):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "judge.cli.main", "check", str(scen),
                                str(airline), "--format", "json"], capture_output=True)
                wall[name].append(time.perf_counter() - t0)
        print(f"3. `judge check` on the 200 runs, whole command (wall, best of {repeat}): "
              f"{min(wall['without']):.2f} s without, {min(wall['with']):.2f} s with every "
              f"customer's facts listed ({min(wall['with']) / min(wall['without']):.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["real", "speed", "all"], default="all")
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=27)
    a = ap.parse_args()
    if a.part in ("real", "all"):
        real(a.seed)
    if a.part in ("speed", "all"):
        speed(a.events, a.repeat)


if __name__ == "__main__":
    main()
