"""Model-blind, secret-free judge input: the redaction engine of `judge.redaction`, with
the surface rendering uses. Two things never reach a judge: the identity of the system under
test (vendor and model-family names in any spelling, every string of the trace's
`candidate`, configured names and patterns) and secrets (credentials of every known shape,
credentials given in words in fifteen languages, secret-named fields and their values
wherever they appear again, card numbers, SSNs); emails
and phone numbers become consistent pseudonyms within an item (`[email-1]`)."""

from judge.redaction.compat import IDENTITY_MARK as IDENTITY_MARK
from judge.redaction.compat import SECRET_MARK as SECRET_MARK
from judge.redaction.compat import Redaction as Redaction
from judge.redaction.compat import Scrubber as Scrubber
from judge.redaction.compat import escape_fences as escape_fences
from judge.redaction.compat import is_secret_field as is_secret_field
from judge.redaction.compat import may_hold_secret_fields as may_hold_secret_fields

__all__ = ["IDENTITY_MARK", "SECRET_MARK", "Redaction", "Scrubber", "escape_fences",
           "is_secret_field", "may_hold_secret_fields"]
