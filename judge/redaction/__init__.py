"""Redaction before anything leaves the machine: secrets, contact details, the agent's identity.

Use one `ItemRedactor` per item (one judge request):

    red = ItemRedactor(RedactionConfig(allow=["ORD-sk-0001"]), candidate=trace.candidate,
                       keep=tool_names | ledger_keys)
    clean = red.value(structured)                    # keys never change
    text = red.text("call me at +1 415 555 2671")    # -> "call me at [phone-1]"
    red.counts   # {"secret": 0, "card": 0, "ssn": 0, "email": 0, "phone": 1, "identity": 0}

Classes and markers: secrets `[redacted:secret]` (own rules in secrets.py, the gitleaks
rule set in gitleaks.py, secret-named fields in fields.py, credential phrases in fifteen
languages in phrases.py with their words in lexicon.py, scenario patterns), cards
`[redacted:card]` and SSNs `[redacted:ssn]` (numbers.py, always on), emails and phones as
consistent pseudonyms `[email-N]`/`[phone-N]` (pii.py), identity `[agent]` (identity.py,
on the normalised view of normalize.py; names spelled letter by letter: spelled.py).
Overlaps and whole-token rules: spans.py; the one-item engine: engine.py; the surface
render.py uses: compat.py.

Wiring into render.py (the lead's change, nothing else needs to move):
1. `judge/prompts/redact.py` becomes re-exports of `judge.redaction.compat`: `Redaction`,
   `Scrubber`, `IDENTITY_MARK`, `SECRET_MARK`, `escape_fences`, `may_hold_secret_fields`,
   `is_secret_field`.
2. Optional, so tool names and ledger keys are never rewritten even when they hold a model
   name (`gpt-lookup`): in `render()`, `Scrubber(redaction, item.candidate or {},
   names=set(item.ledger_keys) | {str(e["tool"]) for e in (*item.events, item.target)
   if e.get("tool")})`.
3. `judge/grading/keys.py` `renderer_fingerprint()` must also hash
   `judge.redaction.fingerprint.code_fingerprint()`, or render memos survive a change of
   redaction rules.
4. Counts: `scrub.counts` after the four blocks are finished is the item's tally per class
   (never values), for the run to record.
"""

from judge.redaction.compat import Redaction as Redaction
from judge.redaction.compat import Scrubber as Scrubber
from judge.redaction.compat import escape_fences as escape_fences
from judge.redaction.config import RedactionConfig as RedactionConfig
from judge.redaction.engine import ItemRedactor as ItemRedactor
from judge.redaction.fields import is_secret_field as is_secret_field
from judge.redaction.fields import may_hold_secret_fields as may_hold_secret_fields
from judge.redaction.fingerprint import code_fingerprint as code_fingerprint
from judge.redaction.marks import CLASSES as CLASSES
from judge.redaction.marks import IDENTITY_MARK as IDENTITY_MARK
from judge.redaction.marks import SECRET_MARK as SECRET_MARK

__all__ = ["CLASSES", "IDENTITY_MARK", "SECRET_MARK", "ItemRedactor", "Redaction",
           "RedactionConfig", "Scrubber", "code_fingerprint", "escape_fences",
           "is_secret_field", "may_hold_secret_fields"]
