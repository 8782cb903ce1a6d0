"""The label budget: interval arithmetic against scipy, the allocation's optimality, a
known-truth simulation (the planned labels reach the width in >= 90% of runs, with fewer labels
than random sampling), and `judge labels plan` over SQLite and PostgreSQL with its queue."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from db_calibration_data import RUBRIC, airline_items, judge_answer, scripted_judge, seed_database
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from judge.calibration.lookup import find_calibration
from judge.calibration.regrade import calibrate_rubric
from judge.cli.main import app
from judge.formats import HumanLabel, Verdict
from judge.labels.plan import PLAN_REASON, FindCalibration, plan_for_rubric, plan_requests
from judge.pipeline.route import route_and_save
from judge.prompts import load_prompt
from judge.providers.scripted import ScriptedProvider
from judge.routing import RoutingPolicy
from judge.settings import Settings
from judge.stats.budget import (
    Target,
    allocate_labels,
    planning_rate,
    required_n_wilson,
    stratified_estimate,
    wilson_interval,
    wilson_width,
)
from judge.store import ReviewRequest, Store, open_store
from judge.testing.budget_sim import trial


# -- statistics ------------------------------------------------------------------------------
@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (47, 50), (50, 50), (412, 600)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    from scipy.stats import binomtest

    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k, n)
    assert float(lo) == pytest.approx(ref.low, abs=1e-9)
    assert float(hi) == pytest.approx(ref.high, abs=1e-9)


@pytest.mark.parametrize(("p", "width"), [(0.5, 0.1), (0.9, 0.1), (0.97, 0.05), (0.7, 0.2)])
def test_required_n_wilson_is_the_smallest_n(p: float, width: float) -> None:
    n = required_n_wilson(p, width)
    assert wilson_width(p, n) <= width < wilson_width(p, n - 1)


def test_required_n_wilson_textbook_value() -> None:
    # at p = 0.5 the Wilson width is the Wald width over sqrt(1 + z^2/n), so n is the Wald
    # n, (2 * 1.96 / 0.1)^2 * 0.25 = 384.1, less z^2 = 3.84: 380.3, rounded up
    assert required_n_wilson(0.5, 0.1) == 381


def test_stratified_estimate_is_the_population_weighted_mean() -> None:
    pop = np.array([100.0, 300.0])
    k = np.array([5.0, 27.0])
    n = np.array([10.0, 30.0])
    est = stratified_estimate(pop, k, n, [0.5, 0.5], prior_strength=0.0)
    assert est.estimate == pytest.approx(0.25 * 0.5 + 0.75 * 0.9)
    var = 0.25**2 * 0.25 * (1 - 10 / 100) / 10 + 0.75**2 * 0.09 * (1 - 30 / 300) / 30
    assert est.se == pytest.approx(math.sqrt(var))
    assert est.width == pytest.approx(2 * 1.959964 * math.sqrt(var), rel=1e-5)


def test_a_stratum_without_labels_leaves_the_estimate_undefined() -> None:
    est = stratified_estimate([10, 10], [3, 0], [4, 0], [0.5, 0.5])
    assert est.estimate is None and math.isinf(est.width)


def test_planning_rate_assumes_the_most_variance_the_labels_allow() -> None:
    rate = planning_rate([2, 0, 45, 3], [2, 2, 50, 6], [0.9, 0.5, 0.9, 0.5], level=0.8)
    mean = (np.array([2, 0, 45, 3]) + 2 * np.array([0.9, 0.5, 0.9, 0.5])) / (
        np.array([2, 2, 50, 6]) + 2)
    assert np.all(np.abs(rate - 0.5) <= np.abs(mean - 0.5) + 1e-12)
    assert rate[3] == 0.5  # 3 of 6: the interval holds 0.5
    from scipy.stats import beta

    # many labels: the interval's lower end (the end nearer 0.5), close to the mean
    assert rate[2] == pytest.approx(beta.ppf(0.1, 45 + 1.8, 5 + 0.2))
    assert 0.8 < rate[2] < mean[2]


def test_allocation_is_neyman_for_one_target() -> None:
    pop = np.array([4000.0, 4000.0, 2000.0])
    rate = np.array([0.99, 0.8, 0.6])
    alloc = allocate_labels(pop, np.zeros(3), rate, [Target("a", list(pop / pop.sum()), 0.05)],
                            min_per_stratum=0)
    assert alloc.reached == {"a": True}
    neyman = pop * np.sqrt(rate * (1 - rate))
    share = alloc.more / alloc.more.sum()
    assert share == pytest.approx(neyman / neyman.sum(), abs=0.02)
    # and it is the least that reaches the width: one label fewer anywhere does not
    for h in range(3):
        fewer = alloc.more.astype(float).copy()
        fewer[h] -= 1
        est = stratified_estimate(pop, rate * fewer, fewer, rate, prior_strength=0.0)
        assert est.width > 0.05 or alloc.more[h] == 0


def test_allocation_stops_at_capacity_and_says_so() -> None:
    alloc = allocate_labels([5, 5], [0, 0], [0.5, 0.5], [Target("a", [0.5, 0.5], 0.01)])
    assert list(alloc.more) == [5, 5]
    assert alloc.reached == {"a": True}  # everything labelled: no sampling error left
    short = allocate_labels([50, 50], [0, 0], [0.5, 0.5], [Target("a", [0.5, 0.5], 0.01)],
                            budget=20)
    assert int(short.more.sum()) == 20 and short.reached == {"a": False}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 400), st.integers(0, 50), st.floats(0.0, 1.0)),
                min_size=1, max_size=8),
       st.floats(0.02, 0.5))
def test_allocation_respects_capacity(strata: list[tuple[int, int, float]],
                                      width: float) -> None:
    pop = np.array([float(p) for p, _, _ in strata])
    have = np.minimum(np.array([float(n) for _, n, _ in strata]), pop)
    rate = np.array([r for _, _, r in strata])
    alloc = allocate_labels(pop, have, rate, [Target("a", list(pop / pop.sum()), width)])
    assert np.all(alloc.more >= 0) and np.all(have + alloc.more <= pop)
    assert len(alloc.order) == int(alloc.more.sum())
    assert np.array_equal(np.bincount(alloc.order, minlength=pop.size), alloc.more)
    if not alloc.reached["a"]:  # only when labels ran out
        assert np.all(have + alloc.more == pop) or alloc.widths["a"] > width


# -- simulation with known truth -----------------------------------------------------------
def test_planned_labels_reach_the_width_with_fewer_labels_than_random_sampling() -> None:
    """20 seeded worlds of 2000 judged items; the start is 40 labels a review queue would
    hold (30 least confident + 10 audits); target width 0.1 for agreement over every item
    and over the items at or above the threshold. benchmarks/label_budget.py runs 200."""
    trials = [trial(seed) for seed in range(20)]
    reached = np.mean([t.reached for t in trials])
    planned = np.median([t.start + t.planned for t in trials])
    same_start = np.median([t.start + t.random_needed for t in trials])
    plain = np.median([t.random_plain for t in trials])
    assert reached >= 0.9, reached
    assert planned < same_start and planned < plain, (planned, same_start, plain)
    # the intervals are honest: both cover the true population agreement in most worlds
    covered = np.mean([all(t.covered.values()) for t in trials])
    assert covered >= 0.8, covered


def test_a_stale_calibration_needs_a_second_plan_and_then_reaches_the_width() -> None:
    """The calibration overstates agreement by 5 points: one plan falls short often (measured
    in benchmarks/README.md: 65% of runs reach the width); labelling half of it and planning
    again from those labels reaches it in >= 90% of runs, still under random sampling."""
    trials = [trial(seed, bias=0.05, replan_at=0.5) for seed in range(20)]
    assert np.mean([t.reached for t in trials]) >= 0.9
    planned = np.median([t.start + t.planned for t in trials])
    assert planned < np.median([t.random_plain for t in trials])


# -- the store and the command ---------------------------------------------------------------
def _verdicts() -> list[Verdict]:
    prompt = load_prompt(RUBRIC)
    return [Verdict(item_id=it.item_id, rubric=RUBRIC, prompt_version=prompt.version,
                    prompt_hash=prompt.hash, model="scripted",
                    **judge_answer(it)) for it in airline_items()]  # type: ignore[arg-type]


@pytest.fixture()
def calibrated(store_url: str) -> str:
    """150 of 298 airline items labelled, a calibration from them, a routed run of all."""
    seed_database(store_url, n_labelled=150)
    with open_store(store_url) as store:
        calibrate_rubric(store, RUBRIC, ScriptedProvider(default=scripted_judge(),
                                                         spec="scripted"), Settings.load(),
                         write_file=False)
        route_and_save(store, _verdicts(), "run-nightly",
                       policy=RoutingPolicy(audit_share=0.1, double_share=0.0))
    return store_url


def _finder(store: Store) -> FindCalibration:
    return lambda rubric, prompt_hash, model: find_calibration(store, rubric, prompt_hash,
                                                               model)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_plan_from_the_store_picks_unlabelled_items_across_strata(calibrated: str) -> None:
    with open_store(calibrated) as store:
        plan = plan_for_rubric(store, RUBRIC, target_width=0.05, find_calibration=_finder(store))
        labelled = {lab.item_id for lab in store.labels_for(rubric=RUBRIC)}
    assert plan.calibrated and plan.n_judged == 298 and plan.n_labelled == 150
    assert plan.n_more == sum(s.more for s in plan.strata) == len(plan.items)
    assert not labelled & {it.item_id for it in plan.items}
    assert len({it.item_id for it in plan.items}) == len(plan.items)
    assert {t.name for t in plan.targets} >= {"agreement"}
    # not queue order: the plan reaches beyond the least confident items
    confs = sorted(it.confidence for it in plan.items)
    assert confs[-1] - confs[0] > 0.1
    by = plan.per_class
    assert by["judge_fail"]["more"] + by["judge_pass"]["more"] == plan.n_more
    assert by["human_fail"]["labelled"] + by["human_pass"]["labelled"] == 150


def test_serve_first_puts_planned_items_at_the_front_in_order(calibrated: str) -> None:
    with open_store(calibrated) as store:
        plan = plan_for_rubric(store, RUBRIC, target_width=0.05, limit=5,
                               find_calibration=_finder(store))
        before = store.queue.entries()
        queued_ids = {e.item_id for e in before}
        n = store.queue.serve_first(plan_requests(plan))
        after = store.queue.entries()
        assert n == 5
        planned = [it.item_id for it in plan.items]
        for flag in (True, False):  # safety-critical items still come first
            seq = [e.item_id for e in after if e.safety_critical is flag]
            mine = [i for i in seq if i in planned]
            assert seq[:len(mine)] == mine == [i for i in planned if i in mine]
        for it in plan.items:
            entry = store.queue.get(it.item_id)
            assert entry is not None
            assert entry.reason == (entry.reason if it.item_id in queued_ids else PLAN_REASON)
        claimed = store.queue.claim("asha")
        assert claimed is not None and claimed.item_id == after[0].item_id
        # done items stay done; an item named twice is refused
        store.add_label(HumanLabel(item_id=plan.items[1].item_id, label="pass",
                                   annotator="bo"))
        assert store.queue.serve_first(plan_requests(plan)) == 4
        with pytest.raises(Exception, match="twice"):
            store.queue.serve_first([ReviewRequest("x#1:r", "r"), ReviewRequest("x#1:r", "r")])


def test_labels_plan_cli_json_and_queue(calibrated: str) -> None:
    code, out, err = run("labels", "plan", "--rubric", RUBRIC, "--target-width", "0.05",
                         "--format", "json", "--limit", "3", "--queue", "--db", calibrated)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["queued"] == 3 and len(doc["items"]) == 3
    assert {"rubric", "target_width", "n_more", "per_class", "targets", "strata", "items",
            "reachable", "notes"} <= set(doc)
    code, out, err = run("labels", "plan", "--rubric", RUBRIC, "--target-width", "0.05",
                         "--db", calibrated)
    assert code == 0, err
    assert "agreement:" in out and "label next" in out


def test_labels_plan_without_verdicts_is_bad_input(store_url: str) -> None:
    code, _, err = run("labels", "plan", "--rubric", "nope", "--target-width", "0.1",
                       "--db", store_url)
    assert code == 2
    assert "no verdicts of rubric 'nope'" in err and "Traceback" not in err


def test_unsure_and_tied_items_are_neither_counted_nor_planned() -> None:
    from judge.labels.plan import make_plan, plan_input

    verdicts = [Verdict(item_id=f"t{i}#1:r", label="pass", confidence=0.5 + i / 40,
                        rubric="r") for i in range(12)]
    labels = [HumanLabel(item_id=f"t{i}#1:r", label="pass", annotator="a") for i in range(3)]
    labels += [HumanLabel(item_id=f"t{i}#1:r", label="unsure", annotator="a") for i in (3, 4)]
    labels += [HumanLabel(item_id="t5#1:r", label="pass", annotator="a"),
               HumanLabel(item_id="t5#1:r", label="fail", violated_key="k", annotator="b")]
    inp = plan_input(verdicts, labels)
    assert list(inp.excluded[:6]) == [False, False, False, True, True, True]
    plan = make_plan(inp, target_width=0.01)  # unreachable: plan every open item
    assert plan.n_labelled == 3 and not plan.reachable
    assert sorted(it.item_id for it in plan.items) == sorted(f"t{i}#1:r" for i in range(6, 12))
    assert any("still leaves agreement wider" in n for n in plan.notes)
