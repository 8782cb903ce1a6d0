"""`judge route`: route a verdicts file with its calibration records; check it against labels.

    judge route VERDICTS [--labels L] [--calibration DIR] [--audit-share 0.05] [--seed 0]
                         [--format text|json] [-o ROUTED.jsonl]

What a run would do with these verdicts (judge.calibration.route_file): which are
auto-accepted (calibrated confidence at or above the record's threshold, but for the seeded
audit share), which go to people and why. With `--labels`, each part's agreement with the
people's labels (the auto-accepted part's is the precision routing gives) and the pass rate
of the judge alone, after review and of the people. `-o` writes the routed verdicts (route,
route_reason, calibrated_confidence set). Exit 0 whatever the split (a measurement, not a
gate); bad input exit 2.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from judge.cli.common import cli_errors
from judge.cli.console import echo, field
from judge.cli.numbers import SEED_MAX, float_option, int_option


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def route(
    verdicts: Path = typer.Argument(..., help="verdicts file (JSONL, formats §3)"),
    labels: Path | None = typer.Option(
        None, "--labels", help="human labels (JSONL) to check the split against"),
    calibration: Path | None = typer.Option(
        None, "--calibration",
        help="calibration records folder (default $JUDGE_CALIBRATION_DIR or calibration/)"),
    audit_share: float = float_option(
        0.05, "--audit-share", lo=0.0, hi=1.0,
        help="share of would-be auto-accepted verdicts sent to people anyway (seeded per item id)"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="audit draw seed"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="also write the routed verdicts here (JSONL)"),
) -> None:
    """Route verdicts with their calibration: what is auto-accepted and what goes to people."""
    with cli_errors():
        from judge.calibration.route_file import route_file
        from judge.labels import write_verdicts
        from judge.outputs import check_output
        from judge.routing import RoutingPolicy

        if output is not None:
            check_output(output)
        routed = route_file(verdicts, labels_path=labels, records_root=calibration,
                            policy=RoutingPolicy(audit_share=audit_share, seed=seed))
        if output is not None:
            write_verdicts(output, routed.verdicts)
        doc = routed.to_dict()
    if fmt is OutputFormat.json:
        echo(json.dumps(doc, allow_nan=False))
    else:
        echo("\n".join(text_lines(doc)))
    if output is not None:
        echo(f"wrote {len(routed.verdicts)} routed verdicts to {field(output)}", err=True)


def _pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def _agreement(m: dict[str, Any] | None) -> str:
    if not m or not m.get("labelled"):
        return "no label"
    lo, hi = m["ci"]
    return (f"{_pct(m['agreement'])} [{_pct(lo)}, {_pct(hi)}] "
            f"({m['agreed']}/{m['labelled']} labelled)")


def text_lines(doc: dict[str, Any]) -> list[str]:
    """The routing split as lines for people (every value from a file shown inert)."""
    n = doc["n_verdicts"]
    out = [f"routed {n} verdict(s) of {field(doc['verdicts'])}"]
    for rec in doc["records"]:
        head = (f"  {field(rec['rubric'])}  prompt {field(rec['prompt_version'])}  model "
                f"{field(rec['model'])} ({rec['n_verdicts']} verdicts): ")
        cal = rec["calibration"]
        if cal is None:
            out.append(head + "no calibration record: every verdict goes to review")
        elif cal["threshold"] is None:
            out.append(head + f"{field(cal['path'])} ({cal['method']}): no threshold reaches "
                       f"agreement {_pct(cal['target'], 0)}: every verdict goes to review")
        else:
            held = cal["held_out_accepted_agreement"]
            out.append(head + f"{field(cal['path'])} ({cal['method']}, threshold "
                       f"{cal['threshold']:.4f} for agreement {_pct(cal['target'], 0)}; "
                       f"held-out auto-accepted agreement {_pct(held)}, lower bound "
                       f"{_pct(cal['held_out_lower_bound'])})")
    labelled = doc["labels"] is not None
    names = {"auto_accept": "auto-accepted", "review": "to review", "veto": "vetoed"}
    for name, label in names.items():
        r = doc["routes"][name]
        if name == "veto" and not r["n"]:
            continue
        line = (f"{label:>14}: {r['n']:5d} ({_pct(r['n'] / n if n else None)})  judge "
                f"pass {r['pass']}, fail {r['fail']}"
                + (f", unscored {r['unscored']}" if r["unscored"] else ""))
        if labelled:
            line += f"; agreement with people {_agreement(r.get('measured'))}"
        out.append(line)
        if name == "review" and r["reasons"]:
            out.append(" " * 16 + "why: " + ", ".join(f"{field(k)} {v}"
                                                       for k, v in r["reasons"].items()))
    rates = doc["pass_rate"]
    parts = [f"judge alone {_pct(rates['judge']['estimate'], 2)} "
             f"({rates['judge']['k']}/{rates['judge']['n']})"]
    if "after_review" in rates:
        ar, people = rates["after_review"], rates["people"]
        parts.append(f"after review {_pct(ar['estimate'], 2)} ({ar['k']}/{ar['n']}: the "
                     "auto-accepted verdicts and the people's labels on the rest"
                     + (f"; {ar['pending']} reviewed without a label left out"
                        if ar["pending"] else "") + ")")
        parts.append(f"people {_pct(people['estimate'], 2)} ({people['k']}/{people['n']} "
                     "labelled)")
    out.append("pass rate: " + "; ".join(parts))
    return out
