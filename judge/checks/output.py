"""A `CheckReport` as `judge check` writes it, in each of its formats.

One function for whoever renders (the command's own process, or a worker process checking
part of a file for `--jobs N`), so every path writes the same bytes:

- `text`: `CheckReport.diagnosis()`; the command separates reports by a blank line.
- `json`: the report object indented as one element of the document's `"reports"` list
  (two spaces per level, four before each line after the first); the command adds the
  document around them.
- `jsonl`: the report object on one line, newline included.

Trace text is hostile: orjson escapes C0 controls; C1 controls (U+0080-U+009F), valid raw in
JSON but obeyed by some terminals, are escaped after it.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

import orjson

from judge.checks.report import CheckReport


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class Rendered(NamedTuple):
    """One checked trace as written: `out` is text (str) or JSON (bytes); where it was read
    (for the trace-id uniqueness check, judge.trace.unique)."""

    out: str | bytes
    eligible: bool
    trace_id: str = ""
    file: str = ""
    line: int | None = None


# UTF-8 of U+0080-U+009F is `\xc2\x80`-`\xc2\x9f`.
_C1 = re.compile(rb"\xc2([\x80-\x9f])")


def json_bytes(data: object, option: int = 0) -> bytes:
    """`data` as JSON (orjson `option`), C1 controls escaped too."""
    out = orjson.dumps(data, option=option)
    if b"\xc2" in out:
        out = _C1.sub(lambda m: b"\\u00%02x" % m.group(1)[0], out)
    return out


def render_report(report: CheckReport, fmt: ReportFormat, verbose: bool) -> Rendered:
    """The report in `fmt`; `verbose` lists passed findings too (json/jsonl)."""
    if fmt is ReportFormat.text:
        return Rendered(report.diagnosis(), report.eligible)
    doc = report.to_dict(passed_findings=verbose)
    if fmt is ReportFormat.jsonl:
        return Rendered(json_bytes(doc) + b"\n", doc["eligible"])
    body = json_bytes(doc, orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
    return Rendered(body, doc["eligible"])
