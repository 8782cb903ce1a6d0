"""Summarise a py-spy raw (collapsed-stack) profile: where the samples of each process go.

    .venv/bin/python benchmarks/profile_top.py PROFILE.txt [--top 25] [--process N]

For each process (py-spy `--subprocesses` prefixes every stack with `process PID:"cmd"`),
prints its share of all samples, the functions with the most samples *inclusive* (a function
counted once per stack it is on) and *self* (the innermost frame), and the share of the
stages named in STAGES (first match from the innermost frame outwards, so a stage nested in
another is counted as the inner one).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

#: stage name -> regex on a frame "function (file:line)"; tried innermost first
STAGES: list[tuple[str, str]] = [
    ("imports", r"^(<module>|_find_and_load|_call_with_frames_removed) "),
    ("redaction", r"\(judge/redaction/"),
    ("render", r"\(judge/prompts/render\.py"),
    ("checks (judge/checks, ledger)", r"\(judge/(checks|ledger)/"),
    ("trace loading", r"\(judge/trace/"),
    ("items", r"\(judge/items/"),
    ("verdict parsing", r"\(judge/verdicts/"),
    ("cache keys", r"\(judge/grading/keys\.py"),
    ("store (judge/store, sqlalchemy, sqlite3)", r"\(judge/store/|\(sqlalchemy/|sqlite3"),
    ("pickle / pipe", r"_ForkingPickler|Connection\.(recv|send)|_recv_bytes|loads \(|"
                      r"CheckerProcess\.traces|ParentPipe"),
    ("openai SDK", r"\(openai/"),
    ("httpx / httpcore / anyio / h11", r"\((httpx|httpcore|anyio|h11)/"),
    ("pydantic", r"\(pydantic(_core)?/"),
    ("event loop (asyncio)", r"\(asyncio/|selectors\.py"),
    ("grading engine / pipeline", r"\(judge/(grading|pipeline)/"),
    ("CLI / output", r"\(judge/cli/|\(typer/|\(click/|\(rich/|\(judge/outputs\.py"),
]
_PROC = re.compile(r'process (\d+):"([^"]*)";?')


def read(path: Path) -> dict[str, Counter[tuple[str, ...]]]:
    """Samples per process: stack (outermost first) -> count."""
    out: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        proc = "?"
        # with --subprocesses a child's stacks start with its ancestors' process frames too
        # (a command line may hold ';', so these are cut off before splitting the frames)
        while (m := _PROC.match(stack)) is not None:
            proc = f"{m.group(1)} {' '.join(m.group(2).split())[-90:]}"
            stack = stack[m.end():]
        frames = stack.split(";") if stack else []
        out[proc][tuple(frames)] += int(n)
    return out


def stage_of(frames: tuple[str, ...]) -> str:
    for frame in reversed(frames):
        for name, rx in STAGES:
            if re.search(rx, frame):
                return name
    return "other"


def short(frame: str) -> str:
    return frame.replace("/work/i25-cpu/", "").replace(".venv/lib/python3.11/site-packages/", "")


def report(path: Path, top: int) -> None:
    procs = read(path)
    total = sum(sum(c.values()) for c in procs.values())
    print(f"{path}: {total} samples")
    for proc, stacks in sorted(procs.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(stacks.values())
        print(f"\n== process {proc}: {n} samples, {n / total:.1%} of all")
        stages: Counter[str] = Counter()
        incl: Counter[str] = Counter()
        self_: Counter[str] = Counter()
        for frames, k in stacks.items():
            stages[stage_of(frames)] += k
            for f in set(frames):
                incl[f] += k
            if frames:
                self_[frames[-1]] += k
        print("  stages (innermost match):")
        for name, k in stages.most_common():
            print(f"    {k / n:6.1%}  {name}")
        print(f"  top {top} inclusive:")
        for f, k in incl.most_common(top):
            print(f"    {k / n:6.1%}  {short(f)}")
        print(f"  top {top} self:")
        for f, k in self_.most_common(top):
            print(f"    {k / n:6.1%}  {short(f)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("profile", type=Path)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    report(args.profile, args.top)


if __name__ == "__main__":
    main()
