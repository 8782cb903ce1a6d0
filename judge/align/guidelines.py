"""Rules distilled from disagreement clusters by the judge model itself (`--method
guidelines`): one call per cluster through a shipped, versioned prompt.

The prompt is `prompts/align-guidelines-v1.md` (shipped with the built-in prompts; not a
rubric). Its hash — sha256 over its canonical text and the rules schema — is recorded in
every new version built with it. A request shows the cluster's train items as data blocks,
rendered as any item is (redacted, model-blind, fenced with this request's nonce, derived
from the prompt hash and the content), each with the reviewers' verdict and the judge's, and
the reviewers' note and the judge's rationale in data blocks of their own. The reply must be
`{"rules": [{"rule": str, "items": [int]}]}`; an invalid reply is asked once more with the
error, then the cluster gives no rule (said in the report). A rule is kept only when it cites
at least one item of its cluster; it is made one line, at most MAX_RULE_CHARS characters,
scrubbed of the cited items' agent identity and secrets, fences and template braces
(`template_safe`): the rules stand outside data blocks in the new prompt, and a person reviews
them in the diff before anything uses them.

Calls go through the store's call cache (keys as the grading engine's, over the guidelines
prompt's hash), so a second `judge align` asks nothing again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from judge.align.examples import BLOCKS, blocks_of, named_ledger, template_safe, verdict_words
from judge.align.mine import Cluster
from judge.data.builtin import prompts_dir
from judge.errors import ConfigError
from judge.items import Item
from judge.prompts.files import SECTION_RE, VAR_RE
from judge.prompts.identity import prompt_hash
from judge.prompts.redact import Scrubber, escape_fences
from judge.prompts.render import indent_lines
from judge.request import JudgeRequest, ModelParams, Redaction

PROMPT_FILE = "align-guidelines-v1.md"
SCHEMA_NAME = "guidelines"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"rules": {"type": "array", "items": {
        "type": "object",
        "properties": {"rule": {"type": "string"},
                       "items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["rule", "items"], "additionalProperties": False}}},
    "required": ["rules"], "additionalProperties": False,
}
VARIABLES = frozenset({"rubric", "rubric_description", "cluster", "examples", "n_items",
                       "max_rules", "nonce"})
MAX_RULES = 3
MAX_ITEMS = 6  # items shown per cluster
MAX_RULE_CHARS = 300
MAX_NOTE_CHARS = 600
REASK = ("Your previous reply was not valid: {error}\nReply again with only one JSON object "
         '{{"rules": [{{"rule": string, "items": [integer, ...]}}]}}, citing items 1 to {n}.')


@dataclass(frozen=True)
class GuidelinesPrompt:
    version: str
    hash: str
    system: str
    user: str
    path: Path


@cache
def guidelines_prompt(path: Path | None = None) -> GuidelinesPrompt:
    """The shipped guidelines prompt (ConfigError when it is missing or malformed)."""
    path = path or prompts_dir() / PROMPT_FILE
    try:
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the guidelines prompt ({exc.strerror})"
                          ) from None
    parts = text.split("\n---\n", 1)
    if not text.startswith("---\n") or len(parts) != 2:
        raise ConfigError(f"{path}: the guidelines prompt needs a front matter")
    meta = yaml.safe_load(parts[0][4:]) or {}
    body = parts[1]
    marks = list(SECTION_RE.finditer(body))
    if [m.group(1) for m in marks] != ["system", "user"] or not isinstance(meta, dict) \
            or not isinstance(meta.get("version"), str):
        raise ConfigError(f"{path}: the guidelines prompt needs a version, then a system "
                          "and a user section")
    unknown = {m.group(1) for m in VAR_RE.finditer(body)} - VARIABLES
    if unknown:
        raise ConfigError(f"{path}: undefined template variable {sorted(unknown)[0]!r}")
    return GuidelinesPrompt(
        version=meta["version"], hash=prompt_hash(text, SCHEMA),
        system=body[marks[0].end():marks[1].start()].strip("\n"),
        user=body[marks[1].end():].strip("\n"), path=path)


def _fence(nonce: str, name: str, body: str) -> str:
    return f"<<<DATA nonce={nonce} name={name}>>>\n{body}\n<<<END nonce={nonce}>>>"


def _data(text: str, item: Item, redaction: Redaction | None, limit: int) -> str:
    """Free text (a note, a rationale) as a block body: scrubbed with the item's rules,
    fences escaped, cut to `limit` characters, continuation lines indented (as an event's
    are: no line of it can pass for a header)."""
    scrub = Scrubber((redaction or Redaction()).with_extra(item.redaction), item.candidate or {},
                     names=item.ledger_keys)
    shown = escape_fences(scrub.text(text))
    shown = shown if len(shown) <= limit else shown[:limit] + " […]"
    return indent_lines(shown)


DIRECTIONS = {
    "false_pass": "reviewers said fail where the judge said pass",
    "false_fail": "reviewers said pass where the judge said fail",
}


def describe(cluster: Cluster) -> str:
    key = f"ledger key {cluster.violated_key}" if cluster.violated_key else "no ledger key named"
    return (f"{DIRECTIONS[cluster.direction]}; {key} ({cluster.check_kind}); items of kind "
            f"{cluster.item_kind}")


@dataclass
class ClusterRequest:
    cluster: Cluster
    shown: list[str]  # item ids, in the order numbered 1..n
    request: JudgeRequest


def cluster_request(cluster: Cluster, items: Mapping[str, Item], *, rubric: str,
                    description: str, prompt: GuidelinesPrompt, params: ModelParams,
                    redaction: Redaction | None, train: set[str],
                    max_items: int = MAX_ITEMS, max_rules: int = MAX_RULES,
                    shows: frozenset[str] = frozenset()) -> ClusterRequest:
    """The request asking for rules from `cluster` (its first `max_items` train items,
    each with the blocks of `blocks_of(..., shows)`: pass the parent prompt's variables)."""
    members = [d for d in cluster.members if d.item_id in train][:max_items]
    bodies: list[list[tuple[str, str]]] = []
    for d in members:
        item = items[d.item_id]
        keys = {k for k in (d.human.violated_key, d.judge.violated_key) if k}
        ledger, _ = named_ledger(item, keys)
        blocks = blocks_of(replace(item, ledger=ledger), redaction, shows)
        parts = [(name, blocks[name]) for name, _ in BLOCKS if name in blocks]
        if d.notes:
            parts.append(("reviewer_note", _data(" | ".join(d.notes), item, redaction,
                                                 MAX_NOTE_CHARS)))
        if d.judge.rationale:
            parts.append(("judge_rationale", _data(d.judge.rationale, item, redaction,
                                                   MAX_NOTE_CHARS)))
        bodies.append(parts)
    h = hashlib.sha256(prompt.hash.encode())
    for parts in bodies:
        for name, body in parts:
            h.update(b"\0" + name.encode() + b"\0" + body.encode("utf-8"))
    nonce = h.hexdigest()[:16]
    shown: list[str] = []
    for n, (d, parts) in enumerate(zip(members, bodies, strict=True), 1):
        human = verdict_words(d.human.label, d.human.violated_key, d.human.evidence_event)
        judged = verdict_words(d.judge.label, d.judge.violated_key, d.judge.evidence_event)
        lines = [f"Item {n}: reviewers' verdict {human}; the judge said {judged}."]
        lines += [_fence(nonce, f"item_{n}_{name}", body) for name, body in parts]
        shown.append("\n".join(lines))
    values = {"rubric": rubric, "rubric_description": description,
              "cluster": describe(cluster), "examples": "\n\n".join(shown),
              "n_items": str(len(members)), "max_rules": str(max_rules), "nonce": nonce}

    def fill(template: str) -> str:
        return VAR_RE.sub(lambda m: values[m.group(1)], template)

    request = JudgeRequest(item_id=f"align/{rubric}/{cluster.id}", system=fill(prompt.system),
                           messages=({"role": "user", "content": fill(prompt.user)},),
                           schema=SCHEMA, schema_name=SCHEMA_NAME, params=params)
    return ClusterRequest(cluster, [d.item_id for d in members], request)


class RulesInvalid(ValueError):
    pass


@dataclass
class Rule:
    rule: str
    cites: list[str]
    cluster: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "cites": list(self.cites), "cluster": self.cluster}


@dataclass
class Rules:
    """What one cluster's call gave: the rules kept, and what was dropped and why."""

    cluster: str
    rules: list[Rule] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failure: str | None = None  # the call failed, or its replies were invalid


_SPACE = re.compile(r"\s+")


def clean_rule(text: str, cited: Sequence[Item], redaction: Redaction | None) -> str:
    """A model's rule as it may stand in a prompt: one line, scrubbed as each cited item's
    data is, no fences or template braces, at most MAX_RULE_CHARS characters."""
    from judge.safe_text import one_line

    rule = _SPACE.sub(" ", one_line(text)).strip()
    for item in cited:
        rule = Scrubber((redaction or Redaction()).with_extra(item.redaction),
                        item.candidate or {}, names=item.ledger_keys).text(rule)
    rule = template_safe(escape_fences(rule).replace(">>>", "›››"))
    if len(rule) > MAX_RULE_CHARS:
        rule = rule[:MAX_RULE_CHARS - 1].rstrip() + "…"
    return rule


def parse_rules(text: str, asked: ClusterRequest, items: Mapping[str, Item],
                redaction: Redaction | None) -> Rules:
    """The rules a reply states (RulesInvalid when the reply is not the schema's)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RulesInvalid(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) != {"rules"} or not isinstance(data["rules"], list):
        raise RulesInvalid("the reply must be an object with one field, rules (a list)")
    out = Rules(asked.cluster.id)
    seen: set[str] = set()
    for n, entry in enumerate(data["rules"], 1):
        if not isinstance(entry, dict) or set(entry) != {"rule", "items"} \
                or not isinstance(entry["rule"], str) or not isinstance(entry["items"], list):
            raise RulesInvalid(f"rules[{n - 1}] must be an object with rule (a string) and "
                               "items (a list of item numbers)")
        numbers = [i for i in entry["items"] if isinstance(i, int) and not isinstance(i, bool)
                   and 1 <= i <= len(asked.shown)]
        cites = [asked.shown[i - 1] for i in dict.fromkeys(numbers)]
        if not entry["rule"].strip():
            out.dropped.append(f"rule {n}: empty")
            continue
        if not cites:
            out.dropped.append(f"rule {n}: cites no item of its cluster")
            continue
        if len(out.rules) >= MAX_RULES:
            out.dropped.append(f"rule {n}: more than {MAX_RULES} rules")
            continue
        rule = clean_rule(entry["rule"], [items[i] for i in cites], redaction)
        if rule.lower() in seen:
            out.dropped.append(f"rule {n}: a repeat")
            continue
        seen.add(rule.lower())
        out.rules.append(Rule(rule, cites, asked.cluster.id))
    return out


def reask(asked: ClusterRequest, completion: str, error: str) -> JudgeRequest:
    r = asked.request
    return replace(r, messages=(*r.messages, {"role": "assistant", "content": completion},
                                {"role": "user", "content": REASK.format(
                                    error=error, n=len(asked.shown))}))


GUIDELINES_INTRO = (
    "Rules from reviewed disagreements: written by a model from reviewers' labels on earlier "
    "items of this rubric and reviewed by a person. They refine the rules above; where one "
    "seems to contradict them, the rules above decide.")


def guidelines_section(rules: Sequence[Rule], *, after: str = "") -> str:
    """The guidelines part of the new version's system message; `after`: the parent's
    system message (an aligned parent's rules are continued, not numbered again)."""
    if GUIDELINES_INTRO in after:
        tail = after[after.rindex(GUIDELINES_INTRO):]
        start = max((int(n) for n in re.findall(r"(?m)^(\d+)\. ", tail)), default=0) + 1
        lines = []
    else:
        start, lines = 1, [GUIDELINES_INTRO]
    lines += [f"{n}. {r.rule}" for n, r in enumerate(rules, start)]
    return "\n".join(lines)
