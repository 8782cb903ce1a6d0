"""`judge align`: a new prompt version from the train split's disagreements, proven on the
held-out split, accepted only when it is shown better.

1. The rubric's labelled items in the database (a pass or fail reference label, item
   stored) are split (judge.align.split): grouped by trace or task, stratified, seeded.
   Too few labels: TooFewLabels, before any provider call.
2. The parent version grades the train items (cache on); its disagreements are clustered
   (judge.align.mine).
3. The proposal: corrected examples (judge.align.examples) and/or rules the judge model
   writes, one call per cluster (judge.align.guidelines), added to the parent's system
   message in a new version file (judge.align.candidate), a draft.
4. The parent and the candidate grade the held-out items (same model, cache on); their
   agreement side by side with the flipped items (judge.calibration.compare), the gain and
   its interval, and `judge probe` of both on the held-out items (judge.probes, not stored
   as the versions' probe figures: they cover the held-out items only).
5. The decision (judge.align.decide); with `accept`, an acceptable candidate becomes the
   default. An accepted version has no calibration record (its hash is new): `judge
   calibrate check` lists it and every verdict of it goes to review until `judge calibrate
   fit` runs on it.

The held-out verdicts of both versions are stored under the run `align/<rubric>/<candidate
version>/<candidate hash>/<model>` (config kind `align`; the report is its summary), so `judge
calibrate compare` can read them. The hash is in the id so that a stored run never mixes
prompts: a version name reused for another text (a deleted draft written again, another
prompts directory) is another run, not more verdicts under the first one's summary.

Each grading phase asks `judges()` for a fresh provider and closes it: the probes run their
own event loop, and an SDK client is bound to the loop it was first used in.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.align.candidate import accept as accept_draft
from judge.align.candidate import inherited_items, prompts_root, propose
from judge.align.decide import decide, held_out_gain, probe_changes
from judge.align.examples import (
    DEFAULT_MAX_EXAMPLES,
    DEFAULT_TOKEN_BUDGET,
    Example,
    choose_examples,
    examples_in,
    examples_section,
)
from judge.align.guidelines import (
    ClusterRequest,
    Rule,
    Rules,
    RulesInvalid,
    cluster_request,
    guidelines_prompt,
    guidelines_section,
    parse_rules,
    reask,
)
from judge.align.mine import Mining, mine
from judge.align.split import (
    DEFAULT_HELD_OUT,
    MIN_PER_CLASS,
    Split,
    TooFewLabels,
    group_of,
    split_items,
)
from judge.calibration.compare import compare_verdicts
from judge.calibration.regrade import labelled_items
from judge.errors import ConfigError, InputError
from judge.labels import reference_labels

if TYPE_CHECKING:
    from judge.formats import Verdict
    from judge.grading.engine import GradingStats
    from judge.grading.jury import Jury
    from judge.items import Item
    from judge.prompts import Prompt
    from judge.providers.base import CallCache, Provider
    from judge.settings import Settings
    from judge.store import Store

METHODS = ("fewshot", "guidelines", "both")
RUN_PREFIX = "align/"
#: (phase description, units) -> a function called once per unit done
Phases = Callable[[str, int], Callable[..., None]]
Judges = Callable[[], "tuple[Provider, Jury | None]"]


def align_run_id(rubric: str, version: str, prompt_hash: str, model: str) -> str:
    """The run of one candidate: its version name alone may name another text later."""
    return f"{RUN_PREFIX}{rubric}/{version}/{prompt_hash}/{model}"


@dataclass
class AlignOptions:
    method: str = "fewshot"
    seed: int = 0
    held_out_share: float = DEFAULT_HELD_OUT
    budget: int = DEFAULT_TOKEN_BUDGET
    max_examples: int = DEFAULT_MAX_EXAMPLES
    min_per_class: int = MIN_PER_CLASS
    accept: bool = False
    n_boot: int = 1000

    def check(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)} "
                              f"(got {self.method!r})")
        if self.budget < 1 or self.max_examples < 1:
            raise ConfigError("--budget and --max-examples must be at least 1")


@dataclass
class Stats:
    """Provider work per phase, summed from the grading engine's stats."""

    phases: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, phase: str, stats: GradingStats | dict[str, int]) -> None:
        d = stats if isinstance(stats, dict) else {
            "items": stats.items, "provider_calls": stats.provider_calls,
            "cache_hits": stats.cache_hits, "unscored": stats.unscored}
        into = self.phases.setdefault(phase, {})
        for k, v in d.items():
            into[k] = into.get(k, 0) + int(v)

    def total(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for d in self.phases.values():
            out.update({k: v for k, v in d.items() if k != "items"})
        return dict(out)


@dataclass
class AlignResult:
    report: dict[str, Any]
    candidate: Prompt | None
    accepted: bool


def _none(_: object = None) -> None:
    return None


def _phase(phases: Phases | None, name: str, n: int) -> Callable[..., None]:
    return phases(name, n) if phases is not None else _none


class _Ticker:
    """A phase whose size is known only when it starts (the probes' on_start)."""

    def __init__(self, phases: Phases | None, name: str) -> None:
        self.phases = phases
        self.name = name
        self._tick: Callable[..., None] = _none

    def start(self, n: int) -> None:
        self._tick = _phase(self.phases, self.name, n)

    def tick(self, *_: object) -> None:
        self._tick()


async def _grade(items: list[Item], prompt: Prompt, provider: Provider, jury: Jury | None,
                 store: Store, settings: Settings, tick: Callable[..., None]
                 ) -> tuple[list[Verdict], GradingStats]:
    from judge.grading.engine import GradingStats, grade_items

    stats = GradingStats()
    verdicts = await grade_items(
        items, prompt, provider, store.calls, params=settings.model_params(),
        concurrency=settings.concurrency, rpm=settings.rpm, retries=settings.retries,
        redaction=settings.redaction(), on_result=tick, stats=stats, jury=jury)
    return verdicts, stats


async def _ask_rules(asked: ClusterRequest, provider: Provider, cache: CallCache,
                     settings: Settings, items: dict[str, Item], prompt_hash: str,
                     counts: Counter[str]) -> Rules:
    """One cluster's rules through the call cache; one re-ask on an invalid reply. A stored
    reply that was invalid is asked again (the old one kept aside, as the engine does)."""
    from judge.grading.keys import KeyMaker, endpoint_of, key_format
    from judge.providers.base import CallRecord, ProviderFailure
    from judge.providers.retry import generate_with_retries

    params = settings.model_params()
    endpoint = endpoint_of(provider)
    keys = KeyMaker(prompt_hash, provider.spec, params, asked.request.schema,
                    asked.request.schema_name, endpoint=endpoint,
                    response_format=key_format(provider))
    redaction = settings.redaction()
    request = asked.request
    problem = "invalid"
    for attempt in (1, 2):
        key = keys.key(request)
        stored = cache.get(key)
        fresh = stored is None or stored.invalid_reason is not None
        if not fresh:
            assert stored is not None
            counts["cache_hits"] += 1
            text = stored.response_text
        else:
            try:
                if provider.remote:
                    resp, tries = await generate_with_retries(provider, request,
                                                              retries=settings.retries)
                else:
                    resp, tries = await provider.generate(request), 1
            except ProviderFailure as exc:
                counts["provider_calls"] += exc.attempts
                return Rules(asked.cluster.id, failure=f"the call failed: {exc}")
            counts["provider_calls"] += tries
            text = resp.text
        try:
            rules: Rules | None = parse_rules(text, asked, items, redaction)
            invalid = None
        except RulesInvalid as exc:
            rules, invalid = None, str(exc)
        if fresh:
            cache.put(CallRecord(
                cache_key=key, item_id=request.item_id, prompt_hash=prompt_hash,
                model=provider.spec, params=params.to_dict(),
                request={"system": request.system, "messages": list(request.messages),
                         "schema_name": request.schema_name, "schema": request.schema,
                         "endpoint": endpoint},
                response_text=text, usage=resp.usage, latency_s=resp.latency_s,
                raw=resp.raw, invalid_reason=invalid,
                replaces_invalid=None if stored is None else "the stored reply was not "
                "valid rules"))
        if rules is not None:
            return rules
        problem = invalid or problem
        if attempt == 1:
            request = reask(asked, text, problem)
    return Rules(asked.cluster.id, failure=f"invalid reply after a re-ask: {problem}")


def _record(parent: Prompt, model: str, options: AlignOptions, split: Split,
            labels: Mapping[str, str], examples: list[Example], rules: list[Rule]
            ) -> dict[str, Any]:
    """The `aligned` front matter record (docs/formats.md, "Aligned prompt versions")."""
    record: dict[str, Any] = {
        "parent": parent.version, "parent_hash": parent.hash, "model": model,
        "method": options.method, "split": split.record(labels),
        "train_items": list(split.train),
    }
    inherited = inherited_items(parent)
    if inherited:
        record["inherited_items"] = inherited
    if options.method in ("fewshot", "both"):
        record["examples"] = [e.item_id for e in examples]
    if options.method in ("guidelines", "both"):
        gp = guidelines_prompt()
        record["guidelines"] = [{"rule": r.rule, "cites": list(r.cites)} for r in rules]
        record["guidelines_prompt"] = {"version": gp.version, "hash": gp.hash}
    return record


PLAN_WIDTH = 0.1


def label_plan_note(store: Store, rubric: str) -> str | None:
    """What `judge labels plan` says of the rubric's stored verdicts (None: it has none to
    plan from): how many more labels, and of which classes, for agreement intervals
    PLAN_WIDTH wide."""
    from judge.calibration.lookup import find_calibration
    from judge.labels.plan import plan_for_rubric

    try:
        plan = plan_for_rubric(store, rubric, target_width=PLAN_WIDTH, limit=0,
                               find_calibration=lambda r, h, m: find_calibration(store, r, h, m))
    except InputError:
        return None
    if plan.n_more == 0:
        return (f"the label plan has no unlabelled judged item of {rubric} to ask for: grade "
                f"more items (judge run, judge grade), then judge labels plan --rubric "
                f"{rubric} --target-width {PLAN_WIDTH} --queue")
    c = plan.per_class
    return (f"judge labels plan --rubric {rubric} --target-width {PLAN_WIDTH} --queue asks "
            f"{plan.n_more} more labels for intervals {PLAN_WIDTH} wide, about "
            f"{c['human_fail']['more']:.0f} human fails and {c['human_pass']['more']:.0f} "
            "human passes among them, and puts them at the front of the review queue")


def align_rubric(store: Store, rubric: str, judges: Judges, settings: Settings, *,
                 parent: Prompt, options: AlignOptions | None = None,
                 phases: Phases | None = None,
                 note: Callable[[str], None] = _none) -> AlignResult:
    """Align `rubric` from `parent` (see the module doc)."""
    from judge.grading.jury import close_judges, judge_of
    from judge.probes.run import probe_rubric

    options = options or AlignOptions()
    options.check()
    prompts_root()  # where the draft goes, before the train items are graded
    found = labelled_items(store, rubric)
    if not found.items:
        extra = f" ({len(found.missing)} labelled items are not stored)" if found.missing else ""
        raise InputError(f"no labelled items of rubric '{rubric}' in the database{extra} "
                         "(label items, or import labels, of judged items)",
                         file=store.where, field="rubric")
    refset = reference_labels(found.labels)
    refs = {i: r for i, r in refset.labels.items() if r.label != "unsure"}
    items = {it.item_id: it for it in found.items}
    labels = {i: refs[i].label for i in items}
    meta = store.trace_metadata({it.trace_id for it in items.values()})
    groups = {i: group_of(it.trace_id, meta.get(it.trace_id)) for i, it in items.items()}
    inherited = inherited_items(parent)  # already in the parent prompt: never held out
    try:
        split = split_items(labels, groups, rubric=rubric, seed=options.seed,
                            held_out_share=options.held_out_share,
                            min_per_class=options.min_per_class,
                            pinned={groups[i] for i in inherited if i in groups})
    except TooFewLabels as exc:
        raise TooFewLabels(rubric, exc.counts, exc.minimum, exc.why,
                           plan=label_plan_note(store, rubric)) from None
    train = [items[i] for i in split.train]
    held = [items[i] for i in split.held_out]
    notes = {i: [lab.note for lab in by.values() if lab.note]
             for i, by in refset.newest.items() if i in items}
    stats = Stats()

    provider, jury = judges()
    grader_jury, model = judge_of(provider, jury, rubric)
    if options.method != "fewshot" and provider.deterministic:
        asyncio.run(close_judges(provider, jury))
        raise ConfigError(f"{provider.display_name} cannot write rules (--method "
                          f"{options.method}): use --method fewshot, or a model (--model)")
    note(f"split {len(found.items)} labelled items of {rubric}: {len(train)} train, "
         f"{len(held)} held out (grouped by {split.grouped_by}, seed {options.seed})")

    async def learn() -> tuple[list[Verdict], Mining, list[Rules]]:
        try:
            tick = _phase(phases, f"grading train items with {parent.version}", len(train))
            verdicts, s = await _grade(train, parent, provider, grader_jury, store, settings,
                                       tick)
            stats.add("train", s)
            mining = mine(train, refs, verdicts, notes)
            asked: list[Rules] = []
            if options.method in ("guidelines", "both") and mining.clusters:
                gp = guidelines_prompt()
                counts: Counter[str] = Counter()
                tick = _phase(phases, "asking for rules, one call per cluster",
                              len(mining.clusters))
                for cluster in mining.clusters:
                    request = cluster_request(
                        cluster, items, rubric=rubric, description=parent.description,
                        prompt=gp, params=settings.model_params(),
                        redaction=settings.redaction(), train=set(split.train),
                        shows=parent.variables)
                    asked.append(await _ask_rules(request, provider, store.calls, settings,
                                                  items, gp.hash, counts))
                    tick()
                stats.add("guidelines", {"calls": len(mining.clusters), **counts})
            return verdicts, mining, asked
        finally:
            await close_judges(provider, jury)

    _train_verdicts, mining, asked = asyncio.run(learn())
    examples: list[Example] = []
    if options.method in ("fewshot", "both"):
        examples = choose_examples(mining.clusters, items, train=set(split.train),
                                   redaction=settings.redaction(), budget=options.budget,
                                   max_examples=options.max_examples, seed=options.seed,
                                   shown=set(inherited),
                                   first=examples_in(parent.system) + 1,
                                   shows=parent.variables)
    rules = [r for got in asked for r in got.rules]
    parts = []
    if examples:
        parts.append(examples_section(examples, intro=examples_in(parent.system) == 0))
    if rules:
        parts.append(guidelines_section(rules, after=parent.system))
    report: dict[str, Any] = {
        "rubric": rubric, "model": model, "method": options.method,
        "parent": {"version": parent.version, "hash": parent.hash, "path": str(parent.path)},
        "labels": {"n_labelled": len(found.items), "n_missing_items": len(found.missing),
                   "pass": Counter(labels.values()).get("pass", 0),
                   "fail": Counter(labels.values()).get("fail", 0),
                   # annotators split evenly: no reference label, so in neither split
                   "n_tied": refset.n_tied},
        "split": split.record(labels),
        "train": mining.to_dict(),
        "proposal": {
            "examples": [e.to_dict() for e in examples],
            "example_tokens": sum(e.tokens for e in examples),
            "token_budget": options.budget if options.method != "guidelines" else None,
            "rules": [r.to_dict() for r in rules],
            "rules_dropped": {g.cluster: g.dropped for g in asked if g.dropped},
            "rule_failures": {g.cluster: g.failure for g in asked if g.failure},
        },
    }
    if not parts:
        why = ("the current version agrees with people on every scored train item"
               if not mining.clusters else "nothing to add: no example fits the token budget"
               if options.method == "fewshot" else "no rule came back from the clusters")
        report.update(candidate=None, held_out=None, probes=None,
                      decision={"accept_asked": options.accept, "acceptable": False,
                                "accepted": False, "default_version": parent.version,
                                "reasons": [f"no candidate: {why}"]},
                      calibration=None, stats={**stats.phases, "total": stats.total()},
                      run_id=None)
        return AlignResult(report, None, False)

    candidate, written = propose(parent, "\n\n".join(parts),
                                 _record(parent, model, options, split, labels, examples,
                                         rules))
    again = "draft " if candidate.is_draft else "version, accepted before, "
    note(("wrote " if written else f"reusing the identical {again}") + str(candidate.path))

    provider, jury = judges()

    async def prove() -> tuple[list[Verdict], list[Verdict]]:
        try:
            sides = []
            for prompt in (parent, candidate):
                tick = _phase(phases, f"grading held-out items with {prompt.version}",
                              len(held))
                verdicts, s = await _grade(held, prompt, provider, grader_jury, store,
                                           settings, tick)
                stats.add(f"held_out_{'parent' if prompt is parent else 'candidate'}", s)
                sides.append(verdicts)
            return sides[0], sides[1]
        finally:
            await close_judges(provider, jury)

    parent_held, cand_held = asyncio.run(prove())
    held_ids = set(split.held_out)
    held_labels = [lab for lab in found.labels if lab.item_id in held_ids]
    compared = compare_verdicts(held_labels, parent_held, cand_held, n_boot=options.n_boot,
                                seed=options.seed)
    gain = held_out_gain(refs, parent_held, cand_held, groups)

    probes: dict[str, Any] = {}
    for side, prompt in (("parent", parent), ("candidate", candidate)):
        provider, jury = judges()
        ticker = _Ticker(phases, f"probing held-out items with {prompt.version}")
        run = probe_rubric(store, rubric, provider, settings, prompt=prompt,
                           store_report=False, jury=jury, item_ids=held_ids,
                           on_start=ticker.start, on_result=ticker.tick)
        probes[side] = {k: run.report[k] for k in (
            "prompt_version", "prompt_hash", "model", "n_items", "n_variants", "invariant",
            "sensitive", "kinds", "changed")}
        stats.add(f"probe_{side}", run.report["stats"])
    rows = probe_changes(probes["parent"], probes["candidate"])
    acceptable, reasons = decide(gain, rows)
    accepted = False
    if options.accept and acceptable:
        if candidate.is_draft:
            candidate = accept_draft(candidate)
        accepted = True
    from judge.prompts.files import load_prompt

    default = load_prompt(rubric)
    from judge.calibration.lookup import find_calibration

    calibrated = find_calibration(store, rubric, candidate.hash, model) is not None
    run_id = align_run_id(rubric, candidate.version, candidate.hash, model)
    report.update(
        candidate={"version": candidate.version, "hash": candidate.hash,
                   "path": str(candidate.path), "written": written,
                   "status": candidate.status or "accepted"},
        held_out={"n_items": len(held),
                  "parent": compared["old"], "candidate": compared["new"],
                  "n_common": compared["n_common"], "n_flipped": compared["n_flipped"],
                  "n_fixed": compared["n_fixed"], "n_broke": compared["n_broke"],
                  "flipped": compared["flipped"], "gain": gain},
        probes={**probes, "rates": rows},
        decision={"accept_asked": options.accept, "acceptable": acceptable,
                  "accepted": accepted, "default_version": default.version,
                  "reasons": reasons},
        calibration={"calibrated": calibrated, "next": (
            f"judge calibrate fit --rubric {rubric} --model {model}"
            if default.hash == candidate.hash and not calibrated else None)},
        stats={**stats.phases, "total": stats.total()},
        run_id=run_id,
    )
    store.save_prompt(parent)
    store.save_prompt(candidate)
    store.save_run(run_id, config={"kind": "align", "rubric": rubric, "model": model,
                                   "parent": parent.version, "parent_hash": parent.hash,
                                   "candidate": candidate.version,
                                   "candidate_hash": candidate.hash,
                                   "method": options.method, "seed": options.seed})
    store.save_run(f"{run_id}/parent", config={"kind": "align-parent", "align_run": run_id,
                                               "rubric": rubric, "model": model,
                                               "prompt_version": parent.version})
    store.save_verdicts(parent_held, f"{run_id}/parent")
    store.finish_run(f"{run_id}/parent", status="finished")
    store.save_verdicts(cand_held, run_id)
    store.finish_run(run_id, status="finished", summary=report)
    return AlignResult(report, candidate, accepted)
