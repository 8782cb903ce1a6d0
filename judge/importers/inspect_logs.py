"""Import inspect_ai eval logs: one trace per sample and epoch.

A `.json` log is `{"version", "status", "eval": {"task", "model", ...}, ..., "samples": [...]}`;
each sample has `id`, `epoch`, `messages` (ChatMessage: `role` system / user / assistant /
tool, `content` text or content parts, assistant `tool_calls` as `{id, function, arguments}`,
tool `tool_call_id`, `function`, `error: {type, message}`), `target`, `scores` and
`metadata`. Samples are read one at a time (ijson), so a large log streams. A `.eval` log (a
zip with `header.json` and one `samples/<id>_epoch_<n>.json` per sample) is read member by
member.

Trace ids are `<task>/<sample id>/<epoch>`; the candidate is the log's model; metadata keeps
the task, sample id, epoch, target and each score's value. System messages stay out of the
events (sha256 and length in `metadata.system_prompts`). Events keep their source message:
`metadata.source_message_id` (inspect's message `id`, when the log has one) and
`metadata.source_message` (its index in the sample's messages).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import ijson

from judge.errors import InputError
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Conversation, ShapeError, parse_messages
from judge.importers.spanfile import _plain


def _scores(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for name, score in value.items():
        out[str(name)] = _plain(score.get("value")) if isinstance(score, dict) else score
    return out


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_plain))


def sample_trace(sample: Any, spec: dict[str, Any], *, file: str, where: str,
                 scenario: str | None = None, prefix: str | None = None) -> ImportedTrace:
    """One sample as a trace; InputError names the file, the sample and the field."""
    try:
        return _sample_trace(sample, spec, file, where, scenario, prefix)
    except ShapeError as exc:
        raise InputError(str(exc), file=file, path=where, field=exc.field) from None


def _sample_trace(sample: Any, spec: dict[str, Any], file: str, where: str,
                  scenario: str | None, prefix: str | None) -> ImportedTrace:
    if not isinstance(sample, dict):
        raise ShapeError("expected a sample object", "samples")
    sid = sample.get("id")
    if not isinstance(sid, str | int) or isinstance(sid, bool):
        raise ShapeError("expected the sample id (a string or integer)", "id")
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        raise ShapeError("expected an integer", "epoch")
    messages = sample.get("messages")
    if not isinstance(messages, list):
        raise ShapeError("expected the sample's message list", "messages")
    task = prefix or str(spec.get("task") or Path(file).stem)
    conv = Conversation()
    events: list[dict[str, Any]] = []
    for i, raw in enumerate(messages):
        source: dict[str, Any] = {"source_message": i}
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            source["source_message_id"] = raw["id"]
        events.extend(conv.inputs(parse_messages(raw, f"messages[{i}]"), source))
    metadata: dict[str, Any] = {"source": "inspect", "task": task, "sample_id": sid,
                                "epoch": epoch}
    if isinstance(sample.get("input"), str):
        metadata["task_instruction"] = sample["input"]
    if sample.get("target") not in (None, "", []):
        metadata["target"] = _jsonable(sample["target"])
    if sample.get("scores"):
        metadata["scores"] = _scores(sample["scores"])
    if conv.systems:
        metadata["system_prompts"] = conv.systems
    candidate = {"model": spec["model"]} if isinstance(spec.get("model"), str) else {}
    header = {"trace_id": f"{task}/{sid}/{epoch}", "scenario": scenario,
              "candidate": candidate, "metadata": metadata}
    return ImportedTrace(header, iter(events), file)


def _eval_spec(fh: IO[bytes], file: str) -> dict[str, Any]:
    try:
        for spec in ijson.items(fh, "eval"):
            return dict(spec) if isinstance(spec, dict) else {}
    except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
        raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:100]})",
                         file=file) from None
    # no `eval` object: not an inspect log (a file of another format imported 0 traces)
    raise InputError('not an inspect eval log (expected {"eval": {...}, "samples": [...]})',
                     file=file, field="eval")


def _iter_json(p: Path, file: str, scenario: str | None,
               prefix: str | None) -> Iterator[ImportedTrace]:
    with p.open("rb") as fh:
        spec = _eval_spec(fh, file)
    with p.open("rb") as fh:
        try:
            for n, sample in enumerate(ijson.items(fh, "samples.item", use_float=True)):
                yield sample_trace(sample, spec, file=file, where=f"samples[{n}]",
                                   scenario=scenario, prefix=prefix)
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:100]})",
                             file=file) from None


def _iter_zip(p: Path, file: str, scenario: str | None,
              prefix: str | None) -> Iterator[ImportedTrace]:
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"not a readable .eval (zip) log ({exc})", file=file) from None
    with zf:
        names = zf.namelist()
        spec: dict[str, Any] = {}
        for head in ("header.json", "_journal/start.json"):
            if head in names:
                doc = _load(zf, head, file)
                spec = doc.get("eval", {}) if isinstance(doc, dict) else {}
                break
        for name in sorted(n for n in names if n.startswith("samples/")
                           and n.endswith(".json")):
            yield sample_trace(_load(zf, name, file), spec, file=file, where=name,
                               scenario=scenario, prefix=prefix)


def _load(zf: zipfile.ZipFile, name: str, file: str) -> Any:
    try:
        return json.loads(zf.read(name))
    except (ValueError, RecursionError, zipfile.BadZipFile) as exc:
        raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:100]})", file=file,
                         path=name) from None


def iter_inspect(path: str | Path, *, scenario: str | None = None,
                 prefix: str | None = None) -> Iterator[ImportedTrace]:
    """One trace per sample and epoch of an inspect_ai log (`.json` or `.eval`)."""
    p = Path(path)
    file = str(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    if p.suffix == ".eval" or zipfile.is_zipfile(p):
        yield from _iter_zip(p, file, scenario, prefix)
    else:
        yield from _iter_json(p, file, scenario, prefix)
