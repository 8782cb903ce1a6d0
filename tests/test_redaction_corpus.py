"""The hostile corpus (tests/data/redaction_corpus.jsonl): every secret, card, SSN, email,
phone and identity string is gone after redaction; every benign near-miss is untouched.

Each line: `class` (secret, card, ssn, email, phone, identity, benign), `kind`, `text`,
`value` (what must disappear, or for benign lines the text that must survive), an
optional `candidate` record, and `issue: 21` on the lines added for issue 21 (credential
phrases in fifteen languages, PIN/CVV/one-time codes, truncated PEM, keys after a key word,
signed-URL signatures, key ids; names spelled out, hyphenated, in leet and other scripts;
and their benign look-alikes). tests/test_redaction_wire.py sends every line through the
real SDKs. Policy for the near-misses is in the module docstrings of
judge/redaction (identity.py: "Claude Monet", "Mistral wind", "a llama"; pii.py: local
numbers without an area code; numbers.py: 16-digit ids without a card prefix).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from judge.redaction import ItemRedactor, RedactionConfig
from judge.redaction.marks import CARD_MARK, IDENTITY_MARK, SECRET_MARK, SSN_MARK
from judge.redaction.normalize import view

CORPUS = Path(__file__).parent / "data" / "redaction_corpus.jsonl"
ENTRIES: list[dict[str, Any]] = [json.loads(line) for line in
                                 CORPUS.read_text(encoding="utf-8").splitlines() if line]
MARK = {"secret": SECRET_MARK, "card": CARD_MARK, "ssn": SSN_MARK, "identity": IDENTITY_MARK,
        "email": "[email-", "phone": "[phone-"}
ALLOW = RedactionConfig(allow=("sk_live_ORDER0000000000000001",))


def _id(e: dict[str, Any]) -> str:
    return f"{e['class']}:{e['kind']}:{e['text'][:40]}"


def test_corpus_is_big_enough() -> None:
    counts = Counter(e["class"] for e in ENTRIES)
    assert counts["secret"] + counts["card"] + counts["ssn"] >= 100
    assert counts["identity"] >= 40
    assert counts["benign"] >= 30
    assert {"email", "phone", "card", "ssn"} <= set(counts)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["class"] != "benign"], ids=_id)
def test_every_planted_value_is_gone(entry: dict[str, Any]) -> None:
    red = ItemRedactor(ALLOW, entry.get("candidate"))
    out = red.text(entry["text"])
    value = entry["value"]
    assert value not in out, out
    if entry["class"] == "identity":  # no spelling of it either
        assert view(value).text.lower() not in view(out).text.lower(), out
    # a value under a secret-named field (`"ssn": …`) is a secret whatever its shape
    cls = entry["class"]
    assert MARK[cls] in out or (cls in ("card", "ssn") and SECRET_MARK in out), out
    assert red.counts[cls] >= 1 or red.counts["secret"] >= 1
    assert red.text(out) == out  # idempotent


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["class"] == "benign"], ids=_id)
def test_every_benign_near_miss_survives(entry: dict[str, Any]) -> None:
    red = ItemRedactor(ALLOW, entry.get("candidate"))
    assert red.text(entry["text"]) == entry["text"]
    assert sum(red.counts.values()) == 0


def test_issue21_lines_cover_every_language_and_probe() -> None:
    lines = [e for e in ENTRIES if e.get("issue") == 21]
    kinds = Counter(e["kind"].split("-")[1] for e in lines if e["kind"].startswith("phrase-"))
    for lang in ("en", "de", "fr", "es", "pt", "ru", "zh", "ja"):  # several phrasings each
        assert kinds[lang] >= 3, (lang, kinds)
    secrets = [e for e in lines if e["class"] == "secret"]
    spellings = [e for e in lines if e["class"] == "identity"]
    benign = [e for e in lines if e["class"] == "benign"]
    assert len(secrets) >= 43 and len(spellings) >= 14 and len(benign) >= 30
    for probe in ("hunter7hunter", "Xk29!aa", "4829", "613", "X-Amz-Signature",
                  "private_key_id", "c l a u d e", "c-l-a-u-d-e", "Cl4ude", "hunter5hunter"):
        assert any(probe in e["text"] for e in lines), probe


def test_closing_table() -> None:
    """The tried/leaked table of issue 9's closing note, computed from the corpus."""
    tried: Counter[str] = Counter()
    leaked: Counter[str] = Counter()
    for e in ENTRIES:
        out = ItemRedactor(ALLOW, e.get("candidate")).text(e["text"])
        tried[e["class"]] += 1
        if e["class"] == "benign":
            leaked[e["class"]] += out != e["text"]
        else:
            leaked[e["class"]] += e["value"] in out
    assert sum(leaked.values()) == 0, dict(leaked)
