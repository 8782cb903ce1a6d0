"""Juries and self-consistency: one item graded by several models, or by k samples of one,
and their verdicts combined into the one verdict the item gets.

A jury is named by a spec that says who sits on it and how its confidence is read:

    jury[vote_share]:openai:gpt-4.1-mini+anthropic:claude-3-5-haiku-latest
    jury[mean]:openai:gpt-4.1-mini*5

Members are model specs joined by `+`; `*k` asks one model k times (samples 1…k-1 are
separate calls with seed + i, so they are distinct calls and cache keys; sample 0 is the
ordinary call, so a jury reuses what a single judge already asked). The spec is the jury
verdict's `model`: calibrations, agreement and drift are kept per jury exactly as per model.

How the verdicts are combined (`combine`, a pure function):

- each juror's verdict is validated as any judge's; an unscored juror does not vote;
- fewer valid votes than a majority of the seats (⌊n/2⌋ + 1) → unscored, with the reason;
- the label is the majority of the votes; a tie is a **fail** (the conservative reading:
  the item goes to a person anyway, see below);
- a fail names the violated key and evidence most fail voters named (ties: the more
  confident voter, then seat order); the rationale is that voter's, prefixed with the count;
- `confidence` is the vote share of the winning label (`vote_share`, the default: how often
  the jurors agree is a confidence signal that can be calibrated like any other), or the
  jurors' mean probability of the winning label (`mean`: a juror's confidence in its own
  label, turned into a probability of the winning one);
- the jury is **split** when the winning share is below `min_share` (default 1.0: any
  dissent), and always on a tie (whatever `min_share`: a tied fail is never auto-accepted)
  and when a `mean` confidence falls below 0.5 (the jurors' probabilities lean against
  their own majority).
  Routing sends a split jury's verdict to review with reason "jury split".

Every juror's verdict is kept in the verdict's `metadata.jury.jurors` (label, key, evidence,
confidence, reason): reports compute each juror's agreement from it (judge.labels.report).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from judge.errors import ConfigError
from judge.formats import Verdict
from judge.formats.jury import juror_verdicts as juror_verdicts
from judge.grading.engine import GradingStats, ItemGrader, key_entry
from judge.items import Item
from judge.prompts import Prompt, Redaction, render
from judge.providers.base import CallCache, JudgeRequest, ModelParams, Provider
from judge.providers.ratelimit import RateLimiter

if TYPE_CHECKING:
    from judge.settings import Settings

Confidence = Literal["vote_share", "mean"]
CONFIDENCES: tuple[Confidence, ...] = ("vote_share", "mean")
MAX_SEATS = 32
_SPEC = re.compile(r"^jury\[(?P<conf>[a-z_]+)\]:(?P<members>.+)$")
_MEMBER = re.compile(r"^(?P<model>[^*+\s]+?)(?:\*(?P<k>\d{1,3}))?$")


@dataclass(frozen=True)
class Juror:
    """One seat: a model spec and the sample it asks for. `id` names it in reports:
    the spec, with `#i` (1-based) when the model sits more than once."""

    id: str
    model: str
    sample: int = 0

    def params(self, base: ModelParams) -> ModelParams:
        """`base` for sample 0; for sample i, seed + i (when there is a seed) and `sample` i,
        so the call and its cache key differ from every other sample's."""
        if self.sample == 0:
            return base
        seed = None if base.seed is None else base.seed + self.sample
        return dataclasses.replace(base, seed=seed, sample=self.sample)


@dataclass(frozen=True)
class JurySpec:
    """Who sits on a jury (`members`: model spec and number of samples, in seat order) and
    how its confidence is read; `min_share`: the least winning vote share that is not a
    split; `rubrics`: the rubrics it grades (empty: every rubric)."""

    members: tuple[tuple[str, int], ...]
    confidence: Confidence = "vote_share"
    min_share: float = 1.0
    rubrics: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.members:
            raise ConfigError("a jury needs at least one member")
        if len(self.members) > MAX_SEATS:  # before anything that grows with the members
            raise ConfigError(f"a jury of {len(self.members)} members is too large (at most "
                              f"{MAX_SEATS} seats)")
        for model, k in self.members:
            # '#' names a seat (`model#i`): a member holding one could take another's name
            if not model or len(model) > 300 or any(c in model for c in "+*[]# \t\n") \
                    or model.startswith("jury"):
                raise ConfigError(f"jury member {_short(model)} is not a model spec")
            if not 1 <= k <= MAX_SEATS:
                raise ConfigError(f"jury member {_short(model)}: samples must be "
                                  f"1..{MAX_SEATS}, got {k}")
        twice = [m for m, n in Counter(m for m, _ in self.members).items() if n > 1]
        if twice:
            raise ConfigError(f"jury member {_short(twice[0])} is named twice; ask one model "
                              f"several times with samples ('<model>*k' or --samples k)")
        if self.seats > MAX_SEATS:
            raise ConfigError(f"a jury of {self.seats} seats is too large (at most {MAX_SEATS})")
        if self.seats < 2:
            raise ConfigError(f"a jury needs at least two seats, and this one has one "
                              f"({_short(self.members[0][0])}): name two models, or ask one "
                              f"several times (--samples 2 or more)")
        if self.confidence not in CONFIDENCES:
            raise ConfigError(f"jury confidence {self.confidence!r}: expected one of "
                              f"{', '.join(CONFIDENCES)}")
        if not 0.5 <= self.min_share <= 1.0:  # NaN fails too
            raise ConfigError(f"jury min_share must be in [0.5, 1], got {self.min_share}")

    @property
    def seats(self) -> int:
        return sum(k for _, k in self.members)

    @property
    def name(self) -> str:
        """The jury's model spec: what its verdicts' `model` says."""
        members = "+".join(m if k == 1 else f"{m}*{k}" for m, k in self.members)
        return f"jury[{self.confidence}]:{members}"

    def jurors(self) -> tuple[Juror, ...]:
        out: list[Juror] = []
        for model, k in self.members:
            if k == 1:
                out.append(Juror(model, model))
            else:
                out.extend(Juror(f"{model}#{i + 1}", model, i) for i in range(k))
        return tuple(out)

    def applies(self, rubric: str) -> bool:
        return not self.rubrics or rubric in self.rubrics

    def needs_temperature(self) -> bool:
        """Whether some model is asked more than once (then temperature 0 makes no sense)."""
        return any(k > 1 for _, k in self.members)

    def to_config(self) -> dict[str, Any]:
        """What a run stores, so a resumed run or a worker grades with the same jury."""
        return {"name": self.name, "min_share": self.min_share,
                "rubrics": sorted(self.rubrics)}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> JurySpec:
        spec = parse_jury(str(config.get("name", "")))
        return dataclasses.replace(spec, min_share=float(config.get("min_share", 1.0)),
                                   rubrics=frozenset(config.get("rubrics") or ()))


def _short(text: str, limit: int = 80) -> str:
    """`text` quoted for a one-line message, cut to `limit` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def is_jury(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith("jury[")


def parse_jury(text: str) -> JurySpec:
    """`jury[<confidence>]:<model>[*k]+<model>[*k]…` → JurySpec; ConfigError naming what is
    wrong."""
    m = _SPEC.match(text.strip()) if len(text) <= 20_000 else None
    if m is None:
        raise ConfigError(f"not a jury spec: {_short(text)} (expected "
                          f"'jury[vote_share|mean]:<model>[*k]+<model>[*k]...')")
    members: list[tuple[str, int]] = []
    for part in m.group("members").split("+"):
        pm = _MEMBER.match(part.strip())
        if pm is None:
            raise ConfigError(f"jury spec {_short(text)}: member {_short(part)} is not "
                              f"<model> or <model>*<k>")
        members.append((pm.group("model"), int(pm.group("k") or 1)))
    conf = m.group("conf")
    if conf not in CONFIDENCES:
        raise ConfigError(f"jury spec {_short(text)}: confidence {_short(conf)} is not one of "
                          f"{', '.join(CONFIDENCES)}")
    return JurySpec(tuple(members), confidence=conf)


def jury_from_settings(settings: Settings, model: str) -> JurySpec | None:
    """The jury the settings ask for (None: one judge). `jury` lists models (the judge model
    `model` is not added unless listed); `samples` asks each member that many times (with no
    `jury`, k samples of `model`)."""
    if not settings.jury and settings.samples <= 1:
        return None
    models = list(settings.jury) or [model]
    if any(is_jury(m) for m in models):
        raise ConfigError("a jury member cannot itself be a jury")
    spec = JurySpec(tuple((m.strip(), settings.samples) for m in models),
                    confidence=settings.jury_confidence, min_share=settings.jury_min_share,
                    rubrics=frozenset(settings.jury_rubrics))
    if spec.needs_temperature() and settings.temperature == 0:
        raise ConfigError(f"{settings.samples} samples of one model at temperature 0 are one "
                          f"answer asked {settings.samples} times; set a temperature above 0 "
                          f"(e.g. --temperature 0.7 or JUDGE_TEMPERATURE)")
    return spec


# ----------------------------------------------------------------------------- combining

def combine(item_id: str, prompt: Prompt, spec: JurySpec, jurors: Sequence[Juror],
            verdicts: Sequence[Verdict]) -> Verdict:
    """The jury's verdict on one item from its jurors' verdicts (in seat order)."""
    if len(jurors) != len(verdicts):
        raise ValueError("one verdict per juror")
    votes = [(j, v) for j, v in zip(jurors, verdicts, strict=True) if v.label != "unscored"]
    fails = [(j, v) for j, v in votes if v.label == "fail"]
    passes = len(votes) - len(fails)
    seats = len(jurors)
    counts = {"pass": passes, "fail": len(fails), "unscored": seats - len(votes)}
    record: dict[str, Any] = {
        "name": spec.name, "confidence": spec.confidence, "min_share": spec.min_share,
        "votes": counts, "jurors": [_juror_record(j, v) for j, v in zip(jurors, verdicts,
                                                                         strict=True)]}
    stamp = {"rubric": prompt.rubric, "prompt_version": prompt.version,
             "prompt_hash": prompt.hash, "model": spec.name}
    quorum = seats // 2 + 1
    if len(votes) < quorum:
        record.update(vote_share=None, split=False)
        reasons = Counter(v.reason for v in verdicts if v.reason)
        # the most common reason (then the first in sorted order): not the first seat's
        common = min(reasons.items(), key=lambda rc: (-rc[1], rc[0]))[0] if reasons else None
        why = f"jury: {len(votes)} of {seats} jurors gave a valid verdict (a majority is " \
              f"{quorum})" + (f"; most common reason: {common}" if common else "")
        return Verdict(item_id=item_id, label="unscored", reason=why, **stamp,
                       metadata={"jury": record})
    label = "fail" if len(fails) >= passes else "pass"
    winners = fails if label == "fail" else [(j, v) for j, v in votes if v.label == "pass"]
    share = len(winners) / len(votes)
    if spec.confidence == "vote_share":
        confidence = share
    else:  # fsum is correctly rounded whatever the order: the seats' order cannot move it
        confidence = math.fsum(_p_label(v, label) for _, v in votes) / len(votes)
    # a tie always splits; so does a `mean` jury whose jurors' confidence leans the other way
    # (the votes and the probabilities disagree: a person decides)
    split = share < spec.min_share or 2 * len(winners) == len(votes) or confidence < 0.5
    record.update(vote_share=round(share, 6), split=split)
    voice = _voice(winners) if label == "fail" else min(winners, key=_standing)
    rationale = f"jury {len(winners)} of {len(votes)} {label}" + (
        f": {voice[1].rationale}" if voice[1].rationale else "")
    return Verdict(item_id=item_id, label=label,
                   violated_key=voice[1].violated_key if label == "fail" else None,
                   evidence_event=voice[1].evidence_event if label == "fail" else None,
                   confidence=min(1.0, max(0.0, confidence)), rationale=rationale, **stamp,
                   metadata={"jury": record})


def _p_label(v: Verdict, label: str) -> float:
    """A juror's probability of `label`: its confidence if it voted so, else one minus it."""
    c = 0.5 if v.confidence is None else v.confidence
    return c if v.label == label else 1.0 - c


def _standing(jv: tuple[Juror, Verdict]) -> tuple[float, bool, int, bool, str, str]:
    """Which of several voters speaks for the jury (the least standing wins): the most
    confident, then a fixed order of what they said (evidence, key, rationale), never their
    seat, so the jury's verdict is a function of the votes alone, not of the seats' order."""
    v = jv[1]
    return (-(v.confidence or 0.0), v.evidence_event is None, v.evidence_event or 0,
            v.violated_key is None, v.violated_key or "", v.rationale or "")


def _voice(fails: list[tuple[Juror, Verdict]]) -> tuple[Juror, Verdict]:
    """The fail voter who speaks for the jury: one naming the (key, evidence) most fail
    voters named; among those the most confident, then by what they said (`_standing`)."""
    named = Counter((v.violated_key, v.evidence_event) for _, v in fails)
    best = max(named.values())
    return min((jv for jv in fails if named[(jv[1].violated_key, jv[1].evidence_event)] == best),
               key=_standing)


def _juror_record(j: Juror, v: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {"juror": j.id, "model": j.model, "sample": j.sample,
                           "label": v.label, "violated_key": v.violated_key,
                           "evidence_event": v.evidence_event, "confidence": v.confidence}
    if v.reason:
        out["reason"] = v.reason
    if v.rationale:
        out["rationale"] = v.rationale[:2000]
    cached = v.metadata.get("cached")
    if cached is not None:
        out["cached"] = bool(cached)
    return out


# ----------------------------------------------------------------------------- grading

@dataclass
class Jury:
    """A jury ready to grade: its spec and one provider per member model."""

    spec: JurySpec
    providers: dict[str, Provider]

    @classmethod
    def build(cls, spec: JurySpec, settings: Settings) -> Jury:
        """One provider per member model (ConfigError before any call if one cannot work)."""
        from judge.providers.registry import make_provider

        return cls.checked(spec, {m: make_provider(m, settings) for m, _ in spec.members})

    @classmethod
    def checked(cls, spec: JurySpec, providers: dict[str, Provider]) -> Jury:
        """A jury over built providers; ConfigError when a deterministic provider (the
        heuristic baseline) is asked more than once: its samples would agree by
        construction, and the jury would report a certainty nobody measured."""
        for model, k in spec.members:
            if k > 1 and providers[model].deterministic:
                raise ConfigError(f"{model} gives the same answer every time: {k} samples of "
                                  f"it would always agree; use samples with a model that "
                                  f"samples, or put it on a jury of other models")
        return cls(spec, providers)

    @property
    def remote(self) -> bool:
        return any(p.remote for p in self.providers.values())

    @property
    def display_name(self) -> str:
        names = [f"{self.providers[m].display_name}" + (f" ×{k}" if k > 1 else "")
                 for m, k in self.spec.members]
        return f"jury of {self.spec.seats} ({', '.join(names)})"

    async def aclose(self) -> None:
        for p in self.providers.values():
            await p.aclose()


def build_judges(settings: Settings, model: str, *, stored: Mapping[str, Any] | None = None,
                 resumed: bool = False) -> tuple[Provider, Jury | None]:
    """The single judge and the jury (None: none) that `model` and the settings ask for.
    `stored`: the jury a resumed run was started with (`JurySpec.to_config`): the run goes
    on with it (its min_share and rubrics too); settings naming other jurors are refused, and
    so is any jury when a `resumed` run had none (it would be graded two ways).

    `model` may itself be a jury spec (`jury[...]:a+b`); then the jury grades every rubric
    it applies to and its first member stands in as the single judge for the others.
    Otherwise the settings' `jury`/`samples` make the jury, and `model` is the single judge
    (and a member, sharing its provider, when the jury names it). ConfigError before any
    call when a spec cannot work."""
    from judge.providers.registry import make_provider

    if is_jury(model):
        parsed = parse_jury(model)
        spec = dataclasses.replace(parsed, min_share=settings.jury_min_share,
                                   rubrics=frozenset(settings.jury_rubrics))
        if settings.jury or settings.samples > 1:
            raise ConfigError("the model is already a jury spec; do not also give "
                              "jury or samples")
        if spec.needs_temperature() and settings.temperature == 0:
            raise ConfigError(f"{model}: samples of one model at temperature 0 are one answer "
                              f"asked again; set a temperature above 0 (e.g. --temperature 0.7)")
        if resumed and not stored:
            raise ConfigError(_NO_JURY_BEFORE)
        spec = _same_as_stored(spec, stored) or spec
        jury = Jury.build(spec, settings)
        return jury.providers[spec.members[0][0]], jury
    provider = make_provider(model, settings)
    spec2 = jury_from_settings(settings, model)
    if spec2 is None and stored:
        spec2 = JurySpec.from_config(stored)
    spec2 = _same_as_stored(spec2, stored)
    if spec2 is None:
        return provider, None
    if resumed and not stored:
        raise ConfigError(_NO_JURY_BEFORE)
    if spec2.needs_temperature() and settings.temperature == 0:
        raise ConfigError(f"{spec2.name}: samples of one model at temperature 0 are one answer "
                          f"asked again; set a temperature above 0 (JUDGE_TEMPERATURE)")
    providers = {m: provider if m == model else make_provider(m, settings)
                 for m, _ in spec2.members}
    return provider, Jury.checked(spec2, providers)


_NO_JURY_BEFORE = ("the run was graded by a single judge; resume it without a jury (no "
                   "--jury, --samples or jury --model), or start a new run")


def _same_as_stored(spec: JurySpec | None, stored: Mapping[str, Any] | None
                    ) -> JurySpec | None:
    """The stored jury when there is one (`spec` must seat the same jurors), else `spec`."""
    if not stored:
        return spec
    was = JurySpec.from_config(stored)
    if spec is not None and spec.name != was.name:
        raise ConfigError(f"the run was graded by {was.name}; resume it with the same jury, "
                          f"not {spec.name}")
    return was


def check_jury_rubrics(jury: Jury | None, rubrics: Sequence[str]) -> None:
    """ConfigError when the jury is limited to rubrics that are not being graded (a typo in
    JUDGE_JURY_RUBRICS would otherwise turn the jury off without a word)."""
    if jury is None or not jury.spec.rubrics:
        return
    unknown = sorted(jury.spec.rubrics - set(rubrics))
    if unknown:
        raise ConfigError(f"jury rubric {_short(unknown[0])} is not one being graded "
                          f"(graded: {', '.join(sorted(rubrics)) or 'none'}); check "
                          f"JUDGE_JURY_RUBRICS / jury_rubrics")


def judge_of(provider: Provider, jury: Jury | None, rubric: str) -> tuple[Jury | None, str]:
    """The jury that grades `rubric` (None: the single judge) and the model its verdicts
    name."""
    if jury is not None and jury.spec.applies(rubric):
        return jury, jury.spec.name
    return None, provider.spec


async def close_judges(provider: Provider, jury: Jury | None) -> None:
    """Close the single judge and every jury provider, each once."""
    seen = {id(provider)}
    await provider.aclose()
    for p in (jury.providers.values() if jury is not None else ()):
        if id(p) not in seen:
            seen.add(id(p))
            await p.aclose()


class JuryGrader:
    """Grades items under one prompt with a jury: the item is rendered once, every juror is
    asked (concurrently, each through its own `ItemGrader`: cache, retries, re-ask), and the
    verdicts are combined. Same interface as ItemGrader.grade. `gate`: the run's bound on
    provider requests in flight (ItemGrader), shared with its other graders."""

    def __init__(self, prompt: Prompt, jury: Jury, cache: CallCache, *, params: ModelParams,
                 retries: int, limiter: RateLimiter | None = None, replay_only: bool = False,
                 redaction: Redaction | None = None, base_delay: float = 0.5,
                 stats: GradingStats | None = None,
                 gate: asyncio.Semaphore | None = None) -> None:
        self.prompt = prompt
        self.spec = jury.spec
        self.params = params
        self.redaction = redaction
        self.stats = stats if stats is not None else GradingStats()
        self.jurors = self.spec.jurors()
        self.graders = [ItemGrader(prompt, jury.providers[j.model], cache,
                                   params=j.params(params), retries=retries, limiter=limiter,
                                   replay_only=replay_only, redaction=redaction,
                                   base_delay=base_delay, stats=self.stats, juror=True,
                                   gate=gate)
                        for j in self.jurors]

    async def grade(self, item: Item, request: JudgeRequest | None = None) -> Verdict:
        self.stats.items += 1
        try:
            if request is None:
                request = render(self.prompt, item, self.params, self.redaction)
            self.stats.count_redactions(request)
        except Exception as exc:  # as a single judge: the item is unscored with the reason
            return self.unscored(item, f"grading error: {type(exc).__name__}: {exc}")
        asks = [g.grade(item, request if j.sample == 0 else
                        dataclasses.replace(request, params=g.params))
                for j, g in zip(self.jurors, self.graders, strict=True)]
        verdicts = await asyncio.gather(*asks)
        verdict = combine(item.item_id, self.prompt, self.spec, self.jurors, verdicts)
        if verdict.label == "unscored":
            self.stats.unscored += 1
        elif verdict.metadata["jury"]["split"]:
            self.stats.jury_splits += 1
        verdict.metadata["cached"] = all(v.metadata.get("cached") for v in verdicts)
        verdict.metadata["display_name"] = f"jury of {self.spec.seats}"
        return _key_meta(item, verdict)

    def unscored(self, item: Item, reason: str) -> Verdict:
        self.stats.unscored += 1
        return Verdict(item_id=item.item_id, label="unscored", reason=reason,
                       rubric=self.prompt.rubric, prompt_version=self.prompt.version,
                       prompt_hash=self.prompt.hash, model=self.spec.name)


def _key_meta(item: Item, verdict: Verdict) -> Verdict:
    """The violated key's class and sensitivity, as a single judge's verdict carries them."""
    if verdict.violated_key:
        entry = key_entry(item, verdict.violated_key)
        if entry is not None:
            verdict.metadata["key_class"] = entry.get("class")
            verdict.metadata["key_sensitivity"] = entry.get("sensitivity")
    return verdict
