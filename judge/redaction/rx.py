"""RE2 patterns (google-re2): linear-time matching, so no input can make a scan blow up.

Counted repetitions (`{1,500}`) multiply RE2's program size; patterns here use `+` and
check lengths in Python instead. Each pattern gets a 32 MiB budget for its DFA, so long
hostile texts do not push RE2 onto its slower fallback (which logs to stderr).
"""

from __future__ import annotations

from typing import Any

import re2

MAX_MEM = 32 << 20


def compile_re2(pattern: str) -> Any:
    opts = re2.Options()
    opts.max_mem = MAX_MEM
    return re2.compile(pattern, opts)
