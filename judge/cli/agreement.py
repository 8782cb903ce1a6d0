"""`judge agreement`: how well a judge agrees with human labels (formats §5).

    judge agreement --labels L --verdicts V [--format json|text] [--seed N] [--n-boot N]
    judge agreement --rubric R [--prompt-version V] [--model M] [--db URL] [...]

File mode needs no database. Database mode reads the newest stored verdict per item of the
rubric (optionally one prompt version / model) and the stored label history of those items
(judge.labels.sources: the same inputs as `judge report agreement`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from judge.cli.common import cli_errors, die
from judge.cli.console import console
from judge.cli.numbers import SEED_MAX, int_option
from judge.labels.report import agreement_report
from judge.labels.sources import LabelledVerdicts, from_files, from_store


class OutputFormat(StrEnum):
    json = "json"
    text = "text"


def agreement(
    labels: Path | None = typer.Option(None, "--labels", help="human labels (JSONL)"),
    verdicts: Path | None = typer.Option(None, "--verdicts", help="verdicts (JSONL)"),
    rubric: str | None = typer.Option(None, "--rubric", help="database mode: this rubric"),
    prompt_version: str | None = typer.Option(None, "--prompt-version",
                                              help="database mode: only this prompt version"),
    model: str | None = typer.Option(None, "--model", help="database mode: only this model"),
    db: str | None = typer.Option(None, "--db", help="database URL (default JUDGE_DATABASE_URL "
                                                    "or ./judge.db)"),
    fmt: OutputFormat = typer.Option(OutputFormat.json, "--format", help="json or text"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="bootstrap seed"),
    n_boot: int = typer.Option(1000, "--n-boot", help="bootstrap resamples"),
    breakdown_n_boot: int = typer.Option(200, "--breakdown-n-boot",
                                         help="bootstrap resamples per breakdown group"),
) -> None:
    """Agreement of judge verdicts with human labels, with bootstrap intervals."""
    with cli_errors():
        if n_boot < 1 or breakdown_n_boot < 1:
            die("--n-boot and --breakdown-n-boot must be at least 1")
        if labels is not None or verdicts is not None:
            if labels is None or verdicts is None:
                die("file mode needs both --labels and --verdicts")
            if rubric or prompt_version or model or db:
                die("give either --labels/--verdicts (files) or --rubric (database), not both")
            data = from_files(labels, verdicts)
        elif rubric:
            data = _from_store(rubric, prompt_version, model, db)
        else:
            die("give --labels and --verdicts, or --rubric for the database")
        report = agreement_report(data.labels, data.verdicts, n_boot=n_boot, seed=seed,
                                  breakdown_n_boot=breakdown_n_boot)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(report, allow_nan=False))
    else:
        render_text(report, console(soft_wrap=False, width=110))


def _from_store(rubric: str, prompt_version: str | None, model: str | None,
                db: str | None) -> LabelledVerdicts:
    from judge.cli.database import open_database  # only database mode pays for the import

    with open_database(db) as store:
        return from_store(store, rubric, prompt_version=prompt_version, model=model)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(pair: list[float] | None) -> str:
    return "—" if not pair else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def render_text(report: dict[str, Any], console: Console) -> None:
    """Print the agreement report as readable tables (give it a `judge.cli.console` Console:
    group names come from label and verdict files)."""
    ci = report["ci"]
    reasons: dict[str, str] = report["reasons"]
    main = Table(title="Judge agreement with human labels (positive class: fail)")
    for col in ("metric", "value", "95% CI", "note"):
        main.add_column(col)
    for key in ("accuracy", "cohen_kappa", "tpr", "tnr", "precision", "recall", "f1",
                "human_fail_rate", "judge_fail_rate", "key_agreement", "evidence_agreement"):
        main.add_row(key, _fmt(report[key], 4), _ci(ci.get(key)), reasons.get(key, ""))
    cpr = report["corrected_pass_rate"]
    main.add_row("corrected_pass_rate", _fmt(cpr["estimate"] if cpr else None, 4),
                 _ci(cpr["ci"] if cpr else None), reasons.get("corrected_pass_rate", ""))
    console.print(main)
    c = report["confusion"]
    console.print(
        f"items {report['n_items']}  unscored {report['n_unscored']}  tied {report['n_tied']}"
        f"  unsure {report['n_unsure']}  judged {report['n_judged']}"
        f"  |  confusion tp {c['tp']} fp {c['fp']} fn {c['fn']} tn {c['tn']}"
        f"  |  {report['ci_method']}, {report['n_boot']} resamples, seed {report['seed']}")
    for name, groups in report["breakdowns"].items():
        if not groups or (len(groups) < 2 and name != "juror"):  # one group: the main table
            continue
        table = Table(title=f"by {name}")
        for col in ("group", "n", "accuracy", "kappa", "tpr", "tnr", "corrected pass rate"):
            table.add_column(col)
        for group, m in groups.items():
            gcpr = m["corrected_pass_rate"]
            table.add_row(group, str(m["n_items"]), _fmt(m["accuracy"], 4),
                          _fmt(m["cohen_kappa"], 4), _fmt(m["tpr"], 4), _fmt(m["tnr"], 4),
                          _fmt(gcpr["estimate"] if gcpr else None, 4))
        console.print(table)
    jury = report.get("jury")
    if jury:
        names = ", ".join(jury["names"])
        share = jury["mean_vote_share"]
        console.print(
            f"jury verdicts: {jury['n_verdicts']} ({names}); split {jury['n_split']} "
            f"({jury['split_rate']:.1%}); mean vote share "
            f"{'—' if share is None else f'{share:.3f}'}; each juror: 'by juror' above",
            markup=False)
    hh = report["human_human"]
    if hh is None:
        console.print(f"human–human: {reasons.get('human_human', '—')}")
    else:
        console.print(
            f"human–human: {hh['n_items']} items, {hh['n_annotators']} annotators, "
            f"percent agreement {_fmt(hh['percent_agreement'])}, "
            f"cohen_kappa {_fmt(hh['cohen_kappa'])}, "
            f"krippendorff_alpha {_fmt(hh['krippendorff_alpha'])}")
