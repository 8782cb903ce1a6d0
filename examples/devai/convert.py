"""Bring the DevAI judgments into judge: the published judge's verdicts and the people's labels.

    python examples/devai/convert.py [--data examples/data/devai]
                                     [--verdicts examples/devai/verdicts.jsonl]
                                     [--labels labels/devai.jsonl]
                                     [--sample labels/devai-sample.jsonl]

This is what a team does with another tool's verdicts and its own labels: write them in
judge's two file formats (formats §3 verdicts, §4 labels), one record per judged thing with
the same item id on both sides, and every `judge agreement`, `judge report agreement`,
`judge calibrate files` and `judge route` command works on them, no database needed.

The data (examples/data/devai/, MIT, metauto-ai/agent-as-a-judge: see its SOURCE.txt) is the
Agent-as-a-Judge paper's: 55 DevAI tasks, each done by three agent systems (OpenHands,
MetaGPT, GPT-Pilot), 366 requirements per system; for every requirement the human
evaluators' verdict and the gray-box LLM judge's (`satisfied`: true or false).

How it maps:

- one item per requirement of a task done by a system:
  `devai/<system>/<task>#<requirement_id + 1>:devai_requirement` (a seq is 1-based; DevAI's
  requirement ids start at 0);
- a verdict per item from `agent_as_a_judge/gray_box`: `pass` when satisfied, else `fail`
  naming the requirement (`violated_key: requirement_<id>`); `confidence` 1.0 — the judge
  states its verdict outright and reports no confidence (the project's own evaluation
  script, scripts/evaluate_confidence.py, reads a missing confidence as 1.0 too), so
  calibration learns what each of its two answers is worth; `prompt_version: gray_box`,
  `model: agent-as-a-judge`, and `prompt_hash` the sha256 of the judge's two prompt files
  (examples/data/devai/judge_prompt/, from the commit that published the judgments), so a
  calibration record fits these verdicts and no other judge's;
- a label per item from `human_as_a_judge` (annotator `devai-humans`, the evaluators'
  consensus, dated when the data was published);
- `metadata`: the system under test (`candidate: {agent: …}`: `judge agreement` breaks
  agreement down by it), the task, the requirement id and its category (`key`: the
  breakdown by key is then by category).

`--sample` also writes a seeded random third of the labels (about 366): what a team that
labelled a sample would hold, for estimating the pass rate of every verdict from it.
Running the script again writes the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.formats import HumanLabel, Verdict, item_id
from judge.labels import write_labels, write_verdicts

SYSTEMS = ("OpenHands", "MetaGPT", "GPT-Pilot")
RUBRIC = "devai_requirement"
PROMPT_VERSION = "gray_box"
MODEL = "agent-as-a-judge"
ANNOTATOR = "devai-humans"
#: when the judgments were published (commit d625bb4 of metauto-ai/agent-as-a-judge)
PUBLISHED = datetime(2024, 10, 16, 1, 44, 26, tzinfo=UTC)
PROMPT_FILES = ("system_prompt_judge.py", "prompt_judge.py")
SAMPLE_SHARE = 1 / 3


def prompt_hash(data: Path) -> str:
    """sha256 over the judge's system prompt and judge prompt files, in that order."""
    digest = hashlib.sha256()
    for name in PROMPT_FILES:
        digest.update((data / "judge_prompt" / name).read_bytes())
    return "sha256:" + digest.hexdigest()


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg})", file=str(path), line=exc.lineno) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("requirements"), list):
        raise InputError("expected a judgment object with a list of requirements",
                         file=str(path), field="requirements")
    return doc


def _satisfied(req: Any, path: Path, i: int) -> bool:
    value = req.get("satisfied") if isinstance(req, dict) else None
    if not isinstance(value, bool):
        raise InputError("expected true or false", file=str(path),
                         field=f"requirements[{i}].satisfied")
    return value


def _category(req: dict[str, Any]) -> str:
    """A requirement's category; the data spells one "Performence Metrics" three times."""
    category = str(req.get("category") or "(none)")
    return "Performance Metrics" if category == "Performence Metrics" else category


def records(data: Path) -> Iterator[tuple[Verdict, HumanLabel]]:
    """(verdict, label) per requirement of every task and system, in a fixed order."""
    phash = prompt_hash(data)
    for system in SYSTEMS:
        humans = sorted((data / "judgment" / system / "human_as_a_judge").glob("*.json"))
        if not humans:
            raise InputError("no judgment files", file=str(data / "judgment" / system))
        for human_path in humans:
            judge_path = (data / "judgment" / system / "agent_as_a_judge" / "gray_box"
                          / human_path.name)
            human, judged = _load(human_path), _load(judge_path)
            if len(human["requirements"]) != len(judged["requirements"]):
                raise InputError(f"{len(judged['requirements'])} requirements, the human "
                                 f"judgment has {len(human['requirements'])}",
                                 file=str(judge_path), field="requirements")
            task = human_path.stem
            for i, (h, j) in enumerate(zip(human["requirements"], judged["requirements"],
                                           strict=True)):
                rid = j.get("requirement_id") if isinstance(j, dict) else None
                if not isinstance(rid, int) or rid != h.get("requirement_id"):
                    raise InputError("requirement ids differ between the two judgments",
                                     file=str(judge_path),
                                     field=f"requirements[{i}].requirement_id")
                key = f"requirement_{rid}"
                meta = {"source": "devai", "candidate": {"agent": system}, "task": task,
                        "requirement_id": rid, "key": _category(j)}
                judge_ok, human_ok = _satisfied(j, judge_path, i), _satisfied(h, human_path, i)
                iid = item_id(f"devai/{system}/{task}", rid + 1, RUBRIC)
                yield (Verdict(item_id=iid, label="pass" if judge_ok else "fail",
                               violated_key=None if judge_ok else key, confidence=1.0,
                               rubric=RUBRIC, prompt_version=PROMPT_VERSION,
                               prompt_hash=phash, model=MODEL,
                               metadata={**meta, "confidence_reported": False}),
                       HumanLabel(item_id=iid, label="pass" if human_ok else "fail",
                                  violated_key=None if human_ok else key,
                                  annotator=ANNOTATOR, created_at=PUBLISHED, metadata=meta))


def in_sample(iid: str) -> bool:
    """A seeded draw (sha256 of the item id): the same third of the items on every run."""
    draw = int.from_bytes(hashlib.sha256(iid.encode("utf-8")).digest()[:8], "big") / 2**64
    return draw < SAMPLE_SHARE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the DevAI judgments as judge verdicts and labels (run it from the "
                    "repository root: the default paths are relative to it).")
    parser.add_argument("--data", type=Path, default=Path("examples/data/devai"))
    parser.add_argument("--verdicts", type=Path, default=Path("examples/devai/verdicts.jsonl"))
    parser.add_argument("--labels", type=Path, default=Path("labels/devai.jsonl"))
    parser.add_argument("--sample", type=Path, default=Path("labels/devai-sample.jsonl"))
    args = parser.parse_args(argv)
    try:
        pairs = list(records(args.data))
        n_verdicts = write_verdicts(args.verdicts, (v for v, _ in pairs))
        n_labels = write_labels(args.labels, (lab for _, lab in pairs))
        n_sample = write_labels(args.sample, (lab for _, lab in pairs if in_sample(lab.item_id)))
    except InputError as exc:
        print(f"convert.py: error: {exc.message}", file=sys.stderr)
        return 2
    print(f"wrote {n_verdicts} verdicts to {args.verdicts}, {n_labels} labels to "
          f"{args.labels} and {n_sample} of them to {args.sample}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
