"""Diff a trace against a known-good baseline of the same task: presence, argument and
terminal drift, call by call.

- **presence drift**: a baseline call with no partner in the trace (`missing`) or a trace
  call with no partner in the baseline (`extra`), after the alignment of `judge.diff.align`.
  A missing or extra *read-only* call (a lookup) is listed but does not count as drift
  unless `count_lookups` is set: agents may look things up once more or once less.
- **argument drift**: a paired call whose arguments differ under the rules of
  `judge.diff.normalise`; one drift per differing argument path, with both values.
- **terminal drift**: the run ended elsewhere (`judge.diff.terminal`): its last write
  (tool and arguments) differs, a `state_write` key's final value differs, or its final
  reply states other facts (ids, dates, numbers, amounts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from judge.diff.align import align
from judge.diff.calls import Call, ReadOnlyPolicy, calls_of
from judge.diff.normalise import MISSING, diff_values, same
from judge.diff.terminal import ending_of
from judge.trace import Trace

DriftKind = Literal["presence", "argument", "terminal"]
KINDS: tuple[DriftKind, ...] = ("presence", "argument", "terminal")


@dataclass(frozen=True)
class DiffOptions:
    policy: ReadOnlyPolicy = field(default_factory=ReadOnlyPolicy)
    count_lookups: bool = False  # missing/extra read-only calls count as drift


@dataclass(frozen=True)
class Drift:
    """One difference from the baseline. `what`: `missing`/`extra` (presence), `argument`,
    or `last_write`/`final_state`/`final_reply` (terminal). `baseline`/`actual` are the raw
    values (MISSING: that side has none). `counted`: False for a lookup's presence drift
    that `count_lookups` leaves out."""

    kind: DriftKind
    what: str
    message: str
    tool: str | None = None
    baseline_seq: int | None = None
    seq: int | None = None
    path: str | None = None
    baseline: Any = MISSING
    actual: Any = MISSING
    read_only: bool = False
    failed: bool = False  # the call's result reported an error (it changed nothing)
    counted: bool = True

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "what": self.what, "tool": self.tool,
                             "baseline_seq": self.baseline_seq, "seq": self.seq,
                             "path": self.path, "read_only": self.read_only,
                             "failed": self.failed, "counted": self.counted,
                             "message": self.message}
        if self.baseline is not MISSING:
            d["baseline"] = self.baseline
        if self.actual is not MISSING:
            d["actual"] = self.actual
        return d


@dataclass
class TraceDiff:
    baseline_id: str
    trace_id: str
    same_task: bool | None  # same scenario (and metadata task_id); None: nothing to compare
    pairs: list[tuple[int, int, str, bool]]  # (baseline seq, seq, tool, arguments equal)
    drifts: list[Drift]

    @property
    def counts(self) -> dict[str, int]:
        return {k: sum(1 for d in self.drifts if d.kind == k and d.counted) for k in KINDS}

    @property
    def drift(self) -> bool:
        return any(d.counted for d in self.drifts)

    def has(self, kind: str) -> bool:
        return (kind == "drift" and self.drift) or self.counts.get(kind, 0) > 0

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline_id, "trace_id": self.trace_id,
                "same_task": self.same_task, "drift": self.drift, "counts": self.counts,
                "aligned": [{"baseline_seq": b, "seq": s, "tool": t, "args_equal": e}
                            for b, s, t, e in self.pairs],
                "drifts": [d.to_dict() for d in self.drifts]}


def _presence(c: Call, what: str, opts: DiffOptions) -> Drift:
    side = "baseline call missing from the trace" if what == "missing" else \
        "extra call, not in the baseline"
    lookup = " (a read-only lookup)" if c.read_only else ""
    failed = " (its result was an error)" if c.error is not None else ""
    return Drift("presence", what, f"{c.tool} at seq {c.seq}: {side}{lookup}{failed}",
                 tool=c.tool,
                 baseline_seq=c.seq if what == "missing" else None,
                 seq=c.seq if what == "extra" else None,
                 baseline=c.args if what == "missing" else MISSING,
                 actual=c.args if what == "extra" else MISSING,
                 read_only=c.read_only, failed=c.error is not None,
                 counted=not c.read_only or opts.count_lookups)


def _show(v: Any) -> str:
    import json

    return "(absent)" if v is MISSING else json.dumps(v, ensure_ascii=False, default=str)


def diff_traces(baseline: Trace, trace: Trace, opts: DiffOptions | None = None) -> TraceDiff:
    """Every drift of `trace` from `baseline`, in order: presence and argument drift by the
    trace's position (missing calls where the baseline had them), then terminal drift."""
    opts = opts or DiffOptions()
    bcalls, tcalls = calls_of(baseline, opts.policy), calls_of(trace, opts.policy)
    al = align(bcalls, tcalls)
    by_call: list[tuple[int, int, Drift]] = []  # (trace position, baseline position, drift)
    for b, t in al.pairs:
        for vd in diff_values(b.args, t.args):
            path = vd.path or "(arguments)"
            by_call.append((t.index, b.index, Drift(
                "argument", "argument",
                f"{t.tool} at seq {t.seq} (baseline seq {b.seq}): {path} was "
                f"{_show(vd.baseline)}, is {_show(vd.actual)}",
                tool=t.tool, baseline_seq=b.seq, seq=t.seq, path=vd.path, baseline=vd.baseline,
                actual=vd.actual, read_only=t.read_only)))
    partner = {b.index: t.index for b, t in al.pairs}
    for c in al.missing:
        after = max((partner[i] for i in partner if i < c.index), default=-1)
        by_call.append((after, c.index, _presence(c, "missing", opts)))
    for c in al.extra:
        by_call.append((c.index, len(bcalls), _presence(c, "extra", opts)))
    by_call.sort(key=lambda x: (x[0], x[1]))
    drifts = [d for _, _, d in by_call] + _terminal(baseline, trace, bcalls, tcalls)
    same_task = _same_task(baseline, trace)
    return TraceDiff(baseline.trace_id, trace.trace_id, same_task,
                     [(b.seq, t.seq, t.tool, b.key == t.key) for b, t in al.pairs], drifts)


def _same_task(baseline: Trace, trace: Trace) -> bool | None:
    """Same scenario and, when both carry one in their metadata, the same `task_id` (an
    imported benchmark's task: every tau-bench airline trace has scenario tau-airline).
    None when neither test applies."""
    answers: list[bool] = []
    if baseline.scenario and trace.scenario:
        answers.append(baseline.scenario == trace.scenario)
    b_task, t_task = baseline.metadata.get("task_id"), trace.metadata.get("task_id")
    if b_task is not None and t_task is not None:
        answers.append(b_task == t_task)
    return all(answers) if answers else None


def _terminal(baseline: Trace, trace: Trace, bcalls: list[Call], tcalls: list[Call]
              ) -> list[Drift]:
    be, te = ending_of(baseline, bcalls), ending_of(trace, tcalls)
    out: list[Drift] = []
    bw, tw = be.last_write, te.last_write
    if (bw is None) != (tw is None) or (bw is not None and tw is not None and (
            bw.tool != tw.tool or bw.key != tw.key)):
        out.append(Drift(
            "terminal", "last_write",
            f"last write was {bw.label() if bw else '(none)'}, is "
            f"{tw.label() if tw else '(none)'}"
            + (" with other arguments" if bw and tw and bw.tool == tw.tool else ""),
            tool=tw.tool if tw else None, baseline_seq=bw.seq if bw else None,
            seq=tw.seq if tw else None,
            baseline={"tool": bw.tool, "args": bw.args} if bw else MISSING,
            actual={"tool": tw.tool, "args": tw.args} if tw else MISSING))
    for key in sorted(set(be.state) | set(te.state)):
        b, a = be.state.get(key, MISSING), te.state.get(key, MISSING)
        if not same(b, a):
            out.append(Drift("terminal", "final_state",
                             f"state {key} ends as {_show(a)}, baseline {_show(b)}", path=key,
                             baseline_seq=be.state_seq.get(key), seq=te.state_seq.get(key),
                             baseline=b, actual=a))
    if (be.reply is None) != (te.reply is None) or be.facts != te.facts:
        lost, new = sorted(be.facts - te.facts), sorted(te.facts - be.facts)
        parts = ([f"no longer states {', '.join(lost)}"] if lost else []) + (
            [f"now states {', '.join(new)}"] if new else [])
        if te.reply is None:
            parts = ["the trace has no final reply"]
        elif be.reply is None:
            parts = ["the baseline has no final reply"]
        out.append(Drift("terminal", "final_reply", "final reply: " + "; ".join(parts),
                         baseline_seq=be.reply_seq, seq=te.reply_seq,
                         baseline=sorted(be.facts) if be.reply is not None else MISSING,
                         actual=sorted(te.facts) if te.reply is not None else MISSING))
    return out
