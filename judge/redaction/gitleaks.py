"""The gitleaks rule set (MIT; `data/gitleaks.toml`, see `data/SOURCE.txt`) as a detector.

Why gitleaks: it is the maintained, community-reviewed catalogue of credential formats
(about 220 rules: cloud providers, SaaS APIs, payment processors, package registries…),
each with keywords for a cheap prefilter and an entropy floor, in RE2 syntax — which
google-re2 compiles as is, with linear-time matching whatever the input. detect-secrets
(Yelp) was measured too and rejected: about 44 ms of CPU per tau-bench item (median 11 KB)
with its default plugins, far over budget, and its high-entropy plugins flag every
identifier when scanning lines (`reservation_id`, `DB`). Here the rule set costs about
0.05 ms per item (measured in benchmarks/redaction.py), because a rule runs only when one
of its keywords occurs (one RE2 pass of all keywords over the text: 0.03 ms for 10 KB,
where an Aho–Corasick automaton, pyahocorasick, took 0.15 ms).

Left out: `generic-api-key` and `hashicorp-tf-password` (this package's secret-named-field
rule covers them without treating every `"key": …` as a credential), `jwt` (own rule),
`pkcs12-file` (a file-path rule), `private-key` (own rule, secrets.py: its `[\\s\\S-]{64,}?`
runs from a block cut off before its END line to the next block's BEGIN line, out of the
JSON string that holds it, and leaves that next block's body behind). Keywords of 1–2
characters are too common to gate on when lower-cased: a rule that has only such keywords
(`sk`, `q~`) is gated by them in the case its regex needs (`SK`, `Q~`); a rule that also
has a longer one is gated by that alone (vault's `hvs.`: its legacy `s.` tokens are caught
only in a text that also holds `hvs.`).
Each match is kept only if its secret group (the rule's `secretGroup`, else the first
non-empty group, else the match) reaches the rule's entropy floor and passes the rule's
allowlists (regexes on the secret, the match or the line; stopwords).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from judge.redaction.rx import compile_re2
from judge.redaction.secrets import entropy
from judge.redaction.spans import Span, whole_token

SKIPPED = frozenset({"generic-api-key", "hashicorp-tf-password", "jwt", "pkcs12-file",
                     "private-key"})


@dataclass(frozen=True)
class _Allow:
    target: str  # secret | match | line
    regexes: tuple[Any, ...]
    stopwords: tuple[str, ...]
    all_of: bool


@dataclass(frozen=True)
class Rule:
    id: str
    regex: Any  # re2 pattern
    group: int
    entropy: float
    allows: tuple[_Allow, ...]


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    keywords: Any  # RE2 pattern of every keyword, case-insensitive
    by_keyword: dict[str, tuple[int, ...]]  # keyword -> rules it gates (and its substrings')
    #: rule index -> exact substrings, one of which must occur (short keywords)
    ungated: tuple[tuple[int, tuple[str, ...]], ...]
    global_allow: tuple[Any, ...]
    global_stop: tuple[str, ...]
    skipped: tuple[str, ...]


def _compile(pattern: str) -> Any:
    return compile_re2(pattern)


@lru_cache(maxsize=1)
def ruleset() -> RuleSet:
    raw = resources.files("judge.redaction").joinpath("data/gitleaks.toml").read_bytes()
    cfg = tomllib.loads(raw.decode("utf-8"))
    rules: list[Rule] = []
    keywords: dict[str, list[int]] = {}
    ungated: list[tuple[int, tuple[str, ...]]] = []
    skipped: list[str] = []
    for r in cfg.get("rules", []):
        rid = str(r.get("id"))
        if rid in SKIPPED or "regex" not in r:
            skipped.append(rid)
            continue
        try:
            regex = _compile(r["regex"])
            allows = tuple(_allow(a) for a in r.get("allowlists", []) if not a.get("paths"))
        except Exception:  # a rule RE2 cannot take is skipped, and listed
            skipped.append(rid)
            continue
        idx = len(rules)
        rules.append(Rule(rid, regex, int(r.get("secretGroup", 0)), float(r.get("entropy", 0)),
                          allows))
        kws = [str(k).lower() for k in r.get("keywords", [])]
        if kws and any(len(k) <= 2 for k in kws) and all(len(k) <= 2 for k in kws):
            ungated.append((idx, tuple({form for k in kws for form in _cased(k, r["regex"])})))
        elif not kws:
            ungated.append((idx, ()))
        else:
            for k in kws:
                if len(k) > 2:  # `s.` beside `hvs.`: the short one would gate nothing
                    keywords.setdefault(k, []).append(idx)
    # a match of a keyword also stands for every keyword inside it ("hvs." holds "vs.")
    by_keyword = {k: tuple(sorted({i for k2, idxs in keywords.items() if k2 in k
                                   for i in idxs})) for k in keywords}
    alternation = "|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))
    glob = cfg.get("allowlist", {})
    return RuleSet(tuple(rules), compile_re2(f"(?i)(?:{alternation})"), by_keyword,
                   tuple(ungated),
                   tuple(_compile(p) for p in glob.get("regexes", [])),
                   tuple(str(s).lower() for s in glob.get("stopwords", [])), tuple(skipped))


def _cased(keyword: str, regex: str) -> tuple[str, ...]:
    """The forms of a short keyword the rule's regex can match: as written in the regex
    when it is case-sensitive there, else every case."""
    for form in (keyword, keyword.upper()):
        if form in regex and not regex.startswith("(?i)"):
            return (form,)
    return (keyword, keyword.upper(), keyword.capitalize())


def _allow(a: dict[str, Any]) -> _Allow:
    return _Allow(str(a.get("regexTarget", "secret")),
                  tuple(_compile(p) for p in a.get("regexes", [])),
                  tuple(str(s).lower() for s in a.get("stopwords", [])),
                  str(a.get("condition", "OR")).upper() == "AND")


def find_gitleaks(text: str, low: str) -> Iterator[Span]:
    rs = ruleset()
    hit: set[int] = {i for i, forms in rs.ungated if not forms or any(f in text for f in forms)}
    for m in rs.keywords.finditer(text):
        hit.update(rs.by_keyword.get(m.group().lower(), ()))
    for idx in sorted(hit):
        rule = rs.rules[idx]
        for m in rule.regex.finditer(text):
            s, e = _secret_span(m, rule.group)
            if e <= s:
                continue
            secret = text[s:e]
            if rule.entropy and entropy(secret) < rule.entropy:
                continue
            if _allowed(rs, rule, text, secret, m.group()):
                continue
            yield Span(*whole_token(text, s, e), "secret")


def _secret_span(m: Any, group: int) -> tuple[int, int]:
    if group:
        return int(m.start(group)), int(m.end(group))
    for g in range(1, (m.re.groups or 0) + 1):
        if m.start(g) >= 0 and m.end(g) > m.start(g):
            return int(m.start(g)), int(m.end(g))
    return int(m.start()), int(m.end())


def _allowed(rs: RuleSet, rule: Rule, text: str, secret: str, match: str) -> bool:
    low = secret.lower()
    if any(p.search(secret) for p in rs.global_allow) or any(w in low for w in rs.global_stop):
        return True
    for a in rule.allows:
        target = {"secret": secret, "match": match}.get(a.target)
        if target is None:  # "line": the line of the match
            target = match
        checks = []
        if a.regexes:
            checks.append(any(p.search(target) for p in a.regexes))
        if a.stopwords:
            checks.append(any(w in low for w in a.stopwords))
        if checks and (all(checks) if a.all_of else any(checks)):
            return True
    return False
