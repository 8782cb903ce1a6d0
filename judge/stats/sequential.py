"""Deciding a rate against a threshold when the data are looked at again and again: a mixture
sequential probability ratio test (an anytime-valid confidence sequence for a Bernoulli rate).

`judge canary` looks at a rollout's evidence at every stage, and again whenever it held for
want of evidence; how many looks there will be is not known in advance. A fixed-sample bound
checked at every look would promote a candidate at the threshold far more often than alpha
(each look is another chance to cross); an alpha-spending plan needs the looks and their
sample sizes fixed up front, which a pipeline that waits on a hold cannot give. So each
decision is a test whose error is bounded however often and whenever it is run:

For "the rate p is above θ" (promote) the evidence after S successes in n tasks is the
likelihood ratio of p = q against p = θ, averaged over q > θ under a Beta prior centred at θ
(`prior_strength` m pseudo-tasks: Beta(mθ, m(1−θ)) truncated to q > θ):

    E_n = ∫_{q>θ} (q/θ)^S ((1−q)/(1−θ))^(n−S) π(q) dq.

When the true rate is θ or lower, E_n is a nonnegative supermartingale starting at 1, so by
Ville's inequality P(E_n ≥ 1/α at any n) ≤ α: the chance of ever promoting a candidate that is
not above θ is at most α, at every look taken together. "Below θ" (roll back) mirrors it over
q < θ. This is Robbins' mixture SPRT; the mixture (rather than one fixed alternative, as in
Wald's SPRT) means no effect size has to be chosen up front. m only trades early for late
power (benchmarks/README.md, canary); it never affects the guarantee.

The bounds reported beside a decision are the same tests inverted: the lower bound is the
smallest rate that E_n(p) does not reject as "the rate is at most p", so it clears θ exactly
when the promote test passes (and likewise the upper bound for roll back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special
from scipy.optimize import brentq

#: pseudo-tasks of the Beta mixing prior (its spread around θ); see the module docstring
PRIOR_STRENGTH = 20.0
_EPS = 1e-9


def _check(successes: int, n: int, theta: float) -> None:
    if n < 0 or successes < 0 or successes > n:
        raise ValueError("need 0 <= successes <= n")
    if not 0.0 < theta < 1.0:
        raise ValueError("the threshold must lie strictly between 0 and 1")


def log_evidence_above(successes: int, n: int, theta: float,
                       prior_strength: float = PRIOR_STRENGTH) -> float:
    """log E_n: the evidence that the rate is above `theta` after `successes` in `n`."""
    _check(successes, n, theta)
    a, b = prior_strength * theta, prior_strength * (1.0 - theta)
    s, f = successes, n - successes
    tail = special.betaincc(a + s, b + f, theta)  # posterior mass above theta
    if tail <= 0.0:
        return -math.inf
    prior = special.betaincc(a, b, theta)
    return float(special.betaln(a + s, b + f) - special.betaln(a, b) + math.log(tail)
                 - math.log(prior) - s * math.log(theta) - f * math.log1p(-theta))


def log_evidence_below(successes: int, n: int, theta: float,
                       prior_strength: float = PRIOR_STRENGTH) -> float:
    """log E_n for "the rate is below `theta`" (the mirror image of `log_evidence_above`)."""
    _check(successes, n, theta)
    return log_evidence_above(n - successes, n, 1.0 - theta, prior_strength)


@dataclass(frozen=True)
class SequentialBounds:
    """An anytime-valid look at a rate: the evidence each way at the threshold, and bounds."""

    n: int
    successes: int
    theta: float
    alpha: float
    log_above: float  # log evidence that the rate is above theta
    log_below: float
    lower: float  # anytime-valid lower bound (level alpha, one-sided)
    upper: float

    @property
    def needed(self) -> float:
        return math.log(1.0 / self.alpha)

    @property
    def above(self) -> bool:
        """The rate is above θ, with error at most alpha over every look."""
        return self.log_above >= self.needed

    @property
    def below(self) -> bool:
        return self.log_below >= self.needed


def _lower_bound(successes: int, n: int, alpha: float, m: float) -> float:
    """The smallest p whose "rate <= p" the evidence does not reject (0 if it rejects none)."""
    need = math.log(1.0 / alpha)
    if n == 0 or successes == 0:
        return 0.0
    hi = min(1.0 - _EPS, successes / n)
    if log_evidence_above(successes, n, hi, m) >= need:
        return hi
    lo = _EPS
    if log_evidence_above(successes, n, lo, m) < need:
        return 0.0
    return float(brentq(lambda p: log_evidence_above(successes, n, p, m) - need, lo, hi,
                        xtol=1e-10))


def bounds(successes: int, n: int, theta: float, alpha: float = 0.05,
           prior_strength: float = PRIOR_STRENGTH) -> SequentialBounds:
    """The evidence at `theta` and the anytime-valid bounds after `successes` in `n`."""
    _check(successes, n, theta)
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie strictly between 0 and 1")
    lower = _lower_bound(successes, n, alpha, prior_strength)
    upper = 1.0 - _lower_bound(n - successes, n, alpha, prior_strength)
    return SequentialBounds(n, successes, theta, alpha,
                            log_evidence_above(successes, n, theta, prior_strength),
                            log_evidence_below(successes, n, theta, prior_strength),
                            lower, upper)


def tasks_to_decide(successes: int, n: int, theta: float, alpha: float = 0.05, *,
                    rate: float | None = None, prior_strength: float = PRIOR_STRENGTH,
                    limit: int = 10_000_000) -> int | None:
    """The fewest more tasks after which a test would decide, if they succeed at `rate`
    (1.0: every one succeeds; 0.0: every one fails; None: the rate observed so far). The
    promote test when the rate is above θ, the roll-back test when below; None when the
    rate is θ itself or nothing decides within `limit` more tasks."""
    _check(successes, n, theta)
    r = (successes / n if n else None) if rate is None else rate
    if r is None or r == theta:
        return None
    need = math.log(1.0 / alpha)
    test = log_evidence_above if r > theta else log_evidence_below

    def decided(k: int) -> bool:
        s = successes + round(r * k)
        return test(min(s, n + k), n + k, theta, prior_strength) >= need

    if decided(0):
        return 0
    hi = 1
    while not decided(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2  # not decided at lo (or lo == 0), decided at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decided(mid):
            hi = mid
        else:
            lo = mid
    return hi
