"""Align a trace's calls with its baseline's, so drift can be told call by call.

The rule, so a reviewer can follow it: the alignment is a **longest common subsequence by
tool name** — calls pair only with calls of the same tool, in the same relative order, and
as many calls as possible are paired. Among alignments pairing equally many calls, the one
pairing the most calls whose arguments are also equal wins; among those, the earliest pairs.
Unpaired baseline calls are *missing*, unpaired trace calls are *extra*.

So an inserted read-only lookup is one extra call and leaves the pairing of every other call
as it was; a call to another tool in place of the baseline's is one missing and one extra; a
repeated call is one extra.

Cost: O(n·m) time and memory for n baseline and m trace calls (a 1,000-call pair is a
million cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from judge.diff.calls import Call


@dataclass(frozen=True)
class Alignment:
    pairs: list[tuple[Call, Call]]  # (baseline call, trace call), in order
    missing: list[Call]  # baseline calls with no partner
    extra: list[Call]  # trace calls with no partner


def align(baseline: Sequence[Call], trace: Sequence[Call]) -> Alignment:
    n, m = len(baseline), len(trace)
    pair_weight = 2 * (min(n, m) + 1)  # one more pair always beats any number of equal args
    # best[i][j]: the best score aligning baseline[i:] with trace[j:]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = best[i], best[i + 1]
        b = baseline[i]
        for j in range(m - 1, -1, -1):
            score = max(below[j], row[j + 1])
            t = trace[j]
            if b.tool == t.tool:
                score = max(score, below[j + 1] + pair_weight + (b.key == t.key))
            row[j] = score
    pairs: list[tuple[Call, Call]] = []
    missing: list[Call] = []
    extra: list[Call] = []
    i = j = 0
    while i < n and j < m:
        b, t = baseline[i], trace[j]
        if b.tool == t.tool and best[i][j] == best[i + 1][j + 1] + pair_weight + (b.key == t.key):
            pairs.append((b, t))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            missing.append(b)
            i += 1
        else:
            extra.append(t)
            j += 1
    missing.extend(baseline[i:])
    extra.extend(trace[j:])
    return Alignment(pairs, missing, extra)
