"""`judge calibrate`: fit confidence calibration, check records are current, compare judges.

    judge calibrate fit --rubric R [--model M] [--target 0.95] [--format json|text] [-o DIR]
                        [--db URL]
    judge calibrate files --labels L --verdicts V [--rubric R] [--target 0.95]
                          [--format json|text] [-o DIR]
    judge calibrate check [--labels L] [--records DIR] [--rubric R] [--model M] [--db URL]
    judge calibrate compare OLD NEW (--labels L | --rubric R [--model M] [--db URL])

`fit` re-grades every labelled item of the rubric in the database with its current prompt
version and the model (`--model`, settings, or the default) through the call cache (a second
run makes no provider call), fits, writes the record under `calibration/`
(JUDGE_CALIBRATION_DIR, or -o DIR) and stores it in the database, where routing finds it.
`files` calibrates every (rubric, prompt version, prompt hash, model) found in a verdicts file
and prints one record per line (JSON Lines). Fewer than 30 labelled items in a human class is
bad input: one line saying how many more labels are needed, exit 2. `check` exits 1 and lists
every stale rubric. `compare` shows two verdict files (`--labels`) or two prompt versions'
stored verdicts (`--rubric`) side by side with the items whose verdict flipped.

The forms before subcommands (`judge calibrate --rubric R`, `--labels L --verdicts V`,
`--check`, `--compare OLD NEW`) still run: they are mapped to a subcommand with a one-line
deprecation note on stderr (`legacy_args`).
"""

from __future__ import annotations

import json
import shlex
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from judge.cli.common import (
    JURY_OPTION,
    SAMPLES_OPTION,
    TEMPERATURE_OPTION,
    cli_errors,
    die,
    jury_list,
    warn,
)
from judge.cli.console import echo, field
from judge.cli.numbers import SEED_MAX, float_option, int_option
from judge.safe_text import json_safe

if TYPE_CHECKING:
    from judge.calibration.record import CalibrationRecord


class OutputFormat(StrEnum):
    json = "json"
    text = "text"


# -- the forms before subcommands --------------------------------------------------------
_TAKES_VALUE = {"--labels", "--verdicts", "--target", "--format", "--rubric", "-o", "--output",
                "--model", "--base-url", "--db", "--grow-share", "--seed", "--min-per-class"}
_KEEP = {  # the old options each subcommand still takes; any other is dropped, and said so
    "fit": {"--rubric", "--model", "--base-url", "--db", "--target", "--format", "-o",
            "--output", "--progress", "--no-progress", "--seed", "--min-per-class", "--help"},
    "files": {"--labels", "--verdicts", "--rubric", "--target", "--format", "-o", "--output",
              "--seed", "--min-per-class", "--help"},
    "check": {"--labels", "-o", "--output", "--model", "--db", "--rubric", "--grow-share",
              "--help"},
    "compare-files": {"--labels", "--format", "--seed", "--help"},
    "compare-db": {"--rubric", "--model", "--db", "--format", "--seed", "--help"},
}


def legacy_args(args: list[str]) -> tuple[list[str], str] | None:
    """The subcommand form of an old `judge calibrate --…` command line and its deprecation
    note, or None when `args` already name a subcommand (or ask for help)."""
    if not args or not args[0].startswith("-") or args[0] == "--help":
        return None
    options: list[tuple[str, list[str]]] = []  # (name, tokens) in the order given
    compare: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        name = token.split("=", 1)[0] if token.startswith("--") else token
        if name == "--compare":
            compare = args[i + 1:i + 3]
            i += 3
            continue
        width = 2 if name in _TAKES_VALUE and "=" not in token else 1
        options.append((name, args[i:i + width]))
        i += width
    names = {n for n, _ in options}
    if "--check" in names:
        mode, sub = "check", ["check"]
    elif compare:
        if len(compare) < 2:
            die("--compare needs two values: OLD NEW")
        mode = "compare-files" if "--labels" in names else "compare-db"
        sub = ["compare", *compare]
    elif "--labels" in names or "--verdicts" in names:
        mode, sub = "files", ["files"]
    elif "--rubric" in names:
        mode, sub = "fit", ["fit"]
    else:
        die("calibrate needs a subcommand: fit, files, check or compare "
            "(see 'judge calibrate --help')")
    kept = [t for n, tokens in options if n in _KEEP[mode] or not n.startswith("-")
            for t in tokens]
    dropped = sorted({n for n, _ in options if n.startswith("-") and n not in _KEEP[mode]}
                     - {"--check"})
    new = [*sub, *kept]
    note = f"deprecated form: running 'judge calibrate {shlex.join(new)}'" \
        + (f" (ignored: {', '.join(dropped)})" if dropped else "")
    return new, note


class _CalibrateGroup(TyperGroup):
    """Subcommands, and the old option-only forms mapped onto them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        mapped = None if ctx.resilient_parsing else legacy_args(args)
        if mapped is not None:
            args, note = mapped
            warn(note)
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_CalibrateGroup,
    help="Calibrate judge confidence against human labels; check and compare calibrations.",
    no_args_is_help=True,
)

# -- options shared by several subcommands ------------------------------------------------
_TARGET = float_option(0.95, "--target", lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                       help="agreement auto-accepted verdicts need")
_FORMAT = typer.Option(OutputFormat.json, "--format", help="json or text")
_SEED = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="cross-validation folds seed")
_MIN_PER_CLASS = typer.Option(None, "--min-per-class", hidden=True)
_DB = typer.Option(None, "--db", help="database URL (default JUDGE_DATABASE_URL or ./judge.db)")


def _check_target(target: float) -> None:
    if not 0.0 < target < 1.0:
        die(f"--target must lie strictly between 0 and 1 (got {target})")


@app.command("fit")
def fit(
    rubric: str = typer.Option(..., "--rubric", help="the rubric to calibrate"),
    model: str | None = typer.Option(None, "--model", help="judge model spec (default: "
                                     "settings, else the default model)"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL"),
    jury: list[str] = JURY_OPTION,
    samples: int | None = SAMPLES_OPTION,
    temperature: float | None = TEMPERATURE_OPTION,
    db: str | None = _DB,
    target: float = _TARGET,
    fmt: OutputFormat = _FORMAT,
    output: Path | None = typer.Option(
        None, "-o", "--output",
        help="records folder to write (default $JUDGE_CALIBRATION_DIR or calibration/)"),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="progress bar (default: on a terminal)"),
    seed: int = _SEED,
    min_per_class: int | None = _MIN_PER_CLASS,
) -> None:
    """Re-grade a rubric's labelled items in the database (cached), fit, write, store."""
    with cli_errors():
        _check_target(target)
        from judge.calibration.build import MIN_PER_CLASS
        from judge.calibration.regrade import calibrate_rubric
        from judge.cli.database import open_database
        from judge.cli.progress import progress_bar
        from judge.grading.jury import build_judges, judge_of
        from judge.prompts import load_prompt
        from judge.providers.registry import default_model_spec
        from judge.settings import Settings

        settings = Settings.load(model=model, base_url=base_url, database_url=db,
                                 jury=jury_list(jury), samples=samples, temperature=temperature)
        prompt = load_prompt(rubric)  # an unknown rubric fails before the database is opened
        provider, panel = build_judges(settings, settings.model or default_model_spec(settings))
        judged_by = judge_of(provider, panel, rubric)[1]
        with open_database(settings=settings) as store, \
                progress_bar("re-grading labelled items", progress) as bar:
            result = calibrate_rubric(
                store, rubric, provider, settings, prompt=prompt, target=target, seed=seed,
                min_per_class=MIN_PER_CLASS if min_per_class is None else min_per_class,
                root=output, on_start=bar.total, on_result=bar.tick, jury=panel)
            where = store.where
    s = result.stats
    if result.n_missing_items:
        warn(f"{result.n_missing_items} labelled item(s) of {rubric} are not stored in the "
             f"database and were left out")
    warn(f"re-graded {s.items} labelled items of {rubric} with prompt {prompt.version} and "
         f"{judged_by}: {s.provider_calls} provider calls, {s.cache_hits} cached, "
         f"{s.unscored} unscored; wrote {result.path}; stored in {where}")
    _print_record(result.record, fmt)


@app.command("files")
def files(
    labels: Path = typer.Option(..., "--labels", help="human labels (JSONL)"),
    verdicts: Path = typer.Option(..., "--verdicts", help="verdicts (JSONL)"),
    rubric: str | None = typer.Option(None, "--rubric", help="only this rubric"),
    target: float = _TARGET,
    fmt: OutputFormat = _FORMAT,
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="also write the records under this folder"),
    seed: int = _SEED,
    min_per_class: int | None = _MIN_PER_CLASS,
) -> None:
    """Calibrate from label and verdict files (no database): a record per prompt and model."""
    with cli_errors():
        _check_target(target)
        from judge.calibration.build import MIN_PER_CLASS
        from judge.calibration.from_files import calibrate_files

        records = calibrate_files(
            labels, verdicts, target=target, rubric=rubric, seed=seed,
            min_per_class=MIN_PER_CLASS if min_per_class is None else min_per_class)
        for rec in records:
            if output is not None:
                rec.save(output)
            _print_record(rec, fmt)


@app.command("check")
def check(
    labels: Path | None = typer.Option(
        None, "--labels", help="count labels here (default: the database's, if any)"),
    records: Path | None = typer.Option(
        None, "--records", "-o", "--output",
        help="records folder to read (default $JUDGE_CALIBRATION_DIR or calibration/)"),
    rubric: str | None = typer.Option(None, "--rubric", help="only this rubric"),
    model: str | None = typer.Option(None, "--model", help="judge model spec (default: "
                                     "settings, else the default model)"),
    db: str | None = _DB,
    grow_share: float = float_option(
        0.2, "--grow-share", lo=0.0, hi=1e6,
        help="stale when labels grew by more than this share"),
) -> None:
    """Exit 1 listing rubrics whose current prompt and model lack a current record."""
    with cli_errors():
        from judge.calibration.files import records_dir
        from judge.calibration.status import check_calibration
        from judge.providers.registry import default_model_spec
        from judge.settings import Settings

        settings = Settings.load(model=model, database_url=db)
        single = settings.model or default_model_spec(settings)
        by_model = _checked_models(settings, single, rubric)
        stale: list[str] = []
        current: dict[str, int] = {}
        for spec, rubrics in by_model.items():
            for r in rubrics:
                status = check_calibration(
                    spec, records_dir(records), labels=labels,
                    database_url=settings.database_url, rubric=r, grow_share=grow_share)
                stale.extend(status.stale)
                current[spec] = current.get(spec, 0) + len(status.current)
    if stale:
        for reason in stale:
            echo(f"stale: {field(reason)}")
        raise typer.Exit(1)
    echo("calibration current for " + "; ".join(
        f"{n} rubric(s) with model {field(spec)}" for spec, n in current.items()))


def _checked_models(settings: Any, model: str, rubric: str | None
                    ) -> dict[str, list[str | None]]:
    """Which records `check` looks for: model name → the rubrics graded by it (None: every
    rubric). A jury's name for the rubrics the settings' jury grades, `model` for the rest;
    a jury rubric with no prompt is refused, as grading refuses it."""
    from judge.errors import ConfigError
    from judge.grading.jury import is_jury, jury_from_settings, parse_jury
    from judge.prompts.files import known_rubrics

    if is_jury(model):
        return {parse_jury(model).name: [rubric]}
    spec = jury_from_settings(settings, model)
    if spec is None:
        return {model: [rubric]}
    if not spec.rubrics:
        return {spec.name: [rubric]}
    known = known_rubrics()
    unknown = sorted(spec.rubrics - set(known))
    if unknown:
        raise ConfigError(f"jury rubric {unknown[0]!r} has no prompt (rubrics: "
                          f"{', '.join(known)}); check JUDGE_JURY_RUBRICS / jury_rubrics")
    asked = [rubric] if rubric is not None else known
    out: dict[str, list[str | None]] = {}
    for r in asked:
        out.setdefault(spec.name if spec.applies(r) else model, []).append(r)
    return out


@app.command("compare")
def compare(
    old: str = typer.Argument(
        ..., metavar="OLD", help="old verdicts file (--labels) or prompt version"),
    new: str = typer.Argument(
        ..., metavar="NEW", help="new verdicts file (--labels) or prompt version"),
    labels: Path | None = typer.Option(
        None, "--labels", help="human labels (JSONL): OLD and NEW are verdict files"),
    rubric: str | None = typer.Option(
        None, "--rubric", help="database: OLD and NEW are prompt versions of this rubric"),
    model: str | None = typer.Option(None, "--model", help="database: only this model"),
    db: str | None = _DB,
    fmt: OutputFormat = _FORMAT,
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX, help="bootstrap seed"),
) -> None:
    """Two judges' agreement side by side, and the items whose verdict flipped."""
    with cli_errors():
        if labels is not None and rubric is not None:
            die("give --labels (verdict files) or --rubric (prompt versions), not both")
        if labels is None and rubric is None:
            die("calibrate compare needs --labels (OLD, NEW: verdict files) or --rubric "
                "(OLD, NEW: prompt versions in the database)")
        if labels is not None:
            if model is not None or db is not None:
                die("--model and --db are for comparing prompt versions (--rubric)")
            from judge.calibration.compare import compare_verdicts
            from judge.labels import read_labels, read_verdicts

            result = compare_verdicts(read_labels(labels), read_verdicts(old),
                                      read_verdicts(new), seed=seed)
        else:
            assert rubric is not None
            from judge.calibration.compare import probe_sides
            from judge.calibration.versions import compare_versions
            from judge.cli.database import open_database
            from judge.probes.run import stored_probe

            with open_database(db) as store:
                result = compare_versions(store, rubric, old, new, model=model, seed=seed)
                result["probes"] = probe_sides(
                    stored_probe(store, rubric, old, model or result["old"]["model"]),
                    stored_probe(store, rubric, new, model or result["new"]["model"]))
    _print_compare(result, fmt)


# -- printing ------------------------------------------------------------------------------
def _print_record(rec: CalibrationRecord, fmt: OutputFormat) -> None:
    echo(json_safe(rec.model_dump_json()) if fmt is OutputFormat.json else _text(rec))


def _text(rec: CalibrationRecord) -> str:
    m = rec.metrics
    thr = "none (review everything)" if rec.threshold is None else f"{rec.threshold:.4f}"
    lines = [
        f"rubric {field(rec.rubric)}  prompt {field(rec.prompt_version)} "
        f"({field(rec.prompt_hash)})  model {field(rec.model)}",
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


def _print_compare(result: dict[str, Any], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        echo(json.dumps(result, allow_nan=False))
        return

    def num(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else "n/a" if v is None else field(v)

    o, n = result["old"], result["new"]
    echo(f"{'':18}{'old':>24}{'new':>24}")
    for key in ("prompt_version", "model", "n_items", "accuracy", "cohen_kappa", "tpr", "tnr",
                "f1", "key_agreement", "evidence_agreement"):
        echo(f"{key:18}{num(o.get(key)):>24}{num(n.get(key)):>24}")
    probes = result.get("probes")
    if probes is not None:
        _print_probe_rows(probes["old"], probes["new"], num)
    echo(f"flipped {result['n_flipped']} of {result['n_common']} common items "
         f"(fixed {result['n_fixed']}, broke {result['n_broke']})")
    for f in result["flipped"]:
        a, b = f["old"], f["new"]
        echo(f"  {field(f['item_id'])}: {field(a['label'])} -> {field(b['label'])} "
             f"(human {field(f['human'] or 'n/a')}"
             f"{', ' + field(f['effect']) if f['effect'] else ''}); evidence "
             f"{field(a['evidence_event'])} -> {field(b['evidence_event'])}, key "
             f"{field(a['violated_key'])} -> {field(b['violated_key'])}")


def _print_probe_rows(old: dict[str, Any] | None, new: dict[str, Any] | None,
                      num: Any) -> None:
    """Each side's stored probe figures (`judge probe`): rate [interval] per family and
    kind, `not probed` for a side without."""
    def cell(side: dict[str, Any] | None, entry: dict[str, Any] | None) -> str:
        if side is None:
            return "not probed"
        if not entry or not entry.get("n"):
            return "n/a"
        lo, hi = entry["ci"]
        return f"{num(entry['rate'])} [{lo:.2f},{hi:.2f}] n={entry['n']}"

    echo(f"{'robustness probes':22}{'old':>25}{'new':>25}  (judge probe: rate "
         "[95% Wilson CI] n)")
    kinds = list((old or new or {}).get("kinds") or {})
    for name, family in (("flip rate", "invariant"), ("catch rate", "sensitive")):
        echo(f" {name:21}{cell(old, (old or {}).get(family)):>25}"
             f"{cell(new, (new or {}).get(family)):>25}")
        for kind in kinds:
            o = ((old or {}).get("kinds") or {}).get(kind)
            n = ((new or {}).get("kinds") or {}).get(kind)
            if (o or n or {}).get("family") != family:
                continue
            echo(f"   {kind[:19]:19}{cell(old, o):>25}{cell(new, n):>25}")
