"""Split judge traces (a .jsonl file) by trial and by task, for the README's worked example
of `judge compare` and `judge canary` on the tau-bench airline runs.

tau-bench ran gpt-4o four times on each of its 50 airline tasks; `judge import tau-bench`
writes each run's `metadata.task_id` and `metadata.trial`. Two trials of each task stand in
for a baseline version, the other two for a candidate (the same agent: any difference
between them is the agent's own run-to-run variation), and a candidate's tasks in id order
stand in for the traffic of a staged rollout:

    python examples/rollout/split.py out/tau.jsonl --trials 0,1 -o out/baseline.jsonl
    python examples/rollout/split.py out/tau.jsonl --trials 2,3 -o out/candidate.jsonl
    python examples/rollout/split.py out/candidate.jsonl --tasks 0-2 -o out/stage-05.jsonl

Lines are copied as they are (the traces are not re-encoded); a line without the metadata
asked about is left out. Plain Python, no judge import: this is what a team's own pipeline
would do with its own runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def numbers(spec: str) -> set[int]:
    """'0,1' or '0-12' or '0-2,7' -> the integers."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", type=Path, help="a judge .jsonl trace file")
    ap.add_argument("--trials", help="keep these metadata.trial values (0,1 or 0-1)")
    ap.add_argument("--tasks", help="keep these integer metadata.task_id values (0-12)")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the .jsonl to write")
    args = ap.parse_args(argv)
    trials = numbers(args.trials) if args.trials else None
    tasks = numbers(args.tasks) if args.tasks else None
    kept = 0
    with args.traces.open(encoding="utf-8") as src, \
            args.output.open("w", encoding="utf-8") as out:
        for line in src:
            if not line.strip():
                continue
            meta = json.loads(line).get("metadata") or {}
            if trials is not None and meta.get("trial") not in trials:
                continue
            if tasks is not None and int(meta.get("task_id", -1)) not in tasks:
                continue
            out.write(line if line.endswith("\n") else line + "\n")
            kept += 1
    print(f"wrote {kept} trace(s) to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
