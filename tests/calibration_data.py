"""Synthetic labels and verdicts files for calibration and report tests (known truth).

The judge is overconfident: P(its label equals the human's | confidence c) = c ** 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MODEL = "openai:gpt-4.1-mini"


def synth(
    n: int,
    *,
    seed: int = 0,
    rubric: str = "scope_fidelity",
    prompt_version: str = "v2",
    prompt_hash: str = "sha256:abc",
    model: str = MODEL,
    fail_share: float = 0.4,
    n_fail: int | None = None,
) -> tuple[list[dict], list[dict]]:
    rng = np.random.default_rng(seed)
    labels, verdicts = [], []
    for i in range(n):
        item = f"t{i}/run-1#3:{rubric}"
        human_fail = bool(rng.random() < fail_share) if n_fail is None else i < n_fail
        conf = float(rng.beta(4, 0.35))
        agree = bool(rng.random() < conf**3)
        judge_fail = human_fail if agree else not human_fail
        key = ["refundOnce", "budget", "allowList"][i % 3]
        labels.append({"item_id": item, "label": "fail" if human_fail else "pass",
                       "violated_key": key if human_fail else None,
                       "evidence_event": 3 if human_fail else None,
                       "annotator": "asha", "created_at": "2026-11-29T10:00:00Z"})
        verdicts.append({"item_id": item, "label": "fail" if judge_fail else "pass",
                         "violated_key": key if judge_fail else None,
                         "evidence_event": 3 if judge_fail else None,
                         "confidence": round(conf, 5), "rubric": rubric,
                         "prompt_version": prompt_version, "prompt_hash": prompt_hash,
                         "model": model})
    return labels, verdicts


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_files(folder: Path, n: int = 400, **kw: object) -> tuple[Path, Path]:
    labels, verdicts = synth(n, **kw)  # type: ignore[arg-type]
    return (write_jsonl(folder / "labels.jsonl", labels),
            write_jsonl(folder / "verdicts.jsonl", verdicts))
