"""A digest of everything that decides what redaction does, for render memo keys.

`judge/grading/keys.py` trusts a memoised render only while the code that renders is
unchanged; redaction is part of that code. `code_fingerprint()` covers this package's
modules, its data (the gitleaks rules) and the versions of the libraries whose data it
uses (libphonenumber's metadata, the English word list).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import metadata, resources


@cache
def code_fingerprint() -> str:
    h = hashlib.sha256()
    root = resources.files("judge.redaction")
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            h.update(entry.name.encode() + b"\0" + entry.read_bytes())
    data = root.joinpath("data")
    for entry in sorted(data.iterdir(), key=lambda e: e.name):
        if entry.is_file():
            h.update(entry.name.encode() + b"\0" + entry.read_bytes())
    for dist in ("google-re2", "phonenumberslite", "pyspellchecker"):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "?"
        h.update(f"{dist}=={version}".encode())
    return h.hexdigest()
