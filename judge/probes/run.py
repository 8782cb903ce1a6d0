"""`judge probe`: grade a rubric's labelled items and their variants through the store's
call cache, compare each variant's verdict with its original's, and store the figures.

The originals and the variants are graded by the normal grading engine
(`judge.grading.engine.grade_items`) with the store's call cache, so a second probe of the
same prompt version and model makes no provider call. The figures (judge.probes.report) are
stored as the summary of the run `probe_run_id(rubric, version, model)` — one per (rubric,
prompt version, model), replaced by each probe — with `config.kind == "probe"`; `judge
calibrate compare` reads them from there. The originals' verdicts are stored (unrouted)
under that run, as `judge calibrate fit` stores its re-graded ones, so `judge calibrate
compare OLD NEW --rubric R` can compare two probed versions. Variant verdicts are not stored
as verdicts (they are not items of any trace: agreement, reports and routing never see
them); the pairs that flipped or missed are kept in the summary for review.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.calibration.regrade import labelled_items
from judge.errors import InputError
from judge.labels import reference_labels
from judge.probes.report import Pair, summarize
from judge.probes.variants import EXPECT, KINDS, Kind, make_variant

if TYPE_CHECKING:
    from judge.formats import Verdict
    from judge.grading.engine import GradingStats
    from judge.grading.jury import Jury
    from judge.items import Item
    from judge.prompts import Prompt
    from judge.providers.base import Provider
    from judge.settings import Settings
    from judge.store import Store

RUN_PREFIX = "probe/"


def probe_run_id(rubric: str, prompt_version: str, model: str) -> str:
    """The run a probe's figures are stored under: one per (rubric, version, model)."""
    return f"{RUN_PREFIX}{rubric}/{prompt_version}/{model}"


@dataclass
class Variants:
    """The variants of a set of labelled items, and how many items each kind skipped."""

    variants: list[tuple[Kind, Item, Item]] = field(default_factory=list)  # kind, orig, var
    skipped: Counter[str] = field(default_factory=Counter)


def make_variants(items: list[Item], refs: dict[str, Any],
                  kinds: tuple[Kind, ...] = KINDS) -> Variants:
    """Every applicable variant of every item; a sensitive kind counts a skip only for an
    item of the human class it changes."""
    out = Variants()
    for item in items:
        ref = refs[item.item_id]
        for kind in kinds:
            if kind in EXPECT and EXPECT[kind][0] != ref.label:
                continue
            var = make_variant(kind, item, human=ref.label, violated_key=ref.violated_key,
                               evidence_event=ref.evidence_event)
            if var is None:
                out.skipped[kind] += 1
            else:
                out.variants.append((kind, item, var))
    return out


@dataclass
class ProbeRun:
    """What `probe_rubric` did: the figures (also stored), every pair, grading stats."""

    report: dict[str, Any]
    pairs: list[Pair]
    stats: GradingStats


def probe_rubric(store: Store, rubric: str, provider: Provider, settings: Settings, *,
                 prompt: Prompt, limit: int | None = None, store_report: bool = True,
                 on_start: Callable[[int], None] | None = None,
                 on_result: Callable[[Verdict], None] | None = None,
                 jury: Jury | None = None,
                 item_ids: Collection[str] | None = None) -> ProbeRun:
    """Probe `rubric`'s labelled items (the first `limit` by item id; only `item_ids` when
    given, as `judge align` probes its held-out split) under `prompt` with `provider`; the
    provider is closed afterwards. InputError when no labelled item is stored."""
    from judge.grading.engine import GradingStats, grade_items
    from judge.grading.jury import close_judges, judge_of

    jury, model = judge_of(provider, jury, rubric)
    found = labelled_items(store, rubric)
    if item_ids is not None:
        wanted = set(item_ids)
        found.items = [it for it in found.items if it.item_id in wanted]
        found.missing = [i for i in found.missing if i in wanted]
    if not found.items:
        extra = f" ({len(found.missing)} labelled items are not stored)" if found.missing else ""
        raise InputError(f"no labelled items of rubric '{rubric}' in the database{extra}",
                         file=store.where, field="rubric")
    refs = reference_labels(found.labels).labels
    items = found.items[:limit] if limit is not None else found.items
    made = make_variants(items, refs)
    originals = {it.item_id: it for it in items}
    to_grade = [*originals.values(), *(v for _k, _o, v in made.variants)]
    stats = GradingStats()
    if on_start is not None:
        on_start(len(to_grade))

    async def grade() -> list[Verdict]:
        try:
            return await grade_items(
                to_grade, prompt, provider, store.calls, params=settings.model_params(),
                concurrency=settings.concurrency, rpm=settings.rpm, retries=settings.retries,
                redaction=settings.redaction(), on_result=on_result, stats=stats, jury=jury)
        finally:
            await close_judges(provider, jury)

    verdicts = asyncio.run(grade())
    label = {v.item_id: v.label for v in verdicts}
    pairs = [Pair(variant_id=v.item_id, original_id=o.item_id, kind=k,
                  human=refs[o.item_id].label, original=label[o.item_id],
                  variant=label[v.item_id]) for k, o, v in made.variants]
    report = {
        "rubric": rubric, "prompt_version": prompt.version, "prompt_hash": prompt.hash,
        "model": model, "run_id": probe_run_id(rubric, prompt.version, model),
        "n_items": len(items), "n_missing_items": len(found.missing), "limit": limit,
        "n_variants": len(made.variants),
        **summarize(pairs, made.skipped),
        "stats": {"provider_calls": stats.provider_calls, "cache_hits": stats.cache_hits,
                  "unscored": stats.unscored},
        "changed": [p.to_dict() for p in pairs if p.outcome in ("flipped", "missed")],
    }
    if store_report:
        run_id = report["run_id"]
        store.save_run(run_id, config={"kind": "probe", "rubric": rubric,
                                       "prompt_version": prompt.version,
                                       "prompt_hash": prompt.hash, "model": model})
        store.save_verdicts([v for v in verdicts if v.item_id in originals], run_id)
        store.finish_run(run_id, status="finished", summary=report)
    return ProbeRun(report=report, pairs=pairs, stats=stats)


def stored_probe(store: Store, rubric: str, prompt_version: str, model: str | None
                 ) -> dict[str, Any] | None:
    """The figures the last `judge probe` of (rubric, version, model) stored, or None."""
    if model is None:
        return None
    run = store.get_run(probe_run_id(rubric, prompt_version, model))
    if run is None or (run.get("config") or {}).get("kind") != "probe":
        return None
    summary = run.get("summary") or None
    return dict(summary) if summary else None
