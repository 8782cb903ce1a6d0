"""Who the system under test is: vendor and model names, self-identification, the trace's
own `candidate` record, and names a scenario adds. Every match becomes `[agent]`.

Matching runs on the normalised view (see normalize.py), so `ＧＰＴ-4o`, `gpt‑4o` (a
non-ASCII hyphen), `g\u200bpt-4o` (a zero-width space) and `gpt-4о` (a Cyrillic о) are
all `gpt-4o`. A match must start and end at word edges (`refundOrder` never loses its
`Order`; a tool named `ask_gpt` keeps its name), and takes a model's version with it
(`gpt-4o-2024-08-06`, `claude-3-5-sonnet-20241022`, `Gemini 1.5 Pro`, `gpt4o`, `gpt 4o`).
Names of four letters or more are matched in leet too (`Cl4ude`, `C1aude`, `CIaude`,
`0penAI`, `G3mini`, `Ch@tGPT`: LEET) and split anywhere by one space, dot, hyphen, …
(`cl-aude`, `Clau de`, `Anth ropic`), a built-in name may end or start at a change of case
(`claudeAI`, `myClaudeBot`) and takes a plural `s`; names spelled letter by letter (`c l a u
d e`, `c-l-a-u-d-e`, `G.P.T-4o`) are read by spelled.py; a few transliterations
(`Клод`, `ЧатГПТ`, `クロード`, `克劳德`, …) are names.

Built-in classes, with the policy for names that are also ordinary words:
- always: GPT/ChatGPT/OpenAI, o1/o3/o4 (lower-case `o`), Anthropic, Claude, Gemini,
  Gemma, DeepMind, Qwen/QwQ, DeepSeek, Mixtral/Codestral/Pixtral/Ministral, Nemotron,
  ChatGLM/GLM-n, Code Llama, and any family name followed by a version (`llama3`,
  `Llama-3.1-70B`, `phi-3`, `grok-2`, `mistral-7b`, `ernie-4`, `command-r+`);
- capitalised only: `Llama`/`LLaMA`, `Mistral`, `Grok`, `Bard`, `PaLM`, `xAI`, `Cohere`,
  `ERNIE` — so "a llama", "the mistral", "I grok it", "ideas cohere", "palm trees" stay;
  `Mistral wind` stays; `Claude` followed by a capitalised name that is no model tier, no
  common English word and no model name (`Claude Monet`, `Claude Shannon`; not `Claude And`,
  `Claude Gemini`) is a person and stays, and so is `Jean-Claude`; a lower-case `claude` is
  always the model;
- vendors that are ordinary names (Google, Meta, Microsoft, Amazon, Apple, NVIDIA, IBM,
  Alibaba, …) only as the maker in self-identification ("made by Google", "trained by
  Meta"), and as `Meta AI`, `Google AI`, `GitHub/Microsoft Copilot`.
Candidate strings: every string of the `candidate` record and its `:`/`/`/`@` parts,
except values of ≤ 3 characters, numbers, and common English words (see words.py) —
`agent: "order"` redacts nothing, `max_tokens: 4200` redacts nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from judge.redaction.normalize import COMBINING, View, view
from judge.redaction.rx import compile_re2
from judge.redaction.spans import Span, at_word_edges, escape_ends_at, is_word_char, word_before
from judge.redaction.spelled import ELEMENTS, spelled_names
from judge.redaction.words import is_common_word

MIN_CANDIDATE_CHARS = 4

_TIER = (r"sonnet|opus|haiku|instant|turbo|mini|nano|flash|pro|ultra|plus|lite|large|medium|"
         r"small|tiny|instruct|chat|preview|latest|vision|exp|experimental|thinking|coder|code|"
         r"omni|audio|realtime|search|base|it|hf|vl|moe|max|air|plus")
_VER = r"v?\d+(?:\.\d+)*[a-z]?(?:-?\d+[bkm])?|\d+[bkm]|[a-z]\d+(?:\.\d+)?"
_TAIL = rf"(?:[-_. ]?(?:{_VER}|{_TIER})\b)*"
#: letters a name may be written with instead (`Cl4ude`, `0penAI`, `G3mini`, `CIaude`)
LEET = {"a": "a4@", "e": "e3", "i": "i1!|", "l": "l1|i", "o": "o0", "s": "s5$", "t": "t7",
        "g": "g69", "b": "b8", "z": "z2"}
#: names matched in leet too (four letters or more: `gpt` would take `6pt`, a font size)
LEET_NAMES = ("chat gpt", "open ai", "anthropic", "claude", "gemini", "gemma", "deep mind",
              "qwen", "deep seek", "mixtral", "codestral", "nemotron", "gigachat")


#: one character that may split a name anywhere (`cl-aude`, `Clau de`, `c.l.a.u.d.e`)
_GAP = r"[-_. *·•/~+]?"


def leet(name: str) -> str:
    """A pattern for `name` in any leet spelling, split anywhere by one of `_GAP`."""
    def letter(c: str) -> str:
        return f"[{re.escape(LEET[c])}]" if c in LEET else re.escape(c)

    return _GAP.join(letter(c) for c in name.replace(" ", ""))


_ALWAYS = ("|".join(leet(n) for n in LEET_NAMES)
           + r"|gpt|qwq|pixtral|ministral|devstral|magistral|chat[-_ ]?glm|code[-_ ]?llama|"
             r"yandex[-_ ]?gpt")
_VERSIONED = (rf"(?:llama|phi|grok|ernie|kimi|glm|falcon|mistral|command)[-_ ]?(?:(?:{_VER})\b|"
              r"k\d+\b|r\+|r\b|a\b|(?:large|medium|small|nemo|instruct|tiny|saba)\b)")
_CASED = r"Llama|LLaMA|LLAMA|Mistral|MISTRAL|Grok|GROK|Bard|PaLM|xAI|Cohere|ERNIE"
_MAKERS = (r"google|meta|microsoft|amazon|apple|nvidia|ibm|alibaba|baidu|tencent|x\.ai|"
           r"mistral|cohere|ai21|inflection|perplexity|moonshot|zhipu|01\.ai|bytedance")
_FAMILY = (rf"(?i:(?:{_ALWAYS}|{_VERSIONED}))(?i:{_TAIL})(?:\+)?"
           rf"|(?-i:o[134])(?i:(?:-(?:mini|pro|preview|high|low))*)"
           rf"|(?:{_CASED})(?i:{_TAIL})")
_MAKER = (rf"(?i:(?:made|trained|developed|created|built|designed|released|owned|provided|"
          rf"produced|powered|fine[- ]?tuned|brought to you)[ \t]+by[ \t]+(?:the[ \t]+)?"
          rf"({_MAKERS}))"
          rf"|(?i:((?:meta|google|amazon)[ \t]+ai|(?:github|microsoft|bing)[ \t]+copilot|"
          rf"bing[ \t]+chat|amazon[ \t]+(?:nova|titan)))")
#: the names in other scripts (as the normalised view writes them: some Cyrillic letters
#: are folded to Latin there, so these are folded the same way when compiled)
TRANSLITERATED = ("Клод", "ЧатГПТ", "Чат ГПТ", "ГПТ", "Джемини", "Гемини", "Антропик",
                  "ОпенЭйАй", "Опен ЭйАй", "Дипсик", "ГигаЧат", "クロード", "チャットGPT",
                  "ジーピーティー", "ジェミニ", "アンソロピック", "ディープシーク", "克劳德",
                  "克勞德",
                  "深度求索", "通义千问", "通義千問", "文心一言", "클로드", "제미나이", "챗GPT")
#: one pass: group 1 a model or family name, group 2 a maker after "made by", group 3 a
#: vendor's product name, group 4 a name in another script
NAMES_RE = compile_re2(f"({_FAMILY})|{_MAKER}|(?i:(" + "|".join(
    re.escape(view(n).text) for n in sorted(TRANSLITERATED, key=len, reverse=True)) + "))")
_PERSON_AFTER = re.compile(r"[ \u00a0]([A-Z\u0400-\u042f][a-z\u0430-\u045f]+)")
_TIERS = frozenset(_TIER.split("|"))
_CLAUDE = frozenset({"claude", "kлoд"})


def find_builtin(v: View) -> Iterator[tuple[int, int]]:
    """Spans of the view that name a model, a family or its maker."""
    yield from _builtin(v.text)


def _builtin(t: str) -> Iterator[tuple[int, int]]:
    for m in NAMES_RE.finditer(t):
        if m.start(1) < 0:
            g = next(g for g in (2, 3, 4) if m.start(g) >= 0)
            s, e = m.start(g), m.end(g)
            if g == 4 and t[s:e].lower() in _CLAUDE and _is_person(t, s, e):
                continue
            yield s, e
            continue
        s, e = m.span()
        word = t[s:e].lower()
        if word == "claude" and _is_person(t, s, e):
            continue  # Claude Monet
        if word == "mistral" and t[e:e + 5].lower() == " wind":
            continue
        yield s, e


def _is_person(t: str, s: int, e: int) -> bool:
    """`Claude` the given name: capitalised, and followed by a capitalised name that is no
    model tier, no common word and no model name (`Claude Monet`, `Claude Shannon`, but not
    `Claude Sonnet`, `Claude And GPT-4o`, `Claude Gemini`), or after `Jean-`. A lower-case
    `claude` is the model, whatever follows (`claude Gemini GPT-4o`)."""
    if not t[s].isupper():
        return False
    if t[max(0, s - 5):s].lower() in ("jean-", "jean "):
        return True
    after = _PERSON_AFTER.match(t, e)
    if after is None:
        return False
    name = after.group(1)
    if name.lower() in _TIERS or is_common_word(name):
        return False
    return not any(m.span() == (0, len(name)) for m in NAMES_RE.finditer(name))


def candidate_strings(candidate: Any) -> tuple[str, ...]:
    """The candidate record's strings worth redacting (longest first)."""
    out: set[str] = set()

    def walk(v: Any, depth: int) -> None:
        if depth > 20:
            return
        if isinstance(v, dict):
            for x in v.values():
                walk(x, depth + 1)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x, depth + 1)
        elif isinstance(v, str):
            s = v.strip()
            out.add(s)
            out.update(p.strip() for p in re.split(r"[:/@]", s))

    walk(candidate, 0)
    return tuple(sorted((s for s in out if worth_redacting(s)), key=len, reverse=True))


def worth_redacting(s: str) -> bool:
    """Not ≤ 3 characters, not a number, not a common English word."""
    if len(s) < MIN_CANDIDATE_CHARS:
        return False
    if re.fullmatch(r"[\d\s.,_+\-eE]+", s):
        return False
    return not is_common_word(s)


@dataclass(frozen=True)
class Literals:
    """Case-insensitive literal names, matched on the view at word edges."""

    regex: re.Pattern[str]
    lowered: tuple[str, ...]

    def spans(self, v: View, low: str) -> Iterator[tuple[int, int]]:
        if not any(x in low for x in self.lowered):
            return
        for m in self.regex.finditer(v.text):
            yield m.span()


@lru_cache(maxsize=512)
def literals(names: tuple[str, ...]) -> Literals | None:
    alts: list[str] = []
    lowered: set[str] = set()
    for name in names:
        for form in {name, json.dumps(name, ensure_ascii=False)[1:-1]}:
            folded = view(form).text
            if not folded.strip():
                continue
            words = [re.escape(w) for w in folded.split()]
            alts.append(r"\s+".join(words))
            lowered.add(folded.split()[0].lower())
    if not alts:
        return None
    alts.sort(key=len, reverse=True)
    return Literals(re.compile("|".join(alts), re.IGNORECASE), tuple(sorted(lowered)))


def find_identity(text: str, v: View, low: str, names: Literals | None,
                  patterns: re.Pattern[str] | None) -> Iterable[Span]:
    """Identity spans of `text` (matched on its view `v`, whose lower case is `low`); word
    edges are judged in the original, where a zero-width character separates words.

    A built-in name may also end or start at a change of case (`claudeAI`, `useGemini`)
    and takes a plural `s` with it (`GPTs`); a name spelled letter by letter (`c l a u d e`,
    `c-l-a-u-d-e`, `G.P.T-4o`) is found in the run of letters (spelled.py)."""
    builtin = list(find_builtin(v))
    found: list[tuple[int, int]] = []
    if names is not None:
        found.extend(names.spans(v, low))
    if patterns is not None:
        found.extend(m.span() for m in patterns.finditer(v.text) if m.end() > m.start())
    out: list[Span] = []
    for s, e in builtin:
        if e <= s:
            continue
        a, b = _marks_after(text, *v.original(s, e))
        if b < len(text) and text[b] in "sS" and not (
                b + 1 < len(text) and is_word_char(text[b + 1])):
            b += 1  # GPTs, Claudes
        if at_word_edges(text, a, b) or _camel_edges(text, a, b):
            out.append(Span(a, b, "identity"))
    for s, e in found:
        if e <= s:
            continue
        a, b = _marks_after(text, *v.original(s, e))
        if at_word_edges(text, a, b):
            out.append(Span(a, b, "identity"))
    def alone(i: int, first: bool) -> bool:
        a, b = v.original(i, i + 1)
        if first:
            return a == 0 or text[a - 1] not in ELEMENTS or escape_ends_at(text, a)
        return b >= len(text) or text[b] not in ELEMENTS

    for s, e in spelled_names(v.text, _builtin, names, _tail, alone,
                              folded=v.text is not text and v.text != text):
        a, b = _marks_after(text, *v.original(s, e))
        if at_word_edges(text, a, b):
            out.append(Span(a, b, "identity"))
    return out


def _marks_after(text: str, a: int, b: int) -> tuple[int, int]:
    """[a, b) with the combining marks that follow it (the last letter's strike-through)."""
    while b < len(text) and text[b] in COMBINING:
        b += 1
    return a, b


_TAIL_RE = re.compile(rf"(?i:[-_. ]{{0,2}}(?:{_VER}|{_TIER})\b)+")


def _tail(t: str, end: int) -> int:
    """Where a model's version written at `end` of `t` ends (`-4o`, ` 3.5 Sonnet`)."""
    m = _TAIL_RE.match(t, end, end + 64)
    return m.end() if m else end


def _camel_edges(text: str, a: int, b: int) -> bool:
    """Each edge of [a, b) is a word edge or a change from lower to upper case."""
    start = not (word_before(text, a) and is_word_char(text[a])) or (
        text[a - 1].islower() and text[a].isupper())
    end = b >= len(text) or not (is_word_char(text[b]) and is_word_char(text[b - 1])) or (
        (text[b - 1].islower() or text[b - 1].isdigit()) and text[b].isupper())
    return start and end
