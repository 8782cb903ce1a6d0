"""What makes a `judge_scenarios` or `judge_traces` pattern one pytest can use (issue #21: a
pattern such as `[` used to collect nothing, silently).

A pattern is refused, at start-up, when it is empty, when a `[` opens a character class that
no `]` closes (`fnmatch` and `glob` would then look for a literal `[`), or when it looks like
a TOML list written into an INI file (`["scenario.yaml"]`: INI takes one glob per line, no
brackets or quotes).
"""

from __future__ import annotations


def unclosed_bracket(pattern: str) -> int | None:
    """The index of a `[` that no `]` closes (as `fnmatch` reads classes), else None."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "[":
            j = i + 1
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":  # a `]` first in the class is a member
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                return i
            i = j + 1
        else:
            i += 1
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used as a glob, or None."""
    if not pattern.strip():
        return "an empty pattern"
    stripped = pattern.strip()
    if stripped.startswith("[") and stripped.endswith("]") and any(q in stripped
                                                                    for q in "\"'"):
        return ("this looks like a TOML list; in an INI file (pytest.ini, tox.ini, "
                "setup.cfg) give one glob per line, without brackets or quotes")
    at = unclosed_bracket(pattern)
    if at is not None:
        return (f"the '[' at position {at + 1} opens a character class that is never "
                "closed (write [[] for a literal '[')")
    return None


def check_patterns(option: str, patterns: list[str]) -> list[str]:
    """One line for each unusable pattern of an ini option."""
    out: list[str] = []
    for p in patterns:
        problem = pattern_problem(p)
        if problem is not None:
            out.append(f"{option}: {p!r} is not a usable glob: {problem}")
    return out
