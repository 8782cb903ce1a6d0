"""`judge calibrate`: fit confidence calibration from files or the database, or check records.

    judge calibrate --labels L --verdicts V [--target 0.95] [--format json|text] [--rubric R]
                    [-o calibration/]
    judge calibrate --rubric R [--model M] [--target 0.95] [--format json|text] [-o DIR] [--db URL]
    judge calibrate --check [--labels L] [-o calibration/] [--model M] [--db URL]
    judge calibrate --compare OLD.jsonl NEW.jsonl --labels L [--format json|text]
    judge calibrate --compare OLD NEW --rubric R [--model M] [--db URL]   (prompt versions)

File mode calibrates every (rubric, prompt version, prompt hash, model) found in the verdicts
(or only `--rubric`) and prints one record per line (JSON Lines: a single record is one JSON
object); `-o DIR` also writes `DIR/<rubric>/<prompt_version>__<model>.json`. Fewer than 30
labelled items in a human class (pass or fail) is bad input: one line saying how many more
labels are needed, exit 2. `--check` exits 1 and lists every stale rubric. `--compare`
shows two verdict files' agreement side by side and the items whose verdict flipped.

Database mode (`--rubric` without `--labels`/`--verdicts`) re-grades every labelled item of
the rubric with its current prompt version and the model (`--model`, settings, or the
default) through the database's call cache (a second run makes no provider call), writes the
record under `calibration/` (JUDGE_CALIBRATION_DIR, or -o DIR) and stores it in the database,
where routing finds it; routing also falls back to the committed files. `--check` also counts
the database's labels when a database exists; `--compare OLD NEW --rubric R` compares two
prompt versions' stored verdicts.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from judge.calibration.build import MIN_PER_CLASS
from judge.calibration.files import records_dir
from judge.calibration.from_files import calibrate_files
from judge.calibration.record import CalibrationRecord
from judge.cli.common import cli_errors, die, warn
from judge.cli.progress import progress_bar
from judge.labels import read_labels, read_verdicts

DEFAULT_ROOT = Path("calibration")


class OutputFormat(StrEnum):
    json = "json"
    text = "text"


def calibrate(
    labels: Path | None = typer.Option(None, "--labels", help="human labels (JSONL)"),
    verdicts: Path | None = typer.Option(None, "--verdicts", help="verdicts (JSONL)"),
    target: float = typer.Option(0.95, "--target", help="agreement auto-accepted verdicts need"),
    fmt: OutputFormat = typer.Option(OutputFormat.json, "--format", help="json or text"),
    rubric: str | None = typer.Option(
        None, "--rubric", help="only this rubric; alone: calibrate it from the database"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="records folder: write records here (--check: read here; "
        "default $JUDGE_CALIBRATION_DIR or calibration/)"
    ),
    check: bool = typer.Option(False, "--check", help="exit 1 listing stale rubrics"),
    compare: tuple[str, str] | None = typer.Option(
        None, "--compare", help="OLD NEW: verdict files (with --labels) or prompt versions "
        "(with --rubric, database): agreement side by side, flips"
    ),
    model: str | None = typer.Option(
        None, "--model", help="judge model spec (database mode, --check, --compare filter)"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL"),
    db: str | None = typer.Option(
        None, "--db", help="database URL (default JUDGE_DATABASE_URL or ./judge.db)"),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="progress bar (default: on a terminal)"),
    grow_share: float = typer.Option(0.2, "--grow-share", help="--check: label growth limit"),
    seed: int = typer.Option(0, "--seed", help="cross-validation folds seed"),
    min_per_class: int = typer.Option(MIN_PER_CLASS, "--min-per-class", hidden=True),
) -> None:
    """Calibrate judge confidence against human labels (or --check records are current)."""
    with cli_errors():
        if check:
            _check(labels, records_dir(output), model, grow_share, rubric, db)
            return
        if compare is not None:
            if labels is not None:
                _compare(labels, Path(compare[0]), Path(compare[1]), fmt, seed)
            elif rubric is not None:
                _compare_db(rubric, compare[0], compare[1], model, db, fmt, seed)
            else:
                die("calibrate --compare needs --labels (verdict files) or --rubric (database)")
            return
        if not 0.0 < target < 1.0:
            die(f"--target must lie strictly between 0 and 1 (got {target})")
        if labels is None and verdicts is None and rubric is not None:
            _calibrate_db(rubric, model, base_url, db, target, fmt, output, seed,
                          min_per_class, progress)
            return
        if labels is None or verdicts is None:
            die("calibrate needs --labels and --verdicts (files), --rubric (database) "
                "or --check")
        records = calibrate_files(
            labels, verdicts, target=target, rubric=rubric, seed=seed, min_per_class=min_per_class
        )
        for rec in records:
            if output is not None:
                rec.save(output)
            typer.echo(rec.model_dump_json() if fmt is OutputFormat.json else _text(rec))


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


def _calibrate_db(rubric: str, model: str | None, base_url: str | None, db: str | None,
                  target: float, fmt: OutputFormat, output: Path | None, seed: int,
                  min_per_class: int, progress: bool | None) -> None:
    from judge.calibration.regrade import calibrate_rubric
    from judge.prompts import load_prompt
    from judge.providers.registry import default_model_spec, make_provider
    from judge.settings import Settings
    from judge.store import open_store

    settings = Settings.load(model=model, base_url=base_url, database_url=db)
    prompt = load_prompt(rubric)  # an unknown rubric fails before the database is opened
    provider = make_provider(settings.model or default_model_spec(settings), settings)
    with open_store(settings.database_url) as store, \
            progress_bar("re-grading labelled items", progress) as bar:
        result = calibrate_rubric(
            store, rubric, provider, settings, prompt=prompt, target=target, seed=seed,
            min_per_class=min_per_class, root=output, on_start=bar.total, on_result=bar.tick)
        where = store.where
    s = result.stats
    if result.n_missing_items:
        warn(f"{result.n_missing_items} labelled item(s) of {rubric} are not stored in the "
             f"database and were left out")
    warn(f"re-graded {s.items} labelled items of {rubric} with prompt {prompt.version} and "
         f"{provider.spec}: {s.provider_calls} provider calls, {s.cache_hits} cached, "
         f"{s.unscored} unscored; wrote {result.path}; stored in {where}")
    rec = result.record
    typer.echo(rec.model_dump_json() if fmt is OutputFormat.json else _text(rec))




def _check(
    labels: Path | None, root: Path, model: str | None, grow_share: float, rubric: str | None,
    db: str | None = None,
) -> None:
    from judge.calibration.status import check_calibration
    from judge.providers.registry import default_model_spec
    from judge.settings import Settings

    settings = Settings.load(model=model, database_url=db)
    status = check_calibration(settings.model or default_model_spec(settings), root,
                               labels=labels, database_url=settings.database_url,
                               rubric=rubric, grow_share=grow_share)
    if status.stale:
        for reason in status.stale:
            typer.echo(f"stale: {reason}")
        raise typer.Exit(1)
    typer.echo(f"calibration current for {len(status.current)} rubric(s) with model "
               f"{status.model}")


def _compare(labels: Path, old: Path, new: Path, fmt: OutputFormat, seed: int) -> None:
    from judge.calibration.compare import compare_verdicts

    result = compare_verdicts(read_labels(labels), read_verdicts(old), read_verdicts(new),
                              seed=seed)
    _print_compare(result, fmt)


def _compare_db(rubric: str, old: str, new: str, model: str | None, db: str | None,
                fmt: OutputFormat, seed: int) -> None:
    from judge.calibration.versions import compare_versions
    from judge.settings import Settings
    from judge.store import open_store

    with open_store(db or Settings.load().database_url) as store:
        result = compare_versions(store, rubric, old, new, model=model, seed=seed)
    _print_compare(result, fmt)


def _print_compare(result: dict[str, Any], fmt: OutputFormat) -> None:
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
