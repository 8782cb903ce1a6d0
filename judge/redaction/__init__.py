"""Redaction before anything leaves the machine: secrets, contact details, the agent's identity.

Use one `ItemRedactor` per item (one judge request):

    red = ItemRedactor(RedactionConfig(allow=["ORD-sk-0001"]), candidate=trace.candidate)
    clean = red.value(structured)        # keys never change
    text = red.text("call me at +1 415 555 2671")   # -> "call me at [phone-1]"
    red.counts   # {"secret": 0, "card": 0, "ssn": 0, "email": 0, "phone": 1, "identity": 0}

Classes and markers: secrets `[redacted:secret]` (own rules in secrets.py, the gitleaks
rule set in gitleaks.py, secret-named fields in fields.py, scenario patterns), cards
`[redacted:card]` and SSNs `[redacted:ssn]` (numbers.py, always on), emails and phones as
consistent pseudonyms `[email-N]`/`[phone-N]` (pii.py), identity `[agent]` (identity.py).
`compat.py` has the surface render.py uses (`Redaction`, `Scrubber`, …).
"""

from judge.redaction.compat import Redaction as Redaction
from judge.redaction.compat import Scrubber as Scrubber
from judge.redaction.compat import escape_fences as escape_fences
from judge.redaction.config import RedactionConfig as RedactionConfig
from judge.redaction.engine import ItemRedactor as ItemRedactor
from judge.redaction.fields import is_secret_field as is_secret_field
from judge.redaction.fields import may_hold_secret_fields as may_hold_secret_fields
from judge.redaction.marks import CLASSES as CLASSES
from judge.redaction.marks import IDENTITY_MARK as IDENTITY_MARK
from judge.redaction.marks import SECRET_MARK as SECRET_MARK

__all__ = ["CLASSES", "IDENTITY_MARK", "SECRET_MARK", "ItemRedactor", "Redaction",
           "RedactionConfig", "Scrubber", "escape_fences", "is_secret_field",
           "may_hold_secret_fields"]
