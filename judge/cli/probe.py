"""`judge probe`: robustness probes of a judge on a rubric's labelled items.

    judge probe --rubric R [--version V] [--model M] [--base-url URL] [--db URL]
                [--format text|json] [--limit N]

Grades every labelled item of the rubric in the database and its variants (judge.probes:
invariant ones must keep the verdict, sensitive ones must change it) with prompt version V
(default: the newest) through the call cache (a second probe makes no provider call),
prints the flip rate on invariant variants and the catch rate on sensitive ones by kind,
with 95% Wilson intervals, and stores them for `judge calibrate compare`. Exit 0 whatever
the rates (a probe is a measurement, not a gate); bad input exit 2.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import typer

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


class OutputFormat(StrEnum):
    json = "json"
    text = "text"


def probe(
    rubric: str = typer.Option(..., "--rubric", help="the rubric whose labelled items to probe"),
    version: str | None = typer.Option(None, "--version",
                                       help="prompt version (default: the newest)"),
    model: str | None = typer.Option(None, "--model", help="judge model spec (default: "
                                     "settings, else the default model)"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL"),
    jury: list[str] = JURY_OPTION,
    samples: int | None = SAMPLES_OPTION,
    temperature: float | None = TEMPERATURE_OPTION,
    db: str | None = typer.Option(None, "--db", help="database URL (default "
                                  "JUDGE_DATABASE_URL or ./judge.db)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
    limit: int | None = typer.Option(None, "--limit",
                                     help="probe only the first N labelled items (by id)"),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="progress bar (default: on a terminal)"),
) -> None:
    """Robustness probes: flip rate on variants that must not change a verdict, catch rate on those that must."""  # noqa: E501
    with cli_errors():
        if limit is not None and limit < 1:
            die("--limit must be at least 1")
        from judge.cli.database import open_database
        from judge.cli.progress import progress_bar
        from judge.grading.jury import build_judges
        from judge.probes.run import probe_rubric
        from judge.prompts import load_prompt
        from judge.providers.registry import default_model_spec
        from judge.settings import Settings

        settings = Settings.load(model=model, base_url=base_url, database_url=db,
                                 jury=jury_list(jury), samples=samples, temperature=temperature)
        prompt = load_prompt(rubric, version)  # unknown rubric or version: before the db
        provider, panel = build_judges(settings, settings.model or default_model_spec(settings))
        with open_database(settings=settings) as store, \
                progress_bar("grading items and variants", progress) as bar:
            result = probe_rubric(store, rubric, provider, settings, prompt=prompt,
                                  limit=limit, on_start=bar.total, on_result=bar.tick,
                                  jury=panel)
    report = result.report
    if report["n_missing_items"]:
        warn(f"{report['n_missing_items']} labelled item(s) of {rubric} are not stored in the "
             f"database and were left out")
    s = report["stats"]
    warn(f"probed {report['n_items']} labelled items and {report['n_variants']} variants: "
         f"{s['provider_calls']} provider calls, {s['cache_hits']} cached, "
         f"{s['unscored']} unscored; stored as {report['run_id']}")
    if fmt is OutputFormat.json:
        echo(json.dumps(report, allow_nan=False))
    else:
        echo(render_text(report))


def _rate(entry: dict[str, Any], hit: str) -> str:
    if not entry["n"]:
        return f"{'n/a':>7}  {'':17}  0/0"
    lo, hi = entry["ci"]
    return f"{entry['rate']:>7.3f}  [{lo:.3f}, {hi:.3f}]  {entry[hit]}/{entry['n']}"


def render_text(report: dict[str, Any]) -> str:
    """The probe figures as a table, one line per variant kind."""
    lines = [
        f"rubric {field(report['rubric'])}  prompt {field(report['prompt_version'])}  "
        f"model {field(report['model'])}  items {report['n_items']}  "
        f"variants {report['n_variants']}",
        f"  {'kind':22}{'rate':>7}  {'95% Wilson CI':17}  hits/n",
    ]
    for family, hit, title in (("invariant", "flipped", "flip rate (must not change)"),
                               ("sensitive", "caught", "catch rate (must change)")):
        lines.append(f"  {title}: {_rate(report[family], hit)}")
        for kind, entry in report["kinds"].items():
            if entry["family"] != family:
                continue
            extra = f", original wrong {entry['n_original_wrong']}" \
                if "n_original_wrong" in entry else ""
            lines.append(f"    {kind:20}{_rate(entry, hit)}   skipped {entry['n_skipped']}"
                         f", excluded {entry['n_excluded']}{extra}")
    for c in report["changed"][:20]:
        lines.append(f"  {c['outcome']}: {field(c['variant_id'])} ({field(c['original'])} -> "
                     f"{field(c['variant'])}, human {field(c['human'])})")
    if len(report["changed"]) > 20:
        lines.append(f"  … and {len(report['changed']) - 20} more (--format json lists all)")
    return "\n".join(lines)
