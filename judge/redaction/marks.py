"""The markers that replace redacted values, and how to find them again.

A marker is never matched by any detector (spans that touch a marker are dropped), so
redacting redacted text changes nothing. Emails and phone numbers get numbered pseudonyms,
consistent within one item: the same address is `[email-1]` wherever it appears.
"""

from __future__ import annotations

import re

SECRET_MARK = "[redacted:secret]"
CARD_MARK = "[redacted:card]"
SSN_MARK = "[redacted:ssn]"
IDENTITY_MARK = "[agent]"
EMAIL_MARK = "[email-{n}]"
PHONE_MARK = "[phone-{n}]"

#: the classes a redaction counts (never the values)
CLASSES = ("secret", "card", "ssn", "email", "phone", "identity")

FIXED_MARKS = {"secret": SECRET_MARK, "card": CARD_MARK, "ssn": SSN_MARK,
               "identity": IDENTITY_MARK}

#: every marker this package writes (the legacy `[candidate]` too, so old text stays put)
MARK_RE = re.compile(r"\[(?:redacted:(?:secret|card|ssn)|agent|candidate|(?:email|phone)-\d+)\]")
