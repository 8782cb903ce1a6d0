"""The grading engine: items in, exactly one verdict per item out, in item order.

For each item: render the request → look it up in the call cache (a hit makes no provider
call) → else (replay-only: unscored) call the provider with retries, backoff and the rate
limit → validate the verdict → store the call (with the validation failure, if any) → an
invalid verdict is re-asked once with the validation error (that call is stored too); still
invalid → unscored with the reason and the raw completion kept. Any failure of one item ends
that item unscored with a reason and never stops the others.

Stored invalid replies. A reply that failed validation is stored (for audit) with the reason,
and is never a final answer on a later run:

- a stored chain is replayed as far as it is stored: a valid first reply is the verdict; an
  invalid one leads to its stored re-ask, and a valid re-ask is the verdict (zero calls);
  a re-ask that was never stored (a run killed between the two calls, a batch reply) is
  asked now, as the same run would have;
- a stored chain that *ended* invalid (its re-ask invalid too) is asked again from the
  start, fresh: the first request goes to the provider again, and its re-ask if needed,
  without reading the cache; the new replies take the keys' places and the old ones stay
  stored aside (`CallRecord.replaces_invalid`). So a rerun against a server that has been
  fixed scores what a broken one left unscored;
- `replay_only` never calls: it replays stored chains, invalid replies included, so a chain
  that ended invalid replays to the same unscored verdict and reason (never a pass or a
  fail), and a chain that stops short is unscored as not in the cache.

The render memo (item digest → the first call's key and reply) is written only for a valid
first reply and re-validated when read: it never leads to an invalid answer.

Structured-output modes. An OpenAI-compatible provider may find, from a server's refusal,
that it must ask in another mode (judge.providers.response_format). The mode is part of the
cache and memo keys (when it is not the provider's own) and of every verdict
(`metadata.response_format`) and stored call (`request.response_format`). Keys are made for
the mode in force when an item is looked up; a reply that came back in a mode found during
its call is stored under the key of that mode, so a rerun, which starts in the remembered
mode, finds it. A refusal (a request the server rejects as malformed) is not retried: the
item is unscored with the server's one-line message.

Durability. With a cache that stores in the background (judge.pipeline.callproc's child,
or judge.grading.writebehind's thread), an item's grading waits until its calls are stored
before it returns: at any moment each worker has at most one call that reached the provider
and is not stored, so a run killed at any point has lost at most `concurrency` calls, and a
resumed run repeats none that was stored.

Concurrency: a fixed pool of `concurrency` workers over the item list, so at most that many
requests are in flight and no per-item task is created; cached items never wait on I/O.
`ItemGrader` grades one item at a time under one prompt; the pipeline (judge.pipeline) runs
its own pool of workers over graders when items arrive while others are being graded.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from judge.formats import Verdict
from judge.grading.cache import RenderMemo
from judge.grading.keys import KeyMaker, MemoMaker, cache_key, endpoint_of, key_format
from judge.grading.tasks import gather_or_cancel
from judge.items import Item
from judge.prompts import Prompt, Redaction, reask, render
from judge.providers.base import (
    CallCache,
    CallRecord,
    JudgeRequest,
    ModelParams,
    Provider,
    ProviderFailure,
    ProviderResponse,
)
from judge.providers.ratelimit import RateLimiter
from judge.providers.retry import generate_with_retries
from judge.verdicts import VerdictInvalid, parse_verdict, unscored
from judge.verdicts.schema import GENERAL, request_enums

if TYPE_CHECKING:
    from judge.grading.jury import Jury, JuryGrader

REPLAY_MISS = "not in cache (replay-only)"


@dataclass
class GradingStats:
    """What one grading run did; filled as it goes (pass one in to read it afterwards)."""

    items: int = 0
    provider_calls: int = 0  # requests that reached the provider (first attempts + retries)
    cache_hits: int = 0
    reasks: int = 0
    asked_again: int = 0  # items whose stored chain had ended invalid, asked again
    unscored: int = 0
    failures: int = 0  # items whose provider call failed for good
    usage: dict[str, int] = field(default_factory=dict)
    # values replaced per class (secret, card, ssn, email, phone, identity) in the requests
    # rendered by this run, never the values; an item served by the render memo is not
    # rendered again, so a rerun counts only what it rendered
    rendered: int = 0
    redactions: dict[str, int] = field(default_factory=dict)
    # juries (judge.grading.jury): juror verdicts asked for, and jury verdicts whose jurors
    # split beyond the jury's min_share
    juror_verdicts: int = 0
    jury_splits: int = 0
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "provider_calls": self.provider_calls,
                "cache_hits": self.cache_hits, "reasks": self.reasks,
                "asked_again": self.asked_again,
                "unscored": self.unscored, "failures": self.failures,
                "usage": dict(self.usage), "rendered": self.rendered,
                "redactions": dict(sorted(self.redactions.items())),
                **({"juror_verdicts": self.juror_verdicts, "jury_splits": self.jury_splits}
                   if self.juror_verdicts else {}),
                "elapsed_s": round(self.elapsed_s, 3)}

    def count_redactions(self, request: JudgeRequest) -> None:
        self.rendered += 1
        for cls, n in request.redactions.items():
            if n:
                self.redactions[cls] = self.redactions.get(cls, 0) + n


class _Miss(Exception):
    """Replay-only and the call is not cached."""


@runtime_checkable
class StoredWaiter(Protocol):
    """Optional cache capability: wait until the call put under a key is stored for good
    (judge.grading.writebehind.WriteBehindCache); a cache without it stores in `put`."""

    async def wait_stored(self, cache_key: str) -> None: ...


class Grader(Protocol):
    """What grades one item: a single judge (ItemGrader) or a jury (judge.grading.jury)."""

    async def grade(self, item: Item, request: JudgeRequest | None = None) -> Verdict: ...


@dataclass
class _Asked:
    """A reply just received from the provider, validated and stored under `key` (another
    key than the one looked up when the structured-output mode changed during the call:
    `rekeyed`)."""

    text: str
    verdict: Verdict | None
    problem: VerdictInvalid | None
    key: str = ""
    rekeyed: bool = False


class ItemGrader:
    """Grades items under one prompt with one provider: render, cache, call, validate,
    re-ask. `grade(item)` always returns a verdict (unscored with a reason on any failure).
    Several graders may share one rate limiter and one stats object.

    `juror=True`: one juror of a jury (judge.grading.jury). Its verdicts are counted as
    juror verdicts, not as items or unscored items, and the requests it is handed are not
    counted as rendered again: the jury counts those once per item. `gate`: held around
    every provider call (retries included), shared by a run's graders so that a jury, which
    asks several calls per item, keeps the run within `concurrency` requests in flight."""

    def __init__(self, prompt: Prompt, provider: Provider, cache: CallCache, *,
                 params: ModelParams, retries: int, limiter: RateLimiter | None = None,
                 replay_only: bool = False, redaction: Redaction | None = None,
                 base_delay: float = 0.5, stats: GradingStats | None = None,
                 juror: bool = False, gate: asyncio.Semaphore | None = None) -> None:
        self.prompt = prompt
        self.provider = provider
        self.cache = cache
        self.params = params
        self.retries = retries
        self.limiter = limiter
        self.replay_only = replay_only
        self.redaction = redaction
        self.base_delay = base_delay
        self.juror = juror
        self.gate = gate
        self.rng = random.Random()  # backoff jitter; one per run (seeding one per call costs)
        self.stats = stats if stats is not None else GradingStats()
        self.spec = provider.spec
        self.endpoint = endpoint_of(provider)
        #: the structured-output mode keys are made for (the provider's, when last looked)
        self.mode = provider.response_format
        self.keys: KeyMaker | None = None
        self.schema: dict[str, Any] = {}
        self.memo: RenderMemo | None = cache if isinstance(cache, RenderMemo) else None
        self.memo_keys = self._memo_maker()
        self.waiter: StoredWaiter | None = cache if isinstance(cache, StoredWaiter) else None
        self.base_meta: dict[str, Any] = {"display_name": provider.display_name}
        self.stamp = {"rubric": prompt.rubric, "prompt_version": prompt.version,
                      "prompt_hash": prompt.hash, "model": provider.spec}

    def _memo_maker(self) -> MemoMaker | None:
        if self.memo is None:
            return None
        return MemoMaker(self.prompt.hash, self.spec, self.params, self.redaction,
                         endpoint=self.endpoint, response_format=key_format(self.provider))

    def _follow_mode(self) -> bool:
        """Keys for the provider's mode now (it changes once at most, when a server's refusal
        finds another); True when it changed. One string comparison per call."""
        mode = self.provider.response_format
        if mode == self.mode:
            return False
        self.mode = mode
        self.keys = None
        self.memo_keys = self._memo_maker()
        return True

    def key_of(self, request: JudgeRequest) -> str:
        self._follow_mode()
        if self.keys is None:  # the prompt's schema comes with the first rendered request
            self.schema = request.schema
            self.keys = KeyMaker(self.prompt.hash, self.spec, self.params, request.schema,
                                 request.schema_name, endpoint=self.endpoint,
                                 response_format=key_format(self.provider))
        elif request.schema is not self.schema and request.schema != self.schema:
            return cache_key(self.prompt.hash, self.spec, self.params, request,
                             endpoint=self.endpoint, response_format=key_format(self.provider))
        return self.keys.key(request)

    def validate(self, text: str, item: Item) -> Verdict:
        """The verdict `text` states about `item`; VerdictInvalid with the reason."""
        return parse_verdict(text, item, self.prompt, self.spec)

    async def ask(self, request: JudgeRequest, key: str, item: Item, *,
                  replaces: str | None = None) -> _Asked:
        """Call the provider (replay-only: _Miss), validate the reply, store the call with
        the validation failure if any, and wait until it is stored."""
        if self.replay_only:
            raise _Miss
        looked_up_in = self.mode  # `key` was made for it (no await since)
        resp = await self._generate(request)
        rekeyed = self.provider.response_format != looked_up_in
        if rekeyed:  # the server's refusal found another mode during this call
            key = self.key_of(request)
        try:
            verdict, problem = self.validate(resp.text, item), None
        except VerdictInvalid as exc:
            verdict, problem = None, exc
        except Exception as exc:  # a validator bug: the call is stored all the same
            await self._store(request, key, resp, f"{type(exc).__name__}: {exc}", replaces)
            raise
        await self._store(request, key, resp, problem.reason if problem else None, replaces)
        return _Asked(resp.text, verdict, problem, key, rekeyed)

    async def _store(self, request: JudgeRequest, key: str, resp: ProviderResponse,
                     invalid: str | None, replaces: str | None) -> None:
        stored: dict[str, Any] = {"system": request.system, "messages": list(request.messages),
                                  "schema_name": request.schema_name, "schema": request.schema,
                                  "endpoint": self.endpoint}
        enums = request_enums(request)
        if enums != GENERAL:  # what the item's own schema allowed (judge.verdicts.schema)
            stored["enums"] = enums.to_dict()
        mode = resp.raw.get("response_format") or self.mode
        if mode:
            stored["response_format"] = mode
        self.cache.put(CallRecord(
            cache_key=key, item_id=request.item_id, prompt_hash=self.prompt.hash,
            model=self.spec, params=self.params.to_dict(), request=stored,
            response_text=resp.text, usage=resp.usage, latency_s=resp.latency_s,
            raw=resp.raw, invalid_reason=invalid, replaces_invalid=replaces,
        ))
        usage = self.stats.usage
        for k, v in resp.usage.items():
            usage[k] = usage.get(k, 0) + v
        if self.waiter is not None:
            await self.waiter.wait_stored(key)

    async def _generate(self, request: JudgeRequest) -> ProviderResponse:
        if self.gate is None:
            return await self._generate_now(request)
        async with self.gate:
            return await self._generate_now(request)

    async def _generate_now(self, request: JudgeRequest) -> ProviderResponse:
        provider = self.provider
        if not provider.remote:  # local providers: no network, no retries, no rate limit
            self.stats.provider_calls += 1
            return await provider.generate(request)
        resp, _ = await generate_with_retries(
            _Counting(provider, self.stats), request, retries=self.retries,
            base_delay=self.base_delay, rng=self.rng, limiter=self.limiter)
        return resp

    async def grade(self, item: Item, request: JudgeRequest | None = None) -> Verdict:
        """The verdict on `item`; `request` is its rendered request when it was rendered
        ahead (the same `render` call), else it is rendered here when needed."""
        if self.juror:
            self.stats.juror_verdicts += 1
        else:
            self.stats.items += 1
        try:
            return await self._grade(item, request)
        except _Miss:
            return self.unscored(item, REPLAY_MISS, None)
        except ProviderFailure as exc:
            self.stats.failures += 1
            what = f"HTTP {exc.status}: " if exc.status and str(exc.status) not in str(exc) else ""
            if exc.refused:  # the same request would get the same answer: not retried
                return self.unscored(item, f"provider refused the request (not retried): "
                                           f"{what}{exc}", None)
            attempts = getattr(exc, "attempts", None)
            tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
            return self.unscored(item, f"provider failed{tries}: {what}{exc}", None)
        except Exception as exc:  # one item's failure never stops the others
            self.stats.failures += 1
            return self.unscored(item, f"grading error: {type(exc).__name__}: {exc}", None)

    async def _grade(self, item: Item, rendered: JudgeRequest | None = None) -> Verdict:
        self._follow_mode()
        if rendered is None and self.memo is not None and self.memo_keys is not None:
            # a rerun: the call made for this very item, found without rendering it (a
            # request rendered ahead is looked up by its cache key, which finds the same call)
            hit = self.memo.get_memo(self.memo_keys.key(item))
            if hit is not None:
                try:
                    verdict = self.validate(hit[1], item)
                except VerdictInvalid:
                    pass  # not a usable answer: take the full path
                else:
                    self.stats.cache_hits += 1
                    return self._finish(item, verdict, {"cached": True})
        request = rendered or render(self.prompt, item, self.params, self.redaction)
        if rendered is None or not self.juror:
            self.stats.count_redactions(request)
        key = self.key_of(request)
        first = self.cache.get(key)
        if first is None:
            return await self._fresh(item, request, key)
        try:
            verdict = self.validate(first.response_text, item)
        except VerdictInvalid as bad:
            return await self._replay_reask(item, request, key, first, bad)
        self.stats.cache_hits += 1
        self._remember(item, key, first.response_text)
        return self._finish(item, verdict, {"cached": True})

    async def _replay_reask(self, item: Item, request: JudgeRequest, key: str,
                            first: CallRecord, bad: VerdictInvalid) -> Verdict:
        """The stored first reply is invalid: its re-ask, from the cache or (never stored)
        from the provider; a stored re-ask that is invalid too ends the stored chain, and the
        item is asked again from the start (replay-only: unscored as it was)."""
        self.stats.reasks += 1
        again = reask(request, first.response_text, bad.reason)
        key2 = self.key_of(again)
        second = self.cache.get(key2)
        if second is None:
            asked = await self.ask(again, key2, item)
            self.stats.cache_hits += 1  # the first reply was served from the cache
            return self._after_reask(item, asked.text, asked.verdict, asked.problem, bad,
                                     cached=False)
        try:
            verdict = self.validate(second.response_text, item)
        except VerdictInvalid as bad2:
            if self.replay_only:
                self.stats.cache_hits += 2
                return self._after_reask(item, second.response_text, None, bad2, bad,
                                         cached=True)
            self.stats.reasks -= 1
            self.stats.asked_again += 1
            why = f"stored replies were invalid: {bad2.reason} (first answer: {bad.reason})"
            return await self._fresh(item, request, key, replaces=why)
        self.stats.cache_hits += 2
        return self._after_reask(item, second.response_text, verdict, None, bad, cached=True)

    async def _fresh(self, item: Item, request: JudgeRequest, key: str, *,
                     replaces: str | None = None) -> Verdict:
        """Ask the provider, and re-ask once if the reply is invalid (no cache reads)."""
        asked = await self.ask(request, key, item, replaces=replaces)
        extra: dict[str, Any] = {"asked_again": True} if replaces else {}
        if asked.verdict is not None:
            # the memo of the mode it was answered in (`ask` follows a mode found meanwhile)
            self._remember(item, asked.key, asked.text)
            return self._finish(item, asked.verdict, {"cached": False, **extra})
        assert asked.problem is not None
        self.stats.reasks += 1
        again = reask(request, asked.text, asked.problem.reason)
        second = await self.ask(again, self.key_of(again), item, replaces=replaces)
        return self._after_reask(item, second.text, second.verdict, second.problem,
                                 asked.problem, cached=False, extra=extra)

    def _after_reask(self, item: Item, text: str, verdict: Verdict | None,
                     problem: VerdictInvalid | None, first: VerdictInvalid, *, cached: bool,
                     extra: dict[str, Any] | None = None) -> Verdict:
        if verdict is None:
            assert problem is not None
            return self.unscored(item, f"invalid verdict after re-ask: {problem.reason} "
                                       f"(first answer: {first.reason})", text)
        return self._finish(item, verdict, {"cached": cached, "reasked": True,
                                            "reask_reason": first.reason, **(extra or {})})

    def _remember(self, item: Item, key: str, text: str) -> None:
        """A valid first reply: the render memo may lead to it (its key is made here, for
        the mode in force, only when there is a memo to write)."""
        if self.memo is not None and self.memo_keys is not None:
            self.memo.put_memo(self.memo_keys.key(item), key, text)

    def _finish(self, item: Item, verdict: Verdict, extra: dict[str, Any]) -> Verdict:
        meta = {**verdict.metadata, **self.base_meta, **extra}
        if self.mode:
            meta["response_format"] = self.mode
        if verdict.violated_key:
            entry = key_entry(item, verdict.violated_key)
            if entry is not None:
                meta["key_class"] = entry.get("class")
                meta["key_sensitivity"] = entry.get("sensitivity")
        update: dict[str, Any] = {k: v for k, v in self.stamp.items()
                                  if getattr(verdict, k) is None}
        update["metadata"] = meta
        return verdict.model_copy(update=update)

    def unscored(self, item: Item, reason: str, raw: str | None = None) -> Verdict:
        """An unscored verdict on `item` with the reason (and the raw completion, if any)."""
        if not self.juror:
            self.stats.unscored += 1
        v = unscored(item, self.prompt, self.spec, reason, raw)
        return self._finish(item, v, {})


class _Counting(Provider):
    """Counts every attempt that reaches the provider (retries included)."""

    def __init__(self, inner: Provider, stats: GradingStats) -> None:
        self.inner = inner
        self.stats = stats
        self.spec = inner.spec
        self.display_name = inner.display_name
        self.remote = inner.remote
        self.endpoint = inner.endpoint

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        self.stats.provider_calls += 1
        try:
            response = await self.inner.generate(request)
        except ProviderFailure as failure:
            self.stats.provider_calls += failure.calls - 1  # requests while finding a mode
            raise
        self.stats.provider_calls += response.calls - 1
        return response


def key_entry(item: Item, key: str) -> dict[str, Any] | None:
    """The ledger entry (any status, else a superseded value) of `key` in the item's snapshot."""
    for status in ("active", "completed", "revoked", "failed", "expired", "superseded"):
        for e in item.ledger.get(status, ()):
            if isinstance(e, dict) and e.get("key") == key:
                return e
    return None


async def grade_items(
    items: Sequence[Item],
    prompt: Prompt,
    provider: Provider,
    cache: CallCache,
    *,
    params: ModelParams,
    concurrency: int,
    rpm: float | None,
    retries: int,
    replay_only: bool = False,
    on_result: Callable[[Verdict], None] | None = None,
    redaction: Redaction | None = None,
    stats: GradingStats | None = None,
    retry_base_delay: float = 0.5,
    jury: Jury | None = None,
) -> list[Verdict]:
    """Grade every item; the result has exactly one verdict per item, in item order.
    `jury`: grade with it (judge.grading.jury) instead of `provider`."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    stats = stats if stats is not None else GradingStats()
    started = time.perf_counter()
    remote = provider.remote or (jury is not None and jury.remote)
    limiter = RateLimiter(rpm) if rpm and remote else None
    run: ItemGrader | JuryGrader
    if jury is not None:
        from judge.grading.jury import JuryGrader

        run = JuryGrader(prompt, jury, cache, params=params, retries=retries, limiter=limiter,
                         replay_only=replay_only, redaction=redaction,
                         base_delay=retry_base_delay, stats=stats,
                         gate=asyncio.Semaphore(concurrency))
    else:
        run = ItemGrader(prompt, provider, cache, params=params, retries=retries,
                         limiter=limiter, replay_only=replay_only, redaction=redaction,
                         base_delay=retry_base_delay, stats=stats)
    results: list[Verdict | None] = [None] * len(items)
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < len(items):
            i = next_index
            next_index += 1
            verdict = await run.grade(items[i])
            results[i] = verdict
            if on_result is not None:
                on_result(verdict)

    n_workers = min(concurrency, len(items)) if remote else min(1, len(items))
    await gather_or_cancel(*(worker() for _ in range(n_workers)))
    stats.elapsed_s += time.perf_counter() - started
    out: list[Verdict] = []
    for i, v in enumerate(results):  # defensive: no item is ever lost
        out.append(v if v is not None else run.unscored(items[i], "not graded"))
    return out


def grade_items_sync(items: Sequence[Item], prompt: Prompt, provider: Provider,
                     cache: CallCache, **kwargs: Any) -> list[Verdict]:
    """`grade_items` from synchronous code: in an event loop of its own, whose end closes
    the judges' connections (an SDK's connections belong to the loop that opened them,
    judge.providers.transport; the providers stay usable, their next call opens new ones)."""
    from judge.grading.jury import close_judges

    async def go() -> list[Verdict]:
        try:
            return await grade_items(items, prompt, provider, cache, **kwargs)
        finally:
            await close_judges(provider, kwargs.get("jury"))

    return asyncio.run(go())
