"""`judge align`: a new prompt version from the items where the judge disagreed with people,
proven on held-out labels.

    judge align --rubric R [--from vN] [--model M] [--base-url URL]
                [--method fewshot|guidelines|both] [--accept] [--seed 0] [--held-out 0.5]
                [--budget 3000] [--max-examples 8] [--db URL] [--format text|json]

Splits the rubric's labelled items in the database into train and held-out (grouped by
trace or task, stratified by the human label, seeded), grades the train items with the
parent version (`--from`, default the rubric's default version), clusters its
disagreements, writes the proposal as a draft `<user prompts dir>/R/v(N+1).md`, grades the
held-out items with both versions (same model, cache on) and probes both there.
`--accept` makes the candidate the default only when the held-out agreement gain's interval
lies above 0 and no probe rate got worse beyond its interval.

Exit 0 with the report (a measurement, whatever it shows); with `--accept`, 1 when the
candidate was not accepted (a gate that failed; the draft stays and the report says why);
2 for bad input: too few labels (saying how many more), an unknown rubric or version, no
user prompts directory (or one whose parent is missing: checked before the database or any
model call), a heuristic judge asked for rules.
"""

from __future__ import annotations

import contextlib
import json
from enum import StrEnum
from typing import Any

import typer

from judge.cli.common import (
    JURY_OPTION,
    SAMPLES_OPTION,
    TEMPERATURE_OPTION,
    cli_errors,
    jury_list,
    warn,
)
from judge.cli.console import echo, field
from judge.cli.numbers import SEED_MAX, float_option, int_option


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class Method(StrEnum):
    fewshot = "fewshot"
    guidelines = "guidelines"
    both = "both"


def align(
    rubric: str = typer.Option(..., "--rubric", help="the rubric whose prompt to align"),
    parent: str | None = typer.Option(None, "--from", help="the version to start from "
                                      "(default: the rubric's default version)"),
    model: str | None = typer.Option(None, "--model", help="judge model spec (default: "
                                     "settings, else the default model)"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL"),
    jury: list[str] = JURY_OPTION,
    samples: int | None = SAMPLES_OPTION,
    temperature: float | None = TEMPERATURE_OPTION,
    method: Method = typer.Option(Method.fewshot, "--method", help="fewshot: corrected "
                                  "examples; guidelines: rules the judge model distils; both"),
    accept: bool = typer.Option(False, "--accept", help="make the candidate the default if "
                                "the held-out gain's interval lies above 0 and no probe "
                                "rate got worse (else exit 1, the draft kept)"),
    seed: int = int_option(0, "--seed", lo=0, hi=SEED_MAX,
                           help="split seed (recorded in the new version)"),
    held_out: float = float_option(0.5, "--held-out", lo=0.0, hi=0.5, lo_open=True,
                                   help="share held out: one fold of round(1/share)"),
    budget: int = typer.Option(3000, "--budget", min=1,
                               help="tokens the examples may take (characters / 4)"),
    max_examples: int = typer.Option(8, "--max-examples", min=1, help="most examples"),
    db: str | None = typer.Option(None, "--db", help="database URL (default "
                                  "JUDGE_DATABASE_URL or ./judge.db)"),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json"),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="progress bars (default: on a terminal)"),
    min_per_class: int | None = typer.Option(None, "--min-per-class", hidden=True),
) -> None:
    """Propose a better prompt from the items where the judge disagreed with people, and prove it on held-out labels."""  # noqa: E501
    with cli_errors():
        from judge.align import AlignOptions, align_rubric
        from judge.align.candidate import prompts_root
        from judge.align.split import MIN_PER_CLASS
        from judge.cli.database import open_database
        from judge.grading.jury import build_judges
        from judge.prompts import load_prompt
        from judge.providers.registry import default_model_spec
        from judge.settings import Settings

        settings = Settings.load(model=model, base_url=base_url, database_url=db,
                                 jury=jury_list(jury), samples=samples, temperature=temperature)
        start = load_prompt(rubric, parent)  # an unknown rubric or version: before the db
        prompts_root()  # where the draft goes: checked before the db and any model call
        spec = settings.model or default_model_spec(settings)
        built = [build_judges(settings, spec)]  # a spec that cannot work fails before the db

        def judges() -> Any:
            return built.pop() if built else build_judges(settings, spec)
        options = AlignOptions(
            method=method.value, seed=seed, held_out_share=held_out, budget=budget,
            max_examples=max_examples, accept=accept,
            min_per_class=MIN_PER_CLASS if min_per_class is None else min_per_class)
        options.check()
        with open_database(settings=settings) as store, _Phases(progress) as phases:
            result = align_rubric(store, rubric, judges,
                                  settings, parent=start, options=options, phases=phases,
                                  note=warn)
    report = result.report
    if fmt is OutputFormat.json:
        echo(json.dumps(report, allow_nan=False))
    else:
        echo(render_text(report))
    if accept and not result.accepted:
        raise typer.Exit(1)


class _Phases:
    """One progress bar per phase, the previous one closed when the next starts."""

    def __init__(self, show: bool | None) -> None:
        self.show = show
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> _Phases:
        return self

    def __exit__(self, *_: object) -> None:
        self.stack.close()

    def __call__(self, name: str, total: int) -> Any:
        import sys

        from judge.cli.progress import progress_bar

        self.stack.close()
        self.stack = contextlib.ExitStack()
        if self.show is False or (self.show is None and not sys.stderr.isatty()):
            warn(f"{name} ({total})")  # a log's progress: one line per phase
        bar = self.stack.enter_context(progress_bar(name, self.show))
        bar.total(total)
        return bar.tick


def _num(v: Any, signed: bool = False) -> str:
    if v is None:
        return "n/a"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _ci(ci: Any, signed: bool = False) -> str:
    return "" if not ci else f" [{_num(ci[0], signed)}, {_num(ci[1], signed)}]"


def render_text(r: dict[str, Any]) -> str:
    """The align report for a terminal (trace-derived text shown with escapes)."""
    p = r["parent"]
    s = r["split"]
    t = r["train"]
    lab = r["labels"]
    lines = [
        f"judge align: rubric {field(r['rubric'])}, model {field(r['model'])}, method "
        f"{r['method']}, from {field(p['version'])} ({p['hash']})",
        f"labels: {lab['n_labelled']} items with a pass/fail reference ({lab['fail']} fail, "
        f"{lab['pass']} pass); {lab.get('n_tied', 0)} tied (annotators split evenly: left "
        f"out), {lab['n_missing_items']} labelled items not stored",
        f"split (seed {s['seed']}, grouped by {s['grouped_by']}): train {s['train']['n']} "
        f"({s['train']['fail']} fail, {s['train']['pass']} pass, {s['train']['groups']} "
        f"groups), held out {s['held_out']['n']} ({s['held_out']['fail']} fail, "
        f"{s['held_out']['pass']} pass, {s['held_out']['groups']} groups)",
        f"train: {p['version']} agreed on {t['n_agreed']} of {t['n_scored']} scored "
        f"({_num(t['agreement'])}); {t['false_pass']} false passes, {t['false_fail']} "
        f"false fails, {t['n_unscored']} unscored; {len(t['clusters'])} clusters",
    ]
    for c in t["clusters"][:10]:
        lines.append(f"  {c['id']}: {c['n']} {c['direction'].replace('_', ' ')}, key "
                     f"{field(c['violated_key'] or '-')} ({c['check_kind']}), {c['item_kind']}")
    prop = r["proposal"]
    if prop["examples"]:
        lines.append(f"proposal: {len(prop['examples'])} corrected examples, "
                     f"{prop['example_tokens']} of {prop['token_budget']} tokens")
        for e in prop["examples"]:
            lines.append(f"  {field(e['item_id'])}: {e['label']} (judge said {e['judged']}; "
                         f"cluster {e['cluster']})")
    if prop["rules"]:
        lines.append(f"proposal: {len(prop['rules'])} rules")
        for n, rule in enumerate(prop["rules"], 1):
            lines.append(f"  {n}. {field(rule['rule'])} (from {len(rule['cites'])} items, "
                         f"cluster {rule['cluster']})")
    for cluster, why in prop.get("rule_failures", {}).items():
        lines.append(f"  no rules from {cluster}: {field(why)}")
    cand = r.get("candidate")
    if cand:
        how = "wrote" if cand["written"] else "reused the identical " + (
            "draft" if cand["status"] == "draft" else "version, accepted before,")
        lines.append(f"candidate {field(cand['version'])} ({cand['hash']}): {how} "
                     f"{field(cand['path'])}, {cand['status']}")
    held = r.get("held_out")
    if held:
        lines.append(f"held out, {held['n_items']} items (95% bootstrap intervals):")
        lines.append(f"  {'':12}{field(p['version']):<26}{field(cand['version'] if cand else '')}")
        for key in ("accuracy", "cohen_kappa", "tpr", "tnr"):
            a, b = held["parent"], held["candidate"]
            left = f"{_num(a.get(key))}{_ci(a['ci'].get(key))}"
            lines.append(f"  {key:12}{left:<26}{_num(b.get(key))}{_ci(b['ci'].get(key))}")
        g = held["gain"]
        lines.append(f"  agreement gain {_num(g['estimate'], True)}{_ci(g['ci'], True)} "
                     f"over {g['n']} items ({g['fixed']} fixed, {g['broke']} broken)")
        lines.append(f"  flipped {held['n_flipped']} of {held['n_common']} (fixed "
                     f"{held['n_fixed']}, broke {held['n_broke']})")
        for f in held["flipped"][:20]:
            lines.append(f"    {field(f['item_id'])}: {f['old']['label']} -> "
                         f"{f['new']['label']} (human {f['human'] or 'n/a'}"
                         f"{', ' + f['effect'] if f['effect'] else ''})")
        if len(held["flipped"]) > 20:
            lines.append(f"    … and {len(held['flipped']) - 20} more (--format json)")
    probes = r.get("probes")
    if probes:
        lines.append("probes on the held-out items (rate [95% Wilson interval] n):")
        lines.append(f"  {'':24}{field(p['version']):<30}{field(cand['version'] if cand else '')}")
        for row in probes["rates"]:
            if row["kind"] is not None and not row["measured"]:
                continue
            name = row["kind"] or f"{row['rate']} ({row['family']})"

            def cell(side: dict[str, Any] | None) -> str:
                if not side or not side["n"]:
                    return "n/a"
                return f"{_num(side['rate'])}{_ci(side['ci'])} n={side['n']}"
            mark = "  WORSE" if row["worse"] else ""
            lines.append(f"  {name:24}{cell(row['parent']):<30}{cell(row['candidate'])}{mark}")
    d = r["decision"]
    verdict = ("accepted: the default is now " + field(d["default_version"]) if d["accepted"]
               else "acceptable (not accepted: run with --accept)" if d["acceptable"]
               else "not acceptable: the candidate stays a draft" if cand
               else "nothing to accept")
    lines.append(f"decision: {verdict}")
    lines += [f"  {field(reason)}" for reason in d["reasons"]]
    cal = r.get("calibration") or {}
    if d["accepted"] and cal.get("next"):
        lines.append(f"  {field(d['default_version'])} is uncalibrated until fitted (every "
                     f"verdict of it goes to review): {field(cal['next'])}")
    return "\n".join(lines)
