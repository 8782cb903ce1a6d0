"""Whether a candidate version may become the rubric's default, from what the held-out split
showed.

- **The gain**: agreement with the reference labels on the held-out items both versions
  scored, candidate minus parent, with judge.stats.paired's interval (Newcombe's paired
  interval and a cluster-robust one over the split's groups, the wider of each end). Its
  interval must lie wholly above 0.
- **Robustness**: each probe rate (judge probe on the held-out items; pooled per family and
  per variant kind) must not have got worse beyond its interval: the candidate's flip rate
  on invariant variants above the upper end of the parent's 95% Wilson interval, or its
  catch rate on sensitive variants below the lower end of the parent's, is worse. A rate
  either side could not measure (n = 0) is not compared.

Both hold: acceptable. Anything else: the candidate stays a draft, and every reason is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge.formats import Verdict
from judge.labels.reference import ReferenceLabel
from judge.stats.paired import paired_difference


def held_out_gain(refs: Mapping[str, ReferenceLabel], parent: Sequence[Verdict],
                  candidate: Sequence[Verdict], groups: Mapping[str, str], *,
                  confidence: float = 0.95) -> dict[str, Any]:
    """The candidate's agreement gain over the parent on the items both scored."""
    old = {v.item_id: v for v in parent}
    new = {v.item_id: v for v in candidate}
    ids = sorted(i for i in set(old) & set(new) if i in refs)
    both = [i for i in ids if old[i].label != "unscored" and new[i].label != "unscored"]
    if not both:
        return {"n": 0, "n_excluded": len(ids), "estimate": None, "ci": None,
                "ci_newcombe": None, "ci_clustered": None, "fixed": 0, "broke": 0,
                "n_groups": 0, "confidence": confidence,
                "parent_agreement": None, "candidate_agreement": None}
    new_right = [new[i].label == refs[i].label for i in both]
    old_right = [old[i].label == refs[i].label for i in both]
    d = paired_difference(new_right, old_right, [groups[i] for i in both],
                          confidence=confidence)
    return {"n": d.n, "n_excluded": len(ids) - len(both), "estimate": round(d.estimate, 6),
            "ci": list(d.ci), "ci_newcombe": list(d.newcombe),
            "ci_clustered": None if d.clustered is None else list(d.clustered),
            "fixed": d.fixed, "broke": d.broke, "n_groups": d.n_groups,
            "confidence": confidence,
            "parent_agreement": round(sum(old_right) / d.n, 6),
            "candidate_agreement": round(sum(new_right) / d.n, 6)}


def _side(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not entry:
        return None
    return {"rate": entry.get("rate"), "ci": entry.get("ci"), "n": entry.get("n")}


def probe_changes(parent: Mapping[str, Any], candidate: Mapping[str, Any]
                  ) -> list[dict[str, Any]]:
    """Each probe rate of both versions (pooled families, then kinds), marked `worse` when
    the candidate's rate lies beyond the parent's interval on the bad side."""
    rows: list[tuple[str, str | None, Any, Any]] = [
        (family, None, parent.get(family), candidate.get(family))
        for family in ("invariant", "sensitive")]
    kinds = parent.get("kinds") or {}
    for kind, entry in kinds.items():
        rows.append((str(entry.get("family")), kind, entry,
                     (candidate.get("kinds") or {}).get(kind)))
    out: list[dict[str, Any]] = []
    for family, kind, old, new in rows:
        a, b = _side(old), _side(new)
        measured = bool(a and b and a["n"] and b["n"] and a["ci"] is not None
                        and b["rate"] is not None)
        worse = False
        if measured:
            assert a is not None and b is not None
            lo, hi = a["ci"]
            worse = b["rate"] > hi if family == "invariant" else b["rate"] < lo
        out.append({"family": family, "kind": kind,
                    "rate": "flip rate" if family == "invariant" else "catch rate",
                    "parent": a, "candidate": b, "measured": measured, "worse": worse})
    return out


def _rate(row: Mapping[str, Any], side: str) -> str:
    s = row[side]
    return f"{s['rate']:.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}] (n={s['n']})"


def decide(gain: Mapping[str, Any], probes: Sequence[Mapping[str, Any]] | None,
           ) -> tuple[bool, list[str]]:
    """(acceptable, the reasons), from the held-out gain and the probe rows."""
    reasons: list[str] = []
    ok = True
    ci = gain.get("ci")
    if ci is None:
        ok = False
        reasons.append("no held-out item was scored by both versions: nothing shows a gain")
    else:
        lo, hi = ci
        words = (f"held-out agreement gain {gain['estimate']:+.3f}, "
                 f"{gain['confidence']:.0%} interval [{lo:+.3f}, {hi:+.3f}] over "
                 f"{gain['n']} items ({gain['fixed']} fixed, {gain['broke']} broken)")
        if lo > 0:
            reasons.append(f"{words}: lies above 0")
        else:
            ok = False
            reasons.append(f"{words}: {'includes' if hi >= 0 else 'lies below'} 0, so the "
                           "candidate is not shown to agree with people better")
    if probes is None:
        ok = False
        reasons.append("the probes did not run: robustness not shown")
    else:
        worse = [r for r in probes if r["worse"]]
        for r in worse:
            what = r["kind"] or f"every {r['family']} kind"
            better = "lower" if r["family"] == "invariant" else "higher"
            reasons.append(f"{r['rate']} on {what} got worse beyond its interval: parent "
                           f"{_rate(r, 'parent')}, candidate {_rate(r, 'candidate')} "
                           f"({better} is better)")
        if worse:
            ok = False
        else:
            n = sum(r["measured"] for r in probes)
            reasons.append(f"no probe rate got worse beyond its interval ({n} rates compared)")
    return ok, reasons
