"""Robustness probes (`judge probe`): variants as pure functions (properties), grading
through the call cache (a rerun makes no provider call), a simulation with known truth, the
CLI, and the figures in `judge calibrate compare`."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from db_calibration_data import RUBRIC, airline_items, fail_key, human, seed_database
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.cli.main import app
from judge.items import Item
from judge.probes.report import Pair, summarize, wilson_interval
from judge.probes.run import make_variants, probe_rubric, probe_run_id, stored_probe
from judge.probes.variants import (
    INVARIANT_KINDS,
    KINDS,
    fix_violation,
    id_mapping,
    make_variant,
    remove_confirmation,
    rename_ids,
    variant_id,
)
from judge.prompts import load_prompt
from judge.providers.base import JudgeRequest
from judge.providers.heuristic import HeuristicProvider
from judge.providers.scripted import ScriptedProvider
from judge.settings import Settings
from judge.store import open_store


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# -- synthetic items for the properties ----------------------------------------------------

_IDS = st.from_regex(r"[a-z]{2,6}_[0-9]{2,5}|[A-Z]{2}[0-9][A-Z0-9]{2,4}|ord-[0-9]{1,4}",
                     fullmatch=True)
_SCALARS = st.one_of(_IDS, st.integers(-5000, 5000), st.sampled_from(
    ["confirmed", "pending", "ok", "Paid $1200 in full", "2024-05-19", "yes"]),
    st.text(max_size=40))  # any text: hostile bytes are content like any other
_OBJ = st.dictionaries(st.sampled_from(["id", "status", "amount", "note", "ref", "b"]),
                       _SCALARS, min_size=1, max_size=4)


@st.composite
def items(draw: st.DrawFn) -> Item:
    n = draw(st.integers(2, 7))
    seqs = sorted(draw(st.sets(st.integers(0, 40), min_size=n, max_size=n)))
    turn = 3
    events: list[dict[str, Any]] = []
    for seq in seqs[:-1]:
        kind = draw(st.sampled_from(["user", "tool_call", "tool_result", "assistant"]))
        ev: dict[str, Any] = {"seq": seq, "turn": turn, "kind": kind}
        if kind in ("user", "assistant"):
            ev["text"] = draw(st.sampled_from(["yes, go ahead", "please refund ord-7",
                                               "It costs $1500.", "what is the status?"]))
        elif kind == "tool_call":
            ev.update(tool="get_order", args=draw(_OBJ), call_id=f"c{seq}")
        else:
            ev.update(tool="get_order", result=draw(_OBJ), call_id=f"c{seq}")
        events.append(ev)
    target = {"seq": seqs[-1], "turn": turn, "kind": "tool_call", "tool": "refund_order",
              "args": draw(_OBJ), "call_id": "target"}
    events.append(target)
    old, new = draw(_IDS), draw(_IDS)
    ledger = {
        "turn": turn,
        "active": [{"key": "confirmFirst", "value": "confirm before any refund",
                    "class": "constraint", "persistence": "session",
                    "sensitivity": "safety_critical", "source": "user", "since_turn": 0,
                    "status": "active", "aliases": ["confirm"]},
                   {"key": "orderId", "value": new, "class": "mutable_fact",
                    "persistence": "task", "sensitivity": "normal", "source": "user",
                    "since_turn": 1, "status": "active", "aliases": []}],
        "completed": [], "revoked": [], "failed": [], "expired": [],
        "superseded": [{"key": "orderId", "value": old, "superseded_turn": 2}],
        "before_seq": seqs[-1], "through_seq": seqs[-2],
    }
    return Item(item_id=f"t{draw(st.integers(0, 99))}#{seqs[-1]}:scope_fidelity",
                trace_id="t", seq=seqs[-1], turn=turn, rubric="scope_fidelity",
                kind="tool_call", goal=f"Refund the order {new} once.", ledger=ledger,
                events=tuple(events), target=target,
                ledger_keys=frozenset({"confirmFirst", "orderId"}),
                slice_seqs=frozenset(seqs), mutating=True)


def _variants(item: Item) -> list[tuple[str, Item]]:
    out = []
    for kind in KINDS:
        for label in ("pass", "fail"):
            v = make_variant(kind, item, human=label, violated_key="orderId",
                             evidence_event=item.seq)
            if v is not None:
                out.append((kind, v))
    return out


@given(items())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_variants_are_deterministic_and_keep_keys_and_seqs_valid(item: Item) -> None:
    before = _dump(item.to_dict())
    for kind, v in _variants(item):
        again = make_variant(kind, item, human="pass" if kind != "fix_violation" else "fail",
                             violated_key="orderId", evidence_event=item.seq)
        assert again is not None and _dump(again.to_dict()) == _dump(v.to_dict())
        assert v.item_id == variant_id(item.item_id, kind) != item.item_id
        assert v.ledger_keys == item.ledger_keys
        seqs = [int(d["seq"]) for d in v.events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert v.slice_seqs == frozenset(seqs)
        assert v.seq == item.seq and v.target["seq"] == item.seq
        assert v.target == next(d for d in v.events if d["seq"] == v.seq)
        assert {e["key"] for s in ("active", "superseded") for e in v.ledger[s]} == \
            {e["key"] for s in ("active", "superseded") for e in item.ledger[s]}
        if kind in INVARIANT_KINDS:
            assert v.target["tool"] == item.target["tool"]
    assert _dump(item.to_dict()) == before  # the original is never changed


@given(items())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_renaming_is_consistent(item: Item) -> None:
    v = rename_ids(item)
    mapping = id_mapping(item)
    if v is None:
        assert not mapping
        return
    assert mapping and len(set(mapping.values())) == len(mapping)
    assert not set(mapping.values()) & set(mapping)
    inverse = {b: a for a, b in mapping.items()}
    token = re.compile(r"(?<![\w.:/-])(" + "|".join(
        re.escape(x) for x in sorted(inverse, key=len, reverse=True)) + r")(?![\w-])")

    def back(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: back(x) for k, x in value.items()}
        if isinstance(value, list | tuple):
            return [back(x) for x in value]
        if isinstance(value, str):
            return token.sub(lambda m: inverse[m.group(0)], value)
        return value

    restored = back({"goal": v.goal, "ledger": v.ledger, "events": list(v.events)})
    assert _dump(restored) == _dump({"goal": item.goal, "ledger": item.ledger,
                                     "events": list(item.events)})
    text = _dump({"goal": v.goal, "ledger": v.ledger, "events": list(v.events)})
    for old in mapping:
        assert not re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", text)


def _stale_item() -> Item:
    """A refund of an order id the user has since corrected (the ledger's superseded value)."""
    ledger = {
        "turn": 2, "completed": [], "revoked": [], "failed": [], "expired": [],
        "active": [{"key": "orderId", "value": "ord-18", "class": "mutable_fact",
                    "persistence": "task", "sensitivity": "normal", "source": "user",
                    "since_turn": 2, "status": "active", "aliases": []}],
        "superseded": [{"key": "orderId", "value": "ord-17", "superseded_turn": 2}],
        "before_seq": 5, "through_seq": 4,
    }
    events = ({"seq": 4, "turn": 2, "kind": "user", "text": "sorry, it is ord-18"},
              {"seq": 5, "turn": 2, "kind": "tool_call", "tool": "refund_order",
               "args": {"order": "ord-17", "note": "refund ord-17"}, "call_id": "c5"})
    return Item(item_id="t#5:scope_fidelity", trace_id="t", seq=5, turn=2,
                rubric="scope_fidelity", kind="tool_call", goal="Refund the order.",
                ledger=ledger, events=events, target=events[1],
                ledger_keys=frozenset({"orderId"}), slice_seqs=frozenset({4, 5}),
                mutating=True)


def test_fix_violation_puts_the_ledger_value_in_the_argument() -> None:
    item = _stale_item()
    fixed = fix_violation(item, "orderId", item.seq)
    assert fixed is not None
    assert fixed.target["args"] == {"order": "ord-18", "note": "refund ord-18"}
    assert fixed.events[-1] == fixed.target and fixed.events[0] == item.events[0]
    assert fix_violation(item, "orderId", item.seq - 1) is None  # evidence elsewhere
    assert fix_violation(item, "otherKey", item.seq) is None  # nothing it superseded
    assert make_variant("fix_violation", item, human="pass", violated_key="orderId",
                        evidence_event=item.seq) is None  # only a labelled fail


def test_remove_confirmation_drops_every_yes_before_the_write() -> None:
    candidates = [it for it in airline_items() if human(it) == "pass" and it.mutating]
    removed = [(it, remove_confirmation(it)) for it in candidates]
    done = [(it, v) for it, v in removed if v is not None]
    assert done, "some airline write was confirmed in its turn"
    for it, v in done:
        gone = it.slice_seqs - v.slice_seqs
        assert gone and all(d["kind"] == "user" for d in it.events if d["seq"] in gone)
        assert it.seq in v.slice_seqs
        assert remove_confirmation(v) is None  # no affirmative message is left
    assert make_variant("remove_confirmation", done[0][0], human="fail") is None
    read = next(it for it in airline_items() if not it.mutating)
    assert remove_confirmation(read) is None  # not a write


# -- grading through the cache, the report, the CLI ----------------------------------------

@pytest.fixture()
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    seed_database(url)
    return url


def _unit(item_id: str, salt: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{salt}:{item_id}".encode()).digest()[:8],
                          "big") / 2**64


#: the simulated judge's known behaviour: share of variants of a kind it flips
FLIP_SHARE = {"rename_ids": 0.3, "irrelevant_remark": 0.1}
CATCH_SHARE = 0.6  # share of remove_confirmation variants it fails (it passes the rest)


def known_judge(request: JudgeRequest) -> str:
    """Right on every original (the known human rule); flips a known share of two invariant
    kinds and catches a known share of removed confirmations, by a hash of the item id."""
    view = request.view
    assert view is not None and view.target is not None
    truth = human(SimpleNamespace(target=view.target))  # type: ignore[arg-type]
    kind = request.item_id.split("~", 1)[1].split("#", 1)[0] if "~" in request.item_id \
        else None
    label = truth
    if kind in FLIP_SHARE and _unit(request.item_id, "flip") < FLIP_SHARE[kind]:
        label = "pass" if truth == "fail" else "fail"
    if kind == "remove_confirmation":
        label = "fail" if _unit(request.item_id, "catch") < CATCH_SHARE else "pass"
    shown = SimpleNamespace(ledger_keys=view.ledger_keys, target=view.target)
    return json.dumps({"label": label,
                       "violated_key": fail_key(shown) if label == "fail" else None,  # type: ignore[arg-type]
                       "evidence_event": view.seq if label == "fail" else None,
                       "confidence": 0.9, "rationale": "known simulated judge"})


def test_simulated_judge_with_known_flip_share_is_covered_by_the_interval(db: str) -> None:
    provider = ScriptedProvider(default=known_judge, spec="scripted")
    with open_store(db) as store:
        result = probe_rubric(store, RUBRIC, provider, Settings.load(),
                              prompt=load_prompt(RUBRIC))
    kinds = result.report["kinds"]
    for kind, share in FLIP_SHARE.items():
        k = kinds[kind]
        assert k["n"] > 200 and k["ci"][0] <= share <= k["ci"][1], (kind, k)
        assert 0 < k["flipped"] < k["n"]
    for kind in set(INVARIANT_KINDS) - set(FLIP_SHARE):
        assert kinds[kind]["flipped"] == 0
    rc = kinds["remove_confirmation"]
    assert rc["n"] >= 50 and rc["ci"][0] <= CATCH_SHARE <= rc["ci"][1]
    assert rc["n_original_wrong"] == 0
    inv = result.report["invariant"]
    assert inv["flipped"] == sum(kinds[k]["flipped"] for k in INVARIANT_KINDS)
    assert result.stats.provider_calls == len(provider.requests) == \
        result.report["n_items"] + result.report["n_variants"]


def test_wilson_interval_covers_the_truth_at_its_level() -> None:
    rng = np.random.default_rng(7)
    for p, n in ((0.3, 120), (0.05, 300), (0.8, 40)):
        draws = rng.binomial(n, p, size=400)
        covered = 0
        for k in draws:
            pairs = [Pair(f"v{i}", f"o{i}", "rename_ids", "pass", "pass",
                          "fail" if i < k else "pass") for i in range(n)]
            ci = summarize(pairs, {})["kinds"]["rename_ids"]["ci"]
            covered += ci[0] <= p <= ci[1]
        assert 0.91 <= covered / 400 <= 0.99, (p, n, covered)
    assert wilson_interval(0, 0) is None


def test_unscored_and_wrong_originals_are_excluded_not_counted() -> None:
    pairs = [Pair("a", "o", "rename_ids", "pass", "unscored", "fail"),
             Pair("b", "o", "rename_ids", "pass", "pass", "fail"),
             Pair("c", "o", "remove_confirmation", "pass", "fail", "fail"),
             Pair("d", "o", "remove_confirmation", "pass", "pass", "fail"),
             Pair("e", "o", "remove_confirmation", "pass", "pass", "pass")]
    out = summarize(pairs, {"fix_violation": 3})
    r, c = out["kinds"]["rename_ids"], out["kinds"]["remove_confirmation"]
    assert (r["n"], r["flipped"], r["n_excluded"]) == (1, 1, 1)
    assert (c["n"], c["caught"], c["n_original_wrong"]) == (2, 1, 1)
    assert out["kinds"]["fix_violation"]["n_skipped"] == 3
    assert out["sensitive"] == {"caught": 1, "n": 2, "rate": 0.5,
                                "ci": wilson_interval(1, 2)}


def test_a_second_probe_makes_no_provider_call(store_url: str) -> None:
    db = store_url  # SQLite and a throwaway PostgreSQL server
    seed_database(db)
    first = ScriptedProvider(default=known_judge, spec="scripted")
    second = ScriptedProvider(default=known_judge, spec="scripted")
    reports = []
    for provider in (first, second):
        with open_store(db) as store:
            reports.append(probe_rubric(store, RUBRIC, provider, Settings.load(),
                                        prompt=load_prompt(RUBRIC), limit=40))
    assert reports[0].stats.provider_calls > 0 and len(second.requests) == 0
    assert reports[1].stats.provider_calls == 0
    assert reports[1].stats.cache_hits == reports[0].stats.provider_calls
    a, b = (dict(r.report) for r in reports)
    a.pop("stats"), b.pop("stats")
    assert a == b


def test_skips_are_counted_per_kind() -> None:
    its = list(airline_items()[:50])
    refs = {it.item_id: SimpleNamespace(label=human(it), violated_key=fail_key(it),
                                        evidence_event=it.seq) for it in its}
    made = make_variants(its, refs)
    n_fail = sum(human(it) == "fail" for it in its)
    made_kinds = [k for k, _o, _v in made.variants]
    assert made.skipped["fix_violation"] + made_kinds.count("fix_violation") == n_fail
    assert made.skipped["remove_confirmation"] + made_kinds.count("remove_confirmation") == \
        len(its) - n_fail
    for kind in INVARIANT_KINDS:
        assert made.skipped[kind] + made_kinds.count(kind) == len(its)


def test_cli_probe_heuristic_text_json_stored_and_cached(db: str) -> None:
    rc, out, err = run("probe", "--rubric", RUBRIC, "--model", "heuristic", "--db", db,
                       "--limit", "25")
    assert rc == 0, err
    assert "flip rate (must not change)" in out and "rename_ids" in out
    assert re.search(r"probed 25 labelled items and \d+ variants: [1-9]\d* provider calls",
                     err)
    rc, out, err = run("probe", "--rubric", RUBRIC, "--model", "heuristic", "--db", db,
                       "--limit", "25", "--format", "json")
    assert rc == 0, err
    report = json.loads(out)
    assert report["stats"]["provider_calls"] == 0 and report["stats"]["cache_hits"] > 0
    assert set(report["kinds"]) == set(KINDS)
    assert report["run_id"] == probe_run_id(RUBRIC, load_prompt(RUBRIC).version, "heuristic")
    with open_store(db) as store:
        stored = stored_probe(store, RUBRIC, load_prompt(RUBRIC).version, "heuristic")
    assert stored is not None and stored["kinds"] == report["kinds"]


@pytest.mark.parametrize("args", [
    ("--rubric", "no_such_rubric"), ("--rubric", RUBRIC, "--version", "v99"),
    ("--rubric", RUBRIC, "--limit", "0"), ("--rubric", "reply_fidelity"),
])
def test_cli_probe_bad_input_is_one_line_exit_2(db: str, args: tuple[str, ...]) -> None:
    rc, _out, err = run("probe", "--model", "heuristic", "--db", db, *args)
    assert rc == 2 and err.startswith("judge: error: ") and "Traceback" not in err


def test_compare_shows_each_versions_probe_figures(db: str) -> None:
    for version in ("v2", "v3"):
        rc, _o, err = run("probe", "--rubric", RUBRIC, "--version", version, "--model",
                          "heuristic", "--db", db, "--limit", "20")
        assert rc == 0, err
    rc, out, err = run("calibrate", "compare", "v2", "v3", "--rubric", RUBRIC, "--db", db)
    assert rc == 0, err
    result = json.loads(out)
    for key in ("old", "new", "n_common", "n_flipped", "n_fixed", "n_broke", "flipped"):
        assert key in result  # the keys before probes stay
    probes = result["probes"]
    assert probes["old"]["prompt_version"] == "v2" and probes["new"]["prompt_version"] == "v3"
    rename = probes["old"]["kinds"]["rename_ids"]
    assert rename["n"] + rename["n_skipped"] == 20
    rc, text, _e = run("calibrate", "compare", "v2", "v3", "--rubric", RUBRIC, "--db", db,
                       "--format", "text")
    assert rc == 0 and "robustness probes" in text and "remove_confirmation" in text
    with open_store(db) as store:
        store.save_verdicts([v.model_copy(update={"prompt_version": "v1"})
                             for v in store.verdicts_for(RUBRIC, "v2")], "other-run")
    rc, text, _e = run("calibrate", "compare", "v1", "v3", "--rubric", RUBRIC, "--db", db,
                       "--format", "text")
    assert rc == 0 and "not probed" in text


def test_heuristic_catches_the_fixed_stale_values_of_the_examples(tmp_path: Path) -> None:
    """The two example traces that use a superseded value, labelled fail citing its key:
    the heuristic fails both originals, and passes both once the ledger's value is put in."""
    from judge.formats import HumanLabel
    from judge.ledger import load_scenario
    from judge.trace.loader import load_traces

    root = Path(__file__).resolve().parent.parent / "examples/scenarios"
    cases = [("address-change-packed", "fail-stale-address.json", "newAddress"),
             ("browser-correction", "fail-stale-browser.json", "browser")]
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as store:
        for scenario, trace, key in cases:
            loaded = load_scenario(root / scenario)
            for it in extract_scope_items(loaded, load_traces([root / scenario / trace])):
                if any(e["key"] == key for e in it.ledger.get("superseded", [])) \
                        and it.target.get("tool") not in (None, "") and fix_violation(
                            it, key, it.seq) is not None:
                    store.save_items([it])
                    store.add_labels([HumanLabel(item_id=it.item_id, label="fail",
                                                 violated_key=key, evidence_event=it.seq,
                                                 annotator="asha")])
        result = probe_rubric(store, RUBRIC, HeuristicProvider(), Settings.load(),
                              prompt=load_prompt(RUBRIC))
    fv = result.report["kinds"]["fix_violation"]
    assert result.report["n_items"] == 2
    assert (fv["caught"], fv["n"], fv["n_original_wrong"]) == (2, 2, 0)
    assert result.report["invariant"]["flipped"] == 0


def extract_scope_items(loaded: Any, traces: list[Any]) -> list[Item]:
    from judge.items import extract_items

    return [it for tr in traces for it in extract_items(loaded, tr, [RUBRIC])]
