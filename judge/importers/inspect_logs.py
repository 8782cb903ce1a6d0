"""Import inspect_ai eval logs: one trace per sample and epoch.

A `.json` log is `{"version", "status", "eval": {"task", "model", ...}, ..., "samples": [...]}`;
each sample has `id`, `epoch`, `messages` (ChatMessage: `role` system / user / assistant /
tool, `content` text or content parts, assistant `tool_calls` as `{id, function, arguments}`,
tool `tool_call_id`, `function`, `error: {type, message}`; server-side tools as `tool_use`
content with their `result`), `attachments` (long texts and images the messages name as
`attachment://<hash>`, put back in place here), `target`, `scores` and `metadata`. Samples
are read one at a time (ijson), so a large log streams. A `.eval` log (a zip with
`header.json` and one `samples/<id>_epoch_<n>.json` per sample) is read member by member,
each parsed as a stream; a member that decompresses to more than `max_member_bytes`
(`--max-member-bytes`, by its declared size before anything is read, and by what is read) is
bad input naming the member and the cap. A corrupt, encrypted or unknown-compression member
is said as such.

Every message of a sample is an event (the sample lists each once: five identical `ls`
calls are five calls). Trace ids are `<task>/<sample id>/<epoch>`; a sample and epoch listed
twice is written once as itself and then as `…/dup-2` (noted). The candidate is the log's
model; metadata keeps the task, `task_id` (the sample id, as a string) and `trial` (the
epoch), `sample_id`, `epoch`, the target and each score's value. System messages stay out of
the events (sha256 and length in `metadata.system_prompts`). Events keep their source
message: `metadata.source_message_id` (inspect's message `id`) and `metadata.source_message`
(its index in the sample's messages).
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from judge.errors import InputError
from judge.importers import jsonio
from judge.importers.conversation import Conversation
from judge.importers.imported import ImportedTrace
from judge.importers.jsonio import Capped, Pull, size_text
from judge.importers.messages import ShapeError, parse_messages
from judge.importers.report import ImportLog
from judge.importers.spanfile import _plain

ATTACHMENT = "attachment://"


def _scores(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for name, score in value.items():
        out[str(name)] = _plain(score.get("value")) if isinstance(score, dict) else score
    return out


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_plain))


def resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """`value` with every `attachment://<hash>` string replaced by the attachment."""
    if not attachments:
        return value
    if isinstance(value, str):
        if value.startswith(ATTACHMENT):
            found = attachments.get(value[len(ATTACHMENT):])
            return found if isinstance(found, str) else value
        return value
    if isinstance(value, dict):
        return {k: resolve(v, attachments) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, attachments) for v in value]
    return value


def sample_trace(sample: Any, spec: dict[str, Any], *, file: str, where: str,
                 scenario: str | None = None, prefix: str | None = None,
                 log: ImportLog | None = None) -> ImportedTrace | None:
    """One sample as a trace; a sample that cannot be read is noted in `log` (strict: its
    InputError, naming the file, the sample and the field) and None returned."""
    log = log if log is not None else ImportLog(file)
    try:
        return _sample_trace(sample, spec, file, where, scenario, prefix, log)
    except ShapeError as exc:
        log.problem(f"{exc}: the sample is left out", where=where, fld=exc.field)
        return None


def _sample_trace(sample: Any, spec: dict[str, Any], file: str, where: str,
                  scenario: str | None, prefix: str | None, log: ImportLog) -> ImportedTrace:
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
    attachments = sample.get("attachments")
    attachments = attachments if isinstance(attachments, dict) else {}
    task = prefix or str(spec.get("task") or Path(file).stem)
    conv = Conversation()
    events: list[dict[str, Any]] = []
    for i, raw in enumerate(messages):
        source: dict[str, Any] = {"source_message": i}
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            source["source_message_id"] = raw["id"]
        try:
            msgs = parse_messages(resolve(raw, attachments), f"messages[{i}]")
        except ShapeError as exc:
            log.problem(f"{exc}: the message is left out", where=f"{where} (sample {sid})",
                        fld=exc.field)
            continue
        events.extend(conv.messages(msgs, source))
    metadata: dict[str, Any] = {"source": "inspect", "task": task, "task_id": str(sid),
                                "trial": epoch, "sample_id": sid, "epoch": epoch}
    if isinstance(sample.get("input"), str):
        metadata["task_instruction"] = resolve(sample["input"], attachments)
    if sample.get("target") not in (None, "", []):
        metadata["target"] = _jsonable(sample["target"])
    if sample.get("scores"):
        metadata["scores"] = _scores(sample["scores"])
    if isinstance(sample.get("error"), dict):
        metadata["sample_error"] = _jsonable(sample["error"].get("message"))
    if conv.systems:
        metadata["system_prompts"] = conv.systems
    candidate = {"model": spec["model"]} if isinstance(spec.get("model"), str) else {}
    header = {"trace_id": f"{task}/{sid}/{epoch}", "scenario": scenario,
              "candidate": candidate, "metadata": metadata}
    return ImportedTrace(header, iter(events), file, conv.omitted)


# -- .json logs --------------------------------------------------------------------------------
def _top_level(p: Pull, want: str) -> bool:
    """Move the parser to the value of the top-level key `want` (False: it has none)."""
    ev, _ = p.next()
    if ev != "start_map":
        return False
    while True:
        ev, key = p.next()
        if ev == "end_map":
            return False
        if key == want:
            return True
        p.value()


def _eval_spec(opener: Callable[[], IO[bytes]], file: str) -> dict[str, Any]:
    p = Pull(jsonio.events(opener, file))
    try:
        if _top_level(p, "eval"):
            spec = p.value()
            return dict(spec) if isinstance(spec, dict) else {}
    except StopIteration:
        raise InputError("malformed JSON (the file ends inside the document)",
                         file=file) from None
    # no `eval` object: not an inspect log (a file of another format imported 0 traces)
    raise InputError('not an inspect eval log (expected {"eval": {...}, "samples": [...]})',
                     file=file, field="eval")


def _iter_json(p: Path, file: str, scenario: str | None, prefix: str | None,
               log: ImportLog, max_bytes: int) -> Iterator[ImportedTrace]:
    def opener() -> IO[bytes]:
        return jsonio.open_input(p, max_bytes=max_bytes)

    spec = _eval_spec(opener, file)
    pull = Pull(jsonio.events(opener, file))
    n = 0
    try:
        if _top_level(pull, "samples") and pull.peek()[0] == "start_array":
            pull.next()
            while pull.peek()[0] != "end_array":
                sample = pull.value()
                log.source["samples"] += 1
                t = sample_trace(sample, spec, file=file, where=f"samples[{n}]",
                                 scenario=scenario, prefix=prefix, log=log)
                n += 1
                if t is not None:
                    yield t
    except StopIteration:
        raise InputError("malformed JSON (the file ends inside the document)",
                         file=file) from None
    if n == 0:
        status = spec.get("status") if isinstance(spec.get("status"), str) else None
        raise InputError("nothing to import: the log has no samples"
                         + (f" (status {status})" if status else ""), file=file)


# -- .eval logs (zip) --------------------------------------------------------------------------
def _member_key(name: str) -> tuple[Any, ...]:
    """Samples in their natural order: `samples/2_epoch_1.json` before `samples/10_...`."""
    return tuple(int(part) if part.isdigit() else part
                 for part in re.split(r"(\d+)", name))


class _Zip:
    """One `.eval` archive, read member by member under the size cap."""

    def __init__(self, p: Path, file: str, max_bytes: int) -> None:
        self.file = file
        self.max_bytes = max_bytes
        try:
            self.zf = zipfile.ZipFile(p)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise InputError(f"not a readable .eval (zip) log ({jsonio.compact(exc)})",
                             file=file) from None

    def check(self, name: str) -> None:
        info = self.zf.getinfo(name)
        if info.file_size > self.max_bytes:
            raise InputError(f"member {name} is {size_text(info.file_size)} uncompressed, "
                             f"over the cap of {size_text(self.max_bytes)} "
                             "(--max-member-bytes raises it)", file=self.file)
        if info.flag_bits & 0x1:
            raise InputError(f"member {name} is encrypted (judge reads unencrypted logs)",
                             file=self.file)

    def opener(self, name: str) -> Callable[[], IO[bytes]]:
        def open_member() -> IO[bytes]:
            try:
                raw = self.zf.open(name)
            except NotImplementedError as exc:
                raise InputError(f"member {name} uses a compression judge cannot read "
                                 f"({jsonio.compact(exc)})", file=self.file) from None
            except RuntimeError as exc:  # encrypted
                raise InputError(f"member {name} cannot be read ({jsonio.compact(exc)})",
                                 file=self.file) from None
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError) as exc:
                raise InputError(f"member {name} is corrupt ({jsonio.compact(exc)})",
                                 file=self.file) from None
            return cast(IO[bytes], Capped(raw, self.max_bytes, f"member {name}", self.file))
        return open_member

    def load(self, name: str) -> Any:
        """A member as one value, parsed as a stream (its own errors name it)."""
        self.check(name)
        where = f"member {name}"
        p = Pull(self._events(name, where))
        try:
            value = p.value()
        except StopIteration:
            raise InputError("malformed JSON (the member ends inside the document)",
                             file=self.file, path=where) from None
        return value

    def _events(self, name: str, where: str) -> Iterator[tuple[str, Any]]:
        try:
            yield from jsonio.events(self.opener(name), self.file, where)
        except InputError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
                RuntimeError) as exc:
            raise InputError(f"member {name} is corrupt ({jsonio.compact(exc)})",
                             file=self.file) from None


def _iter_zip(p: Path, file: str, scenario: str | None, prefix: str | None,
              log: ImportLog, max_bytes: int) -> Iterator[ImportedTrace]:
    z = _Zip(p, file, max_bytes)
    with z.zf:
        names = z.zf.namelist()
        spec: dict[str, Any] = {}
        for head in ("header.json", "_journal/start.json"):
            if head in names:
                doc = z.load(head)
                spec = doc.get("eval", {}) if isinstance(doc, dict) else {}
                spec = spec if isinstance(spec, dict) else {}
                break
        samples = sorted((n for n in names if n.startswith("samples/") and
                          n.endswith(".json")), key=_member_key)
        if not samples:
            raise InputError("nothing to import: the log has no samples", file=file)
        for name in samples:
            log.source["samples"] += 1
            try:
                sample = z.load(name)
            except InputError as exc:
                log.error(exc, where=name)
                continue
            t = sample_trace(sample, spec, file=file, where=name, scenario=scenario,
                             prefix=prefix, log=log)
            if t is not None:
                yield t


def iter_inspect(path: str | Path, *, scenario: str | None = None,
                 prefix: str | None = None, log: ImportLog | None = None,
                 max_member_bytes: int | None = None) -> Iterator[ImportedTrace]:
    """One trace per sample and epoch of an inspect_ai log (`.json` or `.eval`)."""
    p = Path(path)
    file = str(path)
    jsonio.check_file(p)
    log = log if log is not None else ImportLog(file)
    max_bytes = jsonio.cap(max_member_bytes)
    if p.suffix == ".eval" or zipfile.is_zipfile(p):
        yield from _iter_zip(p, file, scenario, prefix, log, max_bytes)
    else:
        yield from _iter_json(p, file, scenario, prefix, log, max_bytes)
