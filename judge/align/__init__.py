"""`judge align`: a better judge prompt from the cases where people disagreed with it,
proven on labels it never saw.

The labelled items are split without leaks (judge.align.split), the current version's
disagreements on the train split are clustered (judge.align.mine), a new version is proposed
beside it as a draft — corrected examples (judge.align.examples) and/or rules the judge
model distils (judge.align.guidelines) — (judge.align.candidate), both versions are graded
and probed on the held-out split, and the candidate becomes the default only when the gain's
interval lies above 0 and no probe rate got worse (judge.align.decide). judge.align.run
joins them.
"""

from judge.align.run import AlignOptions as AlignOptions
from judge.align.run import AlignResult as AlignResult
from judge.align.run import align_rubric as align_rubric

__all__ = ["AlignOptions", "AlignResult", "align_rubric"]
