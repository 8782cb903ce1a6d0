"""Secrets by shape and by name: this project's own rules (the gitleaks rule set adds more).

Each rule reports the span of the secret *value* only, so `DB_PASSWORD=` and `Bearer` stay
readable and the judge still sees that a password was sent:

- key formats (OpenAI/Anthropic `sk-…`, Stripe `sk_live_`/`rk_live_`, GitLab `glpat-`,
  Hugging Face `hf_`, npm `npm_`, GitHub `ghp_`/`github_pat_`, Slack `xoxb-`, Google
  `AIza…`/`ya29.`, AWS `AKIA…`, JWTs, SendGrid, PyPI, …): the whole token that holds one;
- PEM private-key blocks (to `-----END …-----`; cut off before it, the BEGIN line and the
  base64 lines after it);
- a secret-named field with any prefix, in any syntax: `DB_PASSWORD=…`, `"apiKey": "…"`,
  `x-api-key: …`, `passwd: …`, `--token …` is not covered (no separator), `\\"password\\":`
  inside JSON-in-JSON is;
- `Authorization:` / `Proxy-Authorization:` headers (any scheme), `Bearer …` anywhere;
- URL credentials (`scheme://user:password@host`: the password); a signed URL's signature
  (`?X-Amz-Signature=…`, `X-Goog-Signature`, `Signature`, `sig`);
- (credentials given in words, in several languages — "my password is …", `PIN 4829`,
  `пароль: …` — are phrases.py's);
- opaque tokens: a run of 32+ base64/url-safe characters, mixed case, 2+ digits, entropy
  ≥ 4.2 bits/char (unknown vendors' keys), or exactly 40 base64 characters of mixed case
  (a bare AWS secret access key); hex-only ids, UUIDs and paths are not.

Values that say a secret is absent (`null`, `***`, `${VAR}`, `required`, `invalid`, …)
are left alone. Patterns run on RE2 (google-re2): linear time whatever the input.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

from judge.redaction.fields import is_secret_field
from judge.redaction.lexicon import STATE_WORDS
from judge.redaction.rx import compile_re2
from judge.redaction.spans import Span, escape_ends_at, whole_token, word_before

_KEY_FORMATS = [
    r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
    r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}", r"whsec_[A-Za-z0-9]{16,}",
    r"gl(?:pat|dt|ptt|rt|cbt|ft|imt|oas|soat|agent|wt)-[A-Za-z0-9_\-]{16,}",
    r"hf_[A-Za-z0-9]{16,}", r"api_org_[A-Za-z0-9]{16,}", r"npm_[A-Za-z0-9]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}", r"github_pat_[A-Za-z0-9_]{20,}",
    r"xox[abeoprs]-[A-Za-z0-9\-]{10,}", r"xapp-\d-[A-Za-z0-9\-]{10,}",
    r"AIza[0-9A-Za-z_\-]{30,}", r"ya29\.[0-9A-Za-z_\-]{20,}", r"GOCSPX-[0-9A-Za-z_\-]{20,}",
    r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}",
    r"eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", r"pypi-AgE[A-Za-z0-9_\-]{20,}",
    r"dop_v1_[a-f0-9]{32,}", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    r"AGE-SECRET-KEY-1[0-9A-Z]{20,}", r"hvs\.[A-Za-z0-9_\-]{20,}",
    r"(?:xai|pplx|csk)-[A-Za-z0-9]{20,}", r"(?:gsk|r8|key)_[A-Za-z0-9]{20,}",
    r"SK[0-9a-fA-F]{32}", r"AC[0-9a-fA-F]{32}",
]
KEY_FORMAT_RE = compile_re2("|".join(f"(?:{p})" for p in _KEY_FORMATS))
_PEM_BEGIN = r"(?i:-----BEGIN[ A-Z0-9_-]{0,60}PRIVATE KEY(?: BLOCK)?-----)"
_PEM_END = r"(?i:-----END[ A-Z0-9_-]{0,60}PRIVATE KEY(?: BLOCK)?-----)"
#: line breaks inside a PEM block, raw or as escapes (JSON text, JSON inside JSON)
_PEM_BREAK = r"(?:\s|\\+[nrt])"
#: a whole block: its body holds only base64, header lines (`Proc-Type: 4,ENCRYPTED`) and
#: line breaks, so it never runs out of the JSON string that holds it; or a block cut off
#: before its END line: the BEGIN line and every base64 run of 16+ characters after it
#: (it once ran to the end of the text, out of its JSON string, and was dropped whole)
PEM_RE = compile_re2(
    _PEM_BEGIN + r"(?:[A-Za-z0-9+/=:,.\- \t\r\n]|\\+[nrt])*?" + _PEM_END
    + "|" + _PEM_BEGIN + r"(?:" + _PEM_BREAK + r"*(?:Proc-Type|DEK-Info|Comment|Version|Hash)"
    r":[^\n\\\"]*)*(?:" + _PEM_BREAK + r"*[A-Za-z0-9+/=]{16,})*")
_NAME = (r"[A-Za-z0-9_.\-]*(?:passw(?:or)?d|pwd|pass|passphrase|passcode|secret|token|"
         r"api[_. \-]?key|(?:access|private|secret|signing|encryption|master|license)[_. \-]?key|"
         r"key[_.\-]?base|private[_.\-]?key[_.\-]?id|signature|"
         r"credentials?|auth|authorization|cookie|session[_.\-]?(?:id|key)|"
         r"connection[_.\-]?string|dsn|webhook[_.\-]?url|pin|otp|cvv|cvc|ssn)")
_VALUE = (r"\\\"([^\"\\\n]+)\\\"|\"((?:[^\"\\\n]|\\.)+)\"|'([^'\n]+)'|"
          r"([^\s\"'`,;}{\]\[)(<>\\]+)")
NAMED_RE = compile_re2(r"(?i)(" + _NAME + r")\\?[\"']?[ \t]*(?:=>|:=|::|[:=])[ \t]*(?:"
                       + _VALUE + ")")
HEADER_RE = compile_re2(r"(?i)(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
                        r"(?:(?:bearer|basic|token|digest|bot|apikey|api-key|sso-key|key|"
                        r"negotiate|hmac|gitlab|splunk)[ \t]+)?([^\s\"'\\,;]{4,})")
BEARER_RE = compile_re2(r"(?i)bearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)")
URL_CRED_RE = compile_re2(r"[A-Za-z][A-Za-z0-9+.\-]{0,20}://[^\s/@:\"'<>]*:"
                          r"([^\s/@\"'<>]+)@")
#: a signed URL's signature (S3 and GCS V4 `X-…-Signature`, CloudFront `Signature`, Azure
#: SAS `sig`): the URL is a bearer credential until it expires
SIGNED_URL_RE = compile_re2(r"(?i)[?&;](?:x-amz-signature|x-goog-signature|signature|sig)="
                            r"([^&\s\"'#<>\\]{8,})")
_OPAQUE = r"[A-Za-z0-9+/_\-]{32,}={0,2}"
#: one pass for both: group 1 a vendor key format, group 2 a long opaque token. A JSON escape
#: just before a token (`\neyJ…` in rendered JSON) is matched and left out of both groups:
#: without it the escape's letter began a longer opaque match (`neyJ…`, up to the JWT's first
#: dot) and hid the key format behind it
_ESCAPE = r"(?:\\(?:[ntrbf]|u[0-9a-fA-F]{4}))?"
TOKEN_RE = compile_re2(_ESCAPE + "(?:(" + "|".join(f"(?:{p})" for p in _KEY_FORMATS)
                       + f")|({_OPAQUE}))")



def _scoped(pattern: str) -> str:
    """`(?i)…` as `(?i:…)`, so it can be one branch of a larger pattern."""
    return f"(?i:{pattern[4:]})" if pattern.startswith("(?i)") else pattern


#: one pass for every context rule; groups: 1-2 header, 3-8 named field (4 the name,
#: 5-8 the value's forms), 9-10 bearer, 11-12 URL credential, 13-14 signed-URL signature
#: (phrases in words, "my password is …", are phrases.py's)
CONTEXT_RE = compile_re2("|".join(f"({_scoped(r.pattern)})" for r in (
    HEADER_RE, NAMED_RE, BEARER_RE, URL_CRED_RE, SIGNED_URL_RE)))

#: values that say a secret is absent, not what it is
NOT_A_VALUE = frozenset({
    "null", "none", "nil", "true", "false", "undefined", "empty", "required", "optional",
    "invalid", "valid", "expired", "missing", "incorrect", "wrong", "set", "unset", "changed",
    "reset", "updated", "hidden", "masked", "redacted", "provided", "needed", "ok", "yes",
    "no", "not", "the", "a", "an", "your", "my", "our", "their", "being", "still", "now",
    "correct", "too", "very", "also", "stored", "saved", "encrypted", "hashed", "secret",
    "unknown", "same", "different", "weak", "strong", "short", "long", "new", "old",
    "blank", "sent", "shown", "below", "above", "here", "there", "available", "active",
    "revoked", "rotated", "disabled", "enabled", "present", "absent", "string", "str",
    "bearer", "basic", "token", "password", "xxx", "xxxx", "****", "n/a", "na", "tbd",
})


def entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def is_placeholder(value: str) -> bool:
    v = value.strip().strip(".,;:!?)").lower()
    if not v or v in NOT_A_VALUE or v in STATE_WORDS or v.startswith(
            ("[redacted", "[agent]", "${", "{{", "<", "%(")):
        return True
    if v[0] == "$" and v[1:].replace("_", "").isalnum():
        return True  # $DB_PASSWORD: a reference, not the value
    return len(set(v)) == 1 and not v[0].isalnum()  # ****, ----


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _glued(ch: str) -> bool:
    """Would `ch` make a key after it part of a longer ASCII word? Key formats are ASCII:
    a key pasted after CJK or accented text (`我的密钥是sk-ant-…`) still starts a token."""
    return ch.isascii() and ch.isalnum()


def _starts_token(text: str, start: int) -> bool:
    return start == 0 or not _glued(text[start - 1]) or escape_ends_at(text, start)


def _past_escape(text: str, s: int) -> int:
    """`s` moved past the letters of a JSON escape it starts inside (`\\u00e9msg_…`
    matched from its `u`): an escape is no part of the token after it."""
    if s > 0 and text[s - 1] == "\\":
        if text[s:s + 1] in ("n", "r", "t", "b", "f"):
            return s + 1
        if text[s:s + 1] == "u" and _HEX_DIGITS.issuperset(text[s + 1:s + 5]) \
                and len(text) >= s + 5:
            return s + 5
    return s


def find_secrets(text: str, low: str) -> Iterator[tuple[Span, str | None]]:
    """(span, value worth remembering or None) for every secret this module's rules see."""
    for m in TOKEN_RE.finditer(text):
        s, e = m.span(1) if m.start(1) >= 0 else m.span(2)
        if m.start(1) >= 0:
            if _starts_token(text, s):
                yield Span(*whole_token(text, s, e), "secret"), None
            continue
        s = _past_escape(text, s)
        if e - s >= 32 and _is_opaque(text, s, e):
            yield Span(s, e, "secret"), None
        else:  # a long token that is no secret as a whole may hold a key format
            for k in KEY_FORMAT_RE.finditer(text[s:e]):
                if _starts_token(text, s + k.start()):
                    yield Span(*whole_token(text, s + k.start(), s + k.end()), "secret"), None
    if "-----begin" in low:
        for m in PEM_RE.finditer(text):
            yield Span(m.start(), m.end(), "secret"), None
    yield from _context(text)


def _context(text: str, retry: bool = True, before: int | None = None
             ) -> Iterator[tuple[Span, str | None]]:
    """Context rules over `text`; with `before`, only matches that start before it."""
    for m in CONTEXT_RE.finditer(text):
        if before is not None and m.start() >= before:
            return
        if m.start(1) >= 0:  # Authorization: <scheme> <credential>
            yield from _value(text, m.start(2), m.end(2))
        elif m.start(3) >= 0:  # a secret-named field
            if _good_name(text, m):
                yield from _named(m, text)
            elif retry:  # not a secret's name (`nAuthorization` after `\n`): look again
                # from its next letter, once, in a short window (so this stays linear;
                # a slice, since RE2's wrapper re-encodes the whole text on every call)
                base = m.start(4) + 1
                if text[m.start(4)] == "u" and escape_ends_at(text, m.start(4) + 5):
                    base = m.start(4) + 5  # `\\u00e9Authorization`: past the whole escape
                window = text[base:m.end() + 256]
                for span, value in _context(window, retry=False, before=m.end() - base):
                    yield Span(span.start + base, span.end + base, span.cls), value
        elif m.start(9) >= 0:  # Bearer …
            v = m.group(10)
            if any(c.isdigit() for c in v) or len(v) >= 20:
                yield from _value(text, m.start(10), m.end(10))
        elif m.start(11) >= 0:  # scheme://user:password@
            yield from _value(text, m.start(12), m.end(12))
        else:  # ?X-Amz-Signature=…
            yield Span(m.start(14), m.end(14), "secret"), None


def _good_name(text: str, m: Any) -> bool:
    return not word_before(text, m.start(4)) and is_secret_field(m.group(4))


def _named(m: Any, text: str) -> Iterator[tuple[Span, str | None]]:
    for g in (5, 6, 7, 8):
        if m.start(g) >= 0:
            yield from _value(text, m.start(g), m.end(g))
            return


def _value(text: str, start: int, end: int) -> Iterator[tuple[Span, str | None]]:
    while end > start and text[end - 1] in ".,;!?)" and end - start > 1:
        end -= 1
    while end > start and text[end - 1] == "\\":
        end -= 1
    value = text[start:end]
    if is_placeholder(value):
        return
    yield Span(start, end, "secret"), value


def _is_opaque(text: str, s: int, e: int) -> bool:
    if s > 0 and ((_glued(text[s - 1]) and not escape_ends_at(text, s)) or text[s - 1] in "-_"):
        return False
    if e < len(text) and (_glued(text[e]) or text[e] in "_-"):
        return False
    tok = text[s:e]
    if not (any(c.isupper() for c in tok) and any(c.islower() for c in tok)):
        return False
    if len(tok) == 40 and "_" not in tok and "-" not in tok and entropy(tok) >= 3.8:
        return True  # the shape of an AWS secret access key
    if sum(c.isdigit() for c in tok) < 2 or tok.count("/") > 4:
        return False  # paths are not tokens
    return entropy(tok) >= 4.2
