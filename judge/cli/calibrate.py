"""`judge calibrate`: fit confidence calibration from files, or check records are current.

    judge calibrate --labels L --verdicts V [--target 0.95] [--format json|text] [--rubric R]
                    [-o calibration/]
    judge calibrate --check [--labels L] [-o calibration/] [--model M]
    judge calibrate --compare OLD.jsonl NEW.jsonl --labels L [--format json|text]

File mode calibrates every (rubric, prompt version, prompt hash, model) found in the verdicts
(or only `--rubric`) and prints one record per line (JSON Lines: a single record is one JSON
object); `-o DIR` also writes `DIR/<rubric>/<prompt_version>__<model>.json`. Fewer than 30
labelled items in a human class (pass or fail) is bad input: one line saying how many more
labels are needed, exit 2. `--check` exits 1 and lists every stale rubric. `--compare`
shows two verdict files' agreement side by side and the items whose verdict flipped.
"""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from pathlib import Path

import typer

from judge.calibration.build import MIN_PER_CLASS, TooFewLabelsError, build_record
from judge.calibration.pairs import calibration_groups
from judge.calibration.record import CalibrationRecord, load_records
from judge.calibration.staleness import Current, stale_rubrics
from judge.cli.common import cli_errors, die
from judge.errors import ConfigError, InputError
from judge.labels import iter_verdicts, read_labels, read_verdicts, reference_labels
from judge.labels.report import rubric_of

DEFAULT_ROOT = Path("calibration")


class OutputFormat(StrEnum):
    json = "json"
    text = "text"


def calibrate(
    labels: Path | None = typer.Option(None, "--labels", help="human labels (JSONL)"),
    verdicts: Path | None = typer.Option(None, "--verdicts", help="verdicts (JSONL)"),
    target: float = typer.Option(0.95, "--target", help="agreement auto-accepted verdicts need"),
    fmt: OutputFormat = typer.Option(OutputFormat.json, "--format", help="json or text"),
    rubric: str | None = typer.Option(None, "--rubric", help="only this rubric"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="records folder: write records here (--check: read here)"
    ),
    check: bool = typer.Option(False, "--check", help="exit 1 listing stale rubrics"),
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", help="OLD NEW verdict files: agreement side by side, flips"
    ),
    model: str | None = typer.Option(None, "--model", help="--check: current model spec"),
    grow_share: float = typer.Option(0.2, "--grow-share", help="--check: label growth limit"),
    seed: int = typer.Option(0, "--seed", help="cross-validation folds seed"),
    min_per_class: int = typer.Option(MIN_PER_CLASS, "--min-per-class", hidden=True),
) -> None:
    """Calibrate judge confidence against human labels (or --check records are current)."""
    with cli_errors():
        if check:
            _check(labels, output or DEFAULT_ROOT, model, grow_share, rubric)
            return
        if compare is not None:
            if labels is None:
                die("calibrate --compare needs --labels")
            _compare(labels, compare[0], compare[1], fmt, seed)
            return
        if labels is None or verdicts is None:
            die("calibrate needs --labels and --verdicts (or --check)")
        if not 0.0 < target < 1.0:
            die(f"--target must lie strictly between 0 and 1 (got {target})")
        records = calibrate_files(
            labels, verdicts, target=target, rubric=rubric, seed=seed, min_per_class=min_per_class
        )
        for rec in records:
            if output is not None:
                rec.save(output)
            typer.echo(rec.model_dump_json() if fmt is OutputFormat.json else _text(rec))


def calibrate_files(
    labels: Path,
    verdicts: Path,
    *,
    target: float = 0.95,
    rubric: str | None = None,
    seed: int = 0,
    min_per_class: int = MIN_PER_CLASS,
) -> list[CalibrationRecord]:
    """One record per (rubric, prompt, model) in the verdicts; every refusal raised together."""
    labs = read_labels(labels)
    numbered = list(iter_verdicts(verdicts))
    groups = calibration_groups(
        labs, [v for _, v in numbered], rubric=rubric, verdicts_file=str(verdicts),
        line_numbers=[n for n, _ in numbered],
    )
    if not groups:
        what = f"no verdict of rubric '{rubric}'" if rubric else "no verdicts"
        raise InputError(what, file=str(verdicts))
    if not any(g.item_ids for g in groups):
        raise InputError(
            f"labels and verdicts share no item with a pass/fail label and a scored verdict "
            f"with a confidence ({labels})",
            file=str(verdicts),
        )
    records: list[CalibrationRecord] = []
    refusals: list[str] = []
    for g in groups:
        try:
            records.append(
                build_record(
                    g.conf, g.agreed, g.human_fail_array,
                    rubric=g.rubric, prompt_version=g.prompt_version, prompt_hash=g.prompt_hash,
                    model=g.model, label_set_hash=g.label_set_hash, n_labelled=g.n_labelled,
                    target=target, seed=seed, min_per_class=min_per_class,
                )
            )
        except TooFewLabelsError as exc:
            refusals.append(exc.message)
    if refusals:
        raise ConfigError("; ".join(refusals))
    return records


def _text(rec: CalibrationRecord) -> str:
    m = rec.metrics
    thr = "none (review everything)" if rec.threshold is None else f"{rec.threshold:.4f}"
    lines = [
        f"rubric {rec.rubric}  prompt {rec.prompt_version} ({rec.prompt_hash})  model {rec.model}",
        f"  items {rec.n} (human pass {rec.n_per_class['pass']}, fail {rec.n_per_class['fail']})"
        f"  agreement {m.agreement:.3f}",
        f"  method {rec.method}  cv log loss "
        + ", ".join(f"{k} {v:.4f}" if v is not None else f"{k} n/a"
                    for k, v in m.cv_log_loss.items()),
        f"  raw:        ECE {m.ece_raw:.4f}  Brier {m.brier_raw:.4f}"
        f"  log loss {m.log_loss_raw:.4f}",
        f"  calibrated: ECE {m.ece:.4f}  Brier {m.brier:.4f}  log loss {m.log_loss:.4f}"
        "  (held-out folds)",
        f"  threshold {thr} for target {rec.target}  expected review share "
        f"{rec.expected_review_share:.1%}",
    ]
    if rec.held_out_accepted_agreement is not None and rec.held_out_lower_bound is not None:
        lines.append(
            f"  held-out auto-accepted agreement {rec.held_out_accepted_agreement:.3f} "
            f"(one-sided {1 - rec.alpha:.0%} lower bound {rec.held_out_lower_bound:.3f})"
        )
    return "\n".join(lines)


def _current_prompts(model: str, rubric: str | None) -> list[Current]:
    from judge.prompts.files import list_prompts, version_key

    latest: dict[str, tuple[str, str]] = {}
    for p in list_prompts():
        old = latest.get(p.rubric)
        if old is None or version_key(p.version) > version_key(old[0]):
            latest[p.rubric] = (p.version, p.hash)
    if rubric is not None:
        if rubric not in latest:
            raise ConfigError(f"unknown rubric '{rubric}': no prompt files for it")
        latest = {rubric: latest[rubric]}
    return [(r, v, h, model) for r, (v, h) in sorted(latest.items())]


def _label_counts(labels: Path) -> dict[str, int]:
    refs = reference_labels(read_labels(labels)).labels
    return dict(Counter(rubric_of(i) for i, r in refs.items() if r.label != "unsure"))


def _check(
    labels: Path | None, root: Path, model: str | None, grow_share: float, rubric: str | None
) -> None:
    if model is None:
        from judge.providers.registry import default_model_spec
        from judge.settings import Settings

        model = default_model_spec(Settings.load())
    current = _current_prompts(model, rubric)
    counts = _label_counts(labels) if labels is not None else None
    reasons = stale_rubrics(load_records(root), current, counts, grow_share)
    if reasons:
        for reason in reasons:
            typer.echo(f"stale: {reason}")
        raise typer.Exit(1)
    typer.echo(f"calibration current for {len(current)} rubric(s) with model {model}")


def _compare(labels: Path, old: Path, new: Path, fmt: OutputFormat, seed: int) -> None:
    from judge.calibration.compare import compare_verdicts

    result = compare_verdicts(read_labels(labels), read_verdicts(old), read_verdicts(new),
                              seed=seed)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(result, allow_nan=False))
        return

    def num(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else "n/a" if v is None else str(v)

    o, n = result["old"], result["new"]
    typer.echo(f"{'':18}{'old':>24}{'new':>24}")
    for key in ("prompt_version", "model", "n_items", "accuracy", "cohen_kappa", "tpr", "tnr",
                "f1", "key_agreement", "evidence_agreement"):
        typer.echo(f"{key:18}{num(o.get(key)):>24}{num(n.get(key)):>24}")
    typer.echo(f"flipped {result['n_flipped']} of {result['n_common']} common items "
               f"(fixed {result['n_fixed']}, broke {result['n_broke']})")
    for f in result["flipped"]:
        a, b = f["old"], f["new"]
        typer.echo(f"  {f['item_id']}: {a['label']} -> {b['label']} (human {f['human'] or 'n/a'}"
                   f"{', ' + f['effect'] if f['effect'] else ''}); evidence "
                   f"{a['evidence_event']} -> {b['evidence_event']}, key {a['violated_key']} -> "
                   f"{b['violated_key']}")
