"""Redaction benchmark (issue 9): redaction CPU per item next to `judge grade`'s, in one run.

Items are the 200 tau-bench airline trajectories (examples/data/tau-bench-airline) under the
tau-airline scenario, both rubrics, as `judge grade` extracts them. Figures:

1. redaction CPU per item: every item rendered with the new engine wired in as render.py
   will use it (`judge.redaction.compat.Scrubber` in place of the old one), minus the same
   renders with a scrubber that changes nothing — best of `--repeat`; also the engine
   alone on each item's data blocks (`ItemRedactor.texts`);
2. `judge grade` CPU per item: the whole command as a user runs it (a child process: start,
   import, load, checks, extract, render, the openai SDK against the fake server
   judge/testing/fakeserver.py at 0 ms latency, verdict parsing, the JSONL call cache,
   output), child-process CPU from getrusage ÷ items graded; and the in-process grading
   engine alone (`grade_items`, as benchmarks/grading.py measures it);
3. the ratio: target redaction ≤ 10% of `judge grade`'s CPU per item;
4. each detector alone on the same blocks, the word list's one-time load, and a large
   hostile text (linear time).
Optional `--detect-secrets`: the CPU of Yelp's detect-secrets over the same item texts
(needs `pip install detect-secrets`; the reason gitleaks rules were chosen instead).

`--baseline REV` (issue 21: before and after, in one run): the `judge` package of git
revision REV (`git archive` of `judge/` and `prompts/`, into a temporary directory; REV
`$(git merge-base HEAD main)` measures a branch against where it started) and the
working tree's are each
measured in child processes, taking turns `--repeat` times: redaction CPU per item inside
render, the engine alone, what it replaced on these items by class (a rule that fires on
tau-bench's ordinary airline data would show here), and `judge grade` as a user runs it.

Run: .venv/bin/python benchmarks/redaction.py [--repeat 3] [--detect-secrets]
     [--baseline main]
"""

from __future__ import annotations

import sys


def _use_tree() -> None:
    """`--judge-from DIR`: import `judge` from DIR, not from the editable install (whose
    finder is first on sys.meta_path); for the baseline's child processes."""
    if "--judge-from" not in sys.argv:
        return
    i = sys.argv.index("--judge-from")
    tree = sys.argv[i + 1]
    del sys.argv[i:i + 2]
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path[:] = [tree] + [p for p in sys.path if "__editable__" not in p]


_use_tree()
if len(sys.argv) > 1 and sys.argv[1] == "--cli":  # `judge …` on that tree, nothing else
    sys.argv = ["judge", *sys.argv[2:]]
    from judge.cli.main import main as _judge

    _judge()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "examples/data/tau-bench-airline/historical_trajectories/gpt-4o-airline.json"
SCENARIO = ROOT / "examples/scenarios/tau-airline"
RUBRICS = ("scope_fidelity", "summary_fidelity")

from judge.grading.cache import JsonlCache  # noqa: E402
from judge.grading.engine import GradingStats, grade_items  # noqa: E402
from judge.importers import iter_tau_bench, write_traces  # noqa: E402
from judge.items import Item, extract_items  # noqa: E402
from judge.items.slice import dumps  # noqa: E402
from judge.ledger import load_scenario  # noqa: E402
from judge.prompts import load_prompt, render  # noqa: E402
from judge.providers.base import ModelParams  # noqa: E402
from judge.providers.registry import make_provider  # noqa: E402
from judge.redaction import ItemRedactor, compat  # noqa: E402
from judge.redaction.engine import _intrinsic  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.testing.fakeserver import FakeProviderServer  # noqa: E402

RENDER = sys.modules["judge.prompts.render"]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def tau_items() -> list[Item]:
    loaded = load_scenario(SCENARIO)
    return [it for t in iter_tau_bench(TAU) for it in extract_items(loaded, t, list(RUBRICS))]


class _NoScrub:
    """A scrubber that changes nothing: the render cost without redaction."""

    secrets = True
    counts: dict[str, int] = {}  # noqa: RUF012 - read-only, never filled

    def __init__(self, redaction: Any, candidate: Any, names: Any = ()) -> None:
        pass

    def value(self, v: Any) -> Any:
        return v

    def texts(self, pieces: list[str]) -> list[str]:
        return pieces


def _never(_text: str) -> bool:
    return False


def _render_cpu(items: list[Item], scrubber: type, may_hold: Callable[[str], bool]) -> float:
    prompts = {r: load_prompt(r) for r in RUBRICS}
    saved = RENDER.Scrubber, RENDER.may_hold_secret_fields
    RENDER.Scrubber, RENDER.may_hold_secret_fields = scrubber, may_hold
    _intrinsic.cache_clear()  # each pass renders every item as a run would: once
    try:
        t0 = time.process_time()
        for it in items:
            render(prompts[it.rubric], it, ModelParams())
        return (time.process_time() - t0) / len(items)
    finally:
        RENDER.Scrubber, RENDER.may_hold_secret_fields = saved


def bench_redaction(items: list[Item], repeat: int) -> float:
    from judge.redaction.gitleaks import ruleset

    t0 = time.process_time()
    rules = ruleset()  # once per process: read the TOML, compile every rule
    load = time.process_time() - t0
    print(f"[redaction] one-time per process: gitleaks rule set loaded and compiled "
          f"({len(rules.rules)} rules) in {load * 1e3:.0f} ms CPU")
    _render_cpu(items[:20], compat.Scrubber, compat.may_hold_secret_fields)  # warm up
    import judge.prompts.redact as current

    none: list[float] = []
    new: list[float] = []
    old: list[float] = []
    for _ in range(repeat):  # interleaved, so all see the same machine load
        none.append(_render_cpu(items, _NoScrub, _never))
        new.append(_render_cpu(items, compat.Scrubber, compat.may_hold_secret_fields))
        old.append(_render_cpu(items, current.Scrubber, current.may_hold_secret_fields))
    blocks = [[it.goal, dumps(it.ledger), *(dumps(e) for e in it.events), dumps(it.target)]
              for it in items]
    engine: list[float] = []
    for _ in range(repeat):
        _intrinsic.cache_clear()
        t0 = time.process_time()
        for it, pieces in zip(items, blocks, strict=True):
            ItemRedactor(None, it.candidate).texts(pieces)
        engine.append((time.process_time() - t0) / len(items))
    chars = sum(sum(len(p) for p in b) for b in blocks) / len(blocks)
    cost = min(new) - min(none)
    print(f"[redaction] {len(items)} tau-bench airline items (mean {chars:,.0f} characters of "
          f"data each), best of {repeat}:")
    print(f"[redaction]   render without redaction {min(none) * 1e3:.3f} ms/item, with the "
          f"engine {min(new) * 1e3:.3f} ms/item -> redaction {cost * 1e3:.3f} ms/item")
    print(f"[redaction]   engine alone on the item's data (one ItemRedactor, texts()): "
          f"{min(engine) * 1e3:.3f} ms/item")
    _render_cpu(items, compat.Scrubber, compat.may_hold_secret_fields)
    info = _intrinsic.cache_info()
    print(f"[redaction]   per-text detection cache in one pass: {info.hits} of "
          f"{info.hits + info.misses} block scans reused (goal and ledger blocks recur)")
    same = current.Scrubber is compat.Scrubber
    print(f"[redaction]   the scrubber judge.prompts.redact exports now"
          f"{' (this engine)' if same else ' (the old regex list)'}: "
          f"{(min(old) - min(none)) * 1e3:.3f} ms/item")
    return cost


def bench_breakdown(items: list[Item], repeat: int) -> None:
    """Each detector alone over every item's four data blocks (as render hands them over)."""
    from judge.redaction import gitleaks, identity, numbers, pii, secrets
    from judge.redaction.normalize import view

    try:  # issue 21's detectors (absent from a baseline older than them)
        from judge.redaction import phrases, spelled
    except ImportError:
        phrases = spelled = None
    from judge.redaction.words import _counts, is_common_word

    blocks = [text for it in items for text in (
        it.goal, dumps(it.ledger), "\n".join(dumps(e) for e in it.events), dumps(it.target))]
    parts: list[tuple[str, Callable[[str], object]]] = [
        ("own secret rules (secrets.py)", lambda t: list(secrets.find_secrets(t, t.lower()))),
        ("gitleaks rule set (keyword gate + gated rules)",
         lambda t: list(gitleaks.find_gitleaks(t, t.lower()))),
        ("cards (digit runs, Luhn, networks)", numbers.find_cards),
        ("SSNs", lambda t: numbers.find_ssns(t, t.lower())),
        ("emails", pii.find_emails),
        ("phones (prefilter + phonenumberslite)", pii.find_phones),
        ("identity (view + names)", lambda t: list(identity.find_builtin(view(t)))),
    ]
    if phrases is not None and spelled is not None:
        parts += [
            ("credential phrases (phrases.py: keyword pass + bounded reads)",
             lambda t: list(phrases.find_phrases(t))),
            ("names spelled out (spelled.py: run pass + names on each run)",
             lambda t: list(spelled.spelled_names(view(t).text, identity._builtin, None,
                                                  identity._tail, lambda i, first: True,
                                                  folded=not t.isascii()))),
            ("identity as the engine runs it (view, names, spelled-out runs, edges)",
             lambda t: list(identity.find_identity(t, view(t), t.lower(), None, None))),
        ]
    for name, fn in parts:
        best = min(_timed(blocks, fn) for _ in range(repeat))
        print(f"[breakdown]   {name}: {best / len(items) * 1e3:.3f} ms/item")
    _counts.cache_clear()
    is_common_word.cache_clear()
    t0 = time.process_time()
    is_common_word("helper")
    print(f"[breakdown]   English word list (pyspellchecker), loaded once and only when a "
          f"candidate value is one alphabetic word: {(time.process_time() - t0) * 1e3:.0f} ms")


def _timed(blocks: list[str], fn: Callable[[str], object]) -> float:
    t0 = time.process_time()
    for text in blocks:
        fn(text)
    return time.process_time() - t0


def bench_hostile() -> None:
    """Linear on hostile input: one large text full of things to redact."""
    n = 20_000
    doc = json.dumps({"emails": [f"user{i}@example.com" for i in range(n)],
                      "cards": ["4111 1111 1111 1111"] * (n // 10),
                      "fields": [{"password": f"pw-{i:06d}"} for i in range(n // 10)],
                      "names": ["gpt-4o"] * (n // 10)})
    for scale in (1, 2):
        text = doc if scale == 1 else doc[:-1] + ", " + doc[1:]
        red = ItemRedactor(None, {"model": "m"})
        t0 = time.process_time()
        red.text(text)
        cpu = time.process_time() - t0
        print(f"[hostile] {len(text) / 1e6:.2f} MB of JSON, {sum(red.counts.values()):,} "
              f"values redacted: {cpu:.2f} s CPU")
    # issue 21's passes at their worst: a keyword every few characters, each read after;
    # a name spelled out over and over
    for what, unit in (("credential phrases", "PIN 1234, CVV 567; password hunter7x "),
                       ("keywords without a value", "the password policy and token count "),
                       ("spelled-out names", "c l a u d e ")):
        for n in (20_000, 40_000):
            text = unit * n
            red = ItemRedactor(None, {"model": "m"})
            t0 = time.process_time()
            red.text(text)
            cpu = time.process_time() - t0
            print(f"[hostile] {len(text) / 1e6:.2f} MB of {what}, "
                  f"{sum(red.counts.values()):,} values redacted: {cpu:.2f} s CPU")


def engine_figures(items: list[Item], repeat: int) -> dict[str, Any]:
    """Redaction CPU per item (render minus a no-op scrubber; the engine alone), best of
    `repeat`, and what was replaced by class over all items (one pass)."""
    _render_cpu(items[:20], compat.Scrubber, compat.may_hold_secret_fields)  # warm up
    none: list[float] = []
    new: list[float] = []
    for _ in range(repeat):
        none.append(_render_cpu(items, _NoScrub, _never))
        new.append(_render_cpu(items, compat.Scrubber, compat.may_hold_secret_fields))
    blocks = [[it.goal, dumps(it.ledger), *(dumps(e) for e in it.events), dumps(it.target)]
              for it in items]
    engine: list[float] = []
    counts: Counter[str] = Counter()
    for r in range(repeat):
        _intrinsic.cache_clear()
        t0 = time.process_time()
        for it, pieces in zip(items, blocks, strict=True):
            red = ItemRedactor(None, it.candidate)
            red.texts(pieces)
            if r == 0:
                counts.update(red.counts)
        engine.append((time.process_time() - t0) / len(items))
    import judge

    return {"render_ms": min(none) * 1e3, "redaction_ms": (min(new) - min(none)) * 1e3,
            "engine_ms": min(engine) * 1e3, "counts": dict(counts), "items": len(items),
            "judge": judge.__file__}


def _tree_cmd(tree: Path | None, *args: str) -> list[str]:
    extra = ["--judge-from", str(tree)] if tree is not None else []
    return [sys.executable, str(Path(__file__).resolve()), *extra, *args]


def bench_baseline(rev: str, repeat: int, tmp: Path, base_url: str) -> None:
    """REV's judge package against the working tree's, in turns (see the docstring)."""
    tree = tmp / "baseline"
    tree.mkdir()
    top = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev],
                         capture_output=True, text=True, check=True).stdout.split()
    # the package, and the prompts where a revision keeps them outside it
    paths = [p for p in ("judge", "prompts") if p in top]
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *paths],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev],
                         capture_output=True, text=True, check=True).stdout.strip()
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    grades: dict[str, list[float]] = {"before": [], "after": []}
    traces = tmp / "tau.jsonl"
    if not traces.exists():
        write_traces(iter_tau_bench(TAU), traces)
    for _ in range(repeat):
        for label, where in (("before", tree), ("after", None)):
            out = subprocess.run(_tree_cmd(where, "--engine-only"), capture_output=True,
                                 text=True, check=True).stdout
            figures = json.loads(out.strip().splitlines()[-1])
            # the child measured the tree it was given, not the editable install
            assert (str(tree) in figures["judge"]) == (where is not None), figures["judge"]
            runs[label].append(figures)
            grades[label].append(_grade_cpu(tmp, base_url, _tree_cmd(where, "--cli")))
    print(f"[before/after] {rev} ({sha}) vs the working tree, {repeat} turns each, "
          f"best of each; {_load()}")
    rows = [("redaction inside render, ms CPU/item", "redaction_ms"),
            ("the engine alone (ItemRedactor.texts), ms CPU/item", "engine_ms"),
            ("render without redaction, ms CPU/item", "render_ms")]
    for title, key in rows:
        b = min(r[key] for r in runs["before"])
        a = min(r[key] for r in runs["after"])
        print(f"[before/after]   {title}: {b:.3f} -> {a:.3f} ({a / b:.2f}x)")
    gb, ga = min(grades["before"]), min(grades["after"])
    print(f"[before/after]   `judge grade` (whole command), ms CPU/item: {gb * 1e3:.3f} -> "
          f"{ga * 1e3:.3f} ({ga / gb:.2f}x); redaction / judge grade: "
          f"{min(r['redaction_ms'] for r in runs['before']) / (gb * 1e3):.1%} -> "
          f"{min(r['redaction_ms'] for r in runs['after']) / (ga * 1e3):.1%}")
    cb, ca = runs["before"][0]["counts"], runs["after"][0]["counts"]
    print("[before/after]   replaced on these items, by class: " + ", ".join(
        f"{c} {cb.get(c, 0)} -> {ca.get(c, 0)}" for c in sorted(set(cb) | set(ca))))


def _grade_cpu(tmp: Path, base_url: str, launcher: list[str]) -> float:
    """`judge grade` over the tau-bench traces (a fresh call cache): child CPU per item."""
    cache = tmp / f"calls-{time.monotonic_ns()}.jsonl"
    out = tmp / "verdicts.jsonl"
    cmd = [*launcher, "grade", str(SCENARIO), str(tmp / "tau.jsonl"), "--model",
           "openai:bench-judge", "--base-url", base_url, "--concurrency", "50", "--cache",
           str(cache), "-o", str(out)]
    before = _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    cpu = _children_cpu() - before
    if proc.returncode not in (0, 1):
        raise SystemExit(f"judge grade failed ({proc.returncode}): {proc.stderr[-500:]}")
    n = sum(1 for line in out.read_text().splitlines() if line.strip())
    return cpu / n


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench_grade_command(tmp: Path, base_url: str) -> tuple[float, int]:
    traces = tmp / "tau.jsonl"
    if not traces.exists():
        write_traces(iter_tau_bench(TAU), traces)
    cache = tmp / f"calls-{time.monotonic_ns()}.jsonl"
    out = tmp / "verdicts.jsonl"
    cmd = [sys.executable, "-m", "judge.cli.main", "grade", str(SCENARIO), str(traces),
           "--model", "openai:bench-judge", "--base-url", base_url, "--concurrency", "50",
           "--cache", str(cache), "-o", str(out)]
    before = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ},
                          check=False)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - before
    if proc.returncode not in (0, 1):
        raise SystemExit(f"judge grade failed ({proc.returncode}): {proc.stderr[-500:]}")
    n = sum(1 for line in out.read_text().splitlines() if line.strip())
    print(f"[grade]   `judge grade` (whole command, {n} items, fake server 0 ms, concurrency "
          f"50): {wall:.2f} s wall, {cpu:.2f} s CPU -> {cpu / n * 1e3:.3f} ms CPU/item")
    return cpu / n, n


def bench_grade_engine(items: list[Item], base_url: str) -> float:
    async def go() -> float:
        settings = Settings.load(environ={}, base_url=base_url, concurrency=50)
        provider = make_provider("openai:bench-judge", settings)
        prompts = {r: load_prompt(r) for r in RUBRICS}
        with tempfile.TemporaryDirectory() as d, JsonlCache(Path(d) / "c.jsonl") as cache:
            c0 = time.process_time()
            for rubric, prompt in prompts.items():
                mine = [it for it in items if it.rubric == rubric]
                await grade_items(mine, prompt, provider, cache, params=ModelParams(),
                                  concurrency=50, rpm=None, retries=4, stats=GradingStats())
            cpu = time.process_time() - c0
        await provider.aclose()
        return cpu / len(items)

    per = asyncio.run(go())
    print(f"[grade]   grading engine in process (render, SDK, parse, JSONL cache): "
          f"{per * 1e3:.3f} ms CPU/item")
    return per


def bench_detect_secrets(items: list[Item]) -> None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        print("[detect-secrets] not installed (pip install detect-secrets)")
        return
    texts = ["\n".join([it.goal, dumps(it.ledger), *(dumps(e) for e in it.events)])
             for it in items[:100]]
    with default_settings():
        t0 = time.process_time()
        for text in texts:
            for line in text.splitlines():
                list(scan_line(line))
        per = (time.process_time() - t0) / len(texts)
    print(f"[detect-secrets] default plugins over the same item texts: {per * 1e3:.1f} ms "
          f"CPU/item ({len(texts)} items)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--detect-secrets", action="store_true")
    ap.add_argument("--baseline", metavar="REV",
                    help="also measure git revision REV's judge package, in turns")
    ap.add_argument("--engine-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    items = tau_items()
    if args.engine_only:  # a child of --baseline: one JSON line
        print(json.dumps(engine_figures(items, args.repeat)))
        return
    print(f"{_load()}")
    red = bench_redaction(items, args.repeat)
    bench_breakdown(items, args.repeat)
    bench_hostile()
    with tempfile.TemporaryDirectory() as d, FakeProviderServer(latency=0.0, process=True) as srv:
        runs = [bench_grade_command(Path(d), srv.openai_base_url)
                for _ in range(args.repeat)]
        grade = min(r[0] for r in runs)
        engine = bench_grade_engine(items, srv.openai_base_url)
    ratio = red / grade
    print(f"[ratio] redaction {red * 1e3:.3f} ms / judge grade {grade * 1e3:.3f} ms CPU per "
          f"item = {ratio:.1%} (target <= 10%: {'OK' if ratio <= 0.10 else 'MISSED'}); of the "
          f"grading engine alone: {red / engine:.1%}; {_load()}")
    if args.detect_secrets:
        bench_detect_secrets(items)
    if args.baseline:
        with tempfile.TemporaryDirectory() as d, \
                FakeProviderServer(latency=0.0, process=True) as srv:
            bench_baseline(args.baseline, args.repeat, Path(d), srv.openai_base_url)


if __name__ == "__main__":
    main()
