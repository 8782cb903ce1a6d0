"""Juries simulated with known truth (issue 14, item 2): items with a true label and a latent
difficulty, k jurors whose chance of being right depends on that difficulty, and who report
overconfident raw confidences; their verdicts are combined by the real
`judge.grading.jury.combine`.

The model. Item i has a true label (fail with probability `fail_share`) and a latent accuracy
p_i = 1 - difficulty_i, the chance that any one juror gets it right:

- independent jurors (`icc` 0): p_i = `accuracy` for every item, and jurors err
  independently;
- correlated jurors (`icc` > 0): p_i ~ Beta(a, b) with mean `accuracy` and a + b = 1/icc - 1,
  so two jurors' errors on one item correlate with intraclass correlation `icc` (hard items
  are hard for every juror, as for real judges that share training data and prompts).

Given p_i, the k jurors are right independently with probability p_i; a wrong juror says the
other label. So the number m of right jurors on an item is Binomial(k, p) (independent) or
Beta-Binomial(k, a, b) (correlated), and everything a jury's vote decides (split, majority
right, vote share) is a function of m: `correct_pmf` gives the known truth exactly.

A juror's raw confidence: it perceives its item's logit(p_i) with noise N(0, `noise`²) and
reports sigmoid(`gain` · perceived + `shift`) rounded to two decimals, as LLM judges do:
overconfident (mostly 0.9-1.0 where it is right 75% of the time) and tied. It knows how hard
the item is, never whether it is right on it. `raw_auroc` gives that confidence's AUROC for
the juror's own correctness by quadrature over p.

Used by tests/test_jury_simulation.py (small, seeded) and benchmarks/jury.py (bigger).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from judge.formats import Verdict
from judge.grading.jury import Confidence, Juror, JurySpec, combine
from judge.prompts.files import Prompt

RUBRIC = "jury_sim"
PROMPT = Prompt(rubric=RUBRIC, version="v1", description="simulated", labels=("pass", "fail"),
                template="", path=Path("jury_sim.md"), hash="sha256:jury-sim")
KEY = "k1"


@dataclass(frozen=True)
class Panel:
    """k jurors and how they err (see the module docstring)."""

    k: int
    accuracy: float = 0.75
    icc: float = 0.0
    fail_share: float = 0.3
    abstain: float = 0.0  # each juror's chance of no valid verdict (it does not vote)
    noise: float = 1.0
    gain: float = 1.5
    shift: float = 1.5

    @property
    def correlated(self) -> bool:
        return self.icc > 0.0

    @property
    def beta(self) -> tuple[float, float]:
        """(a, b) of the Beta law of p_i (correlated jurors only)."""
        total = 1.0 / self.icc - 1.0
        return self.accuracy * total, (1.0 - self.accuracy) * total

    def describe(self) -> str:
        how = f"correlated (icc {self.icc})" if self.correlated else "independent"
        gone = f", {self.abstain:.0%} unscored jurors" if self.abstain else ""
        return f"k={self.k}, {how}, juror accuracy {self.accuracy}{gone}"


# ----------------------------------------------------------------------------- known truth

def correct_pmf(panel: Panel, votes: int | None = None) -> np.ndarray:
    """P(m of `votes` voting jurors right), m = 0..votes (default: all k vote)."""
    v = panel.k if votes is None else votes
    m = np.arange(v + 1)
    if panel.correlated:
        a, b = panel.beta
        return np.asarray(stats.betabinom.pmf(m, v, a, b), dtype=np.float64)
    return np.asarray(stats.binom.pmf(m, v, panel.accuracy), dtype=np.float64)


def vote_law(panel: Panel) -> dict[int, tuple[float, np.ndarray]]:
    """For v = 0..k voting jurors: (P(v vote), P(m right | v vote) for m = 0..v). Who abstains
    is independent of who is right."""
    law = stats.binom.pmf(np.arange(panel.k + 1), panel.k, 1.0 - panel.abstain)
    return {v: (float(law[v]), correct_pmf(panel, v)) for v in range(panel.k + 1)}


def unscored_probability(panel: Panel) -> float:
    """P(fewer than a majority of the seats vote)."""
    quorum = panel.k // 2 + 1
    return float(sum(pv for v, (pv, _) in vote_law(panel).items() if v < quorum))


def split_probability(panel: Panel, min_share: float = 1.0) -> float:
    """P(scored and (winning share < min_share or a tie)); a tie's share is 1/2 and a tie
    always splits. For independent jurors who all vote and min_share 1 this is
    1 - p^k - (1-p)^k."""
    quorum = panel.k // 2 + 1
    total = 0.0
    for v, (pv, pm) in vote_law(panel).items():
        if v >= quorum:
            m = np.arange(v + 1)
            split = (np.maximum(m, v - m) / v < min_share) | (2 * m == v)
            total += pv * float(pm[split].sum())
    return total


def majority_accuracy(panel: Panel) -> float:
    """P(the majority is right) for odd k (every juror voting: no ties)."""
    assert panel.k % 2 == 1 and not panel.abstain
    k = panel.k
    return float(correct_pmf(panel)[np.arange(k + 1) >= k // 2 + 1].sum())


def share_table(panel: Panel) -> dict[float, tuple[float, float]]:
    """For each winning vote share s: (P(share = s and the jury is right),
    P(share = s and the jury is wrong)) (odd k)."""
    assert panel.k % 2 == 1 and not panel.abstain
    k = panel.k
    pmf = correct_pmf(panel)
    out: dict[float, tuple[float, float]] = {}
    for m in range(k + 1):
        s = max(m, k - m) / k
        right, wrong = out.get(s, (0.0, 0.0))
        if m > k - m:
            right += float(pmf[m])
        else:
            wrong += float(pmf[m])
        out[s] = (right, wrong)
    return out


def _auroc_discrete(right: np.ndarray, wrong: np.ndarray) -> float:
    """AUROC of a score with P(score = v_i | right) ∝ right[i], P(... | wrong) ∝ wrong[i] over
    ascending values v_i: P(score_right > score_wrong) + P(tie) / 2."""
    r = right / right.sum()
    w = wrong / wrong.sum()
    below = np.concatenate(([0.0], np.cumsum(w)[:-1]))
    return float(np.sum(r * (below + 0.5 * w)))


def vote_share_auroc(panel: Panel) -> float:
    """The vote share's AUROC for the jury being right, exactly (odd k)."""
    table = share_table(panel)
    shares = sorted(table)
    return _auroc_discrete(np.array([table[s][0] for s in shares]),
                           np.array([table[s][1] for s in shares]))


def vote_share_ece(panel: Panel) -> float:
    """The raw vote share's population ECE (10 uniform bins, as judge's metrics): each share
    of an odd jury of 3 or 5 falls in its own bin."""
    return float(sum(abs(r - s * (r + w)) for s, (r, w) in share_table(panel).items()))


def group_table(panel: Panel) -> dict[tuple[bool, float], tuple[float, float]]:
    """For each (jury says fail, winning share): (P(that group and the jury is right),
    P(that group and the jury is wrong)). The jury says fail when the truth is fail and its
    majority is right, or the truth is pass and its majority is wrong."""
    f = panel.fail_share
    out: dict[tuple[bool, float], tuple[float, float]] = {}
    for s, (r, w) in share_table(panel).items():
        out[(True, s)] = (f * r, (1.0 - f) * w)
        out[(False, s)] = ((1.0 - f) * r, f * w)
    return out


def p_right_given_group(panel: Panel) -> dict[tuple[bool, float], float]:
    """P(the jury is right | its label and winning share): what a calibrator by label (or
    pooled, at fail share 0.5) should learn."""
    return {g: r / (r + w) for g, (r, w) in group_table(panel).items()}


def _p_grid(panel: Panel, points: int = 4000) -> np.ndarray:
    if not panel.correlated:
        return np.array([panel.accuracy])
    a, b = panel.beta
    q = (np.arange(points) + 0.5) / points
    return np.asarray(stats.beta.ppf(q, a, b), dtype=np.float64)


def raw_auroc(panel: Panel) -> float:
    """One juror's raw confidence's AUROC for its own correctness (quadrature over p; the
    two-decimal rounding's ties counted half, as roc_auc_score does)."""
    p = np.clip(_p_grid(panel), 1e-9, 1.0 - 1e-9)
    v = np.arange(101) / 100.0
    lo = np.clip(v - 0.005, 0.0, 1.0)
    hi = np.clip(v + 0.005, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        # reported c rounds to v when sigmoid(gain * s + shift) is in [lo, hi)
        s_lo = (np.log(lo) - np.log1p(-lo) - panel.shift) / panel.gain
        s_hi = (np.log(hi) - np.log1p(-hi) - panel.shift) / panel.gain
    mu = np.log(p) - np.log1p(-p)
    cdf_hi = stats.norm.cdf((s_hi[None, :] - mu[:, None]) / panel.noise)
    cdf_lo = stats.norm.cdf((s_lo[None, :] - mu[:, None]) / panel.noise)
    given_p = cdf_hi - cdf_lo  # P(c = v | p), rows sum to 1
    right = (p[:, None] * given_p).sum(axis=0)
    wrong = ((1.0 - p)[:, None] * given_p).sum(axis=0)
    return _auroc_discrete(right, wrong)


# ----------------------------------------------------------------------------- simulation

@dataclass
class Run:
    """One simulated batch: per item the truth, each juror's correctness and raw confidence,
    and the jury's verdict from `combine`."""

    truth_fail: np.ndarray  # (n,) bool
    juror_right: np.ndarray  # (n, k) bool
    juror_conf: np.ndarray  # (n, k) raw confidence, two decimals; NaN: no valid verdict
    verdicts: list[Verdict]
    jury_fail: np.ndarray = field(init=False)
    jury_right: np.ndarray = field(init=False)
    confidence: np.ndarray = field(init=False)  # the jury verdict's (NaN: unscored)
    split: np.ndarray = field(init=False)
    unscored: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.jury_fail = np.array([v.label == "fail" for v in self.verdicts])
        self.jury_right = self.jury_fail == self.truth_fail  # for scored verdicts
        self.confidence = np.array([np.nan if v.confidence is None else v.confidence
                                    for v in self.verdicts], dtype=np.float64)
        self.split = np.array([v.metadata["jury"]["split"] for v in self.verdicts])
        self.unscored = np.array([v.label == "unscored" for v in self.verdicts])


class JurorVerdicts:
    """Juror verdicts by (label, confidence): combine only reads them, so one object serves
    every item that has that label and confidence (the item id is the combined verdict's)."""

    def __init__(self) -> None:
        self._made: dict[tuple[bool, float], Verdict] = {}
        self._unscored = Verdict(item_id=f"juror#1:{RUBRIC}", label="unscored",
                                 reason="no valid verdict", rubric=RUBRIC, model="sim")

    def get(self, fail: bool, conf: float) -> Verdict:
        if math.isnan(conf):
            return self._unscored
        key = (fail, conf)
        v = self._made.get(key)
        if v is None:
            v = Verdict(item_id=f"juror#1:{RUBRIC}", label="fail" if fail else "pass",
                        violated_key=KEY if fail else None, evidence_event=1 if fail else None,
                        confidence=conf, rubric=RUBRIC, model="sim")
            self._made[key] = v
        return v


def spec_for(panel: Panel, min_share: float = 1.0,
             confidence: Confidence = "vote_share") -> JurySpec:
    return JurySpec((("sim", panel.k),), confidence=confidence, min_share=min_share)


def draw(panel: Panel, n: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truth_fail, juror_right, juror_conf) for n items; a juror with no valid verdict has
    NaN for its confidence."""
    truth_fail = rng.random(n) < panel.fail_share
    if panel.correlated:
        a, b = panel.beta
        p = rng.beta(a, b, size=n)
    else:
        p = np.full(n, panel.accuracy)
    right = rng.random((n, panel.k)) < p[:, None]
    pc = np.clip(p, 1e-9, 1.0 - 1e-9)
    perceived = (np.log(pc) - np.log1p(-pc))[:, None] + rng.normal(0.0, panel.noise,
                                                                   (n, panel.k))
    conf = np.round(1.0 / (1.0 + np.exp(-(panel.gain * perceived + panel.shift))), 2)
    if panel.abstain:
        conf[rng.random((n, panel.k)) < panel.abstain] = np.nan
    return truth_fail, right, conf


def judge_items(drawn: tuple[np.ndarray, np.ndarray, np.ndarray], spec: JurySpec,
                jurors_cache: JurorVerdicts | None = None) -> Run:
    """The jury's verdict on each drawn item, from `combine`."""
    truth_fail, right, conf = drawn
    jurors: tuple[Juror, ...] = spec.jurors()
    cache = jurors_cache or JurorVerdicts()
    said_fail = np.where(right, truth_fail[:, None], ~truth_fail[:, None])
    verdicts = [combine(f"t{i}#1:{RUBRIC}", PROMPT, spec, jurors,
                        [cache.get(bool(f), float(c)) for f, c in zip(said_fail[i], conf[i],
                                                                       strict=True)])
                for i in range(truth_fail.size)]
    return Run(truth_fail, right, conf, verdicts)


def simulate(panel: Panel, n: int, rng: np.random.Generator,
             spec: JurySpec | None = None) -> Run:
    return judge_items(draw(panel, n, rng), spec or spec_for(panel))
