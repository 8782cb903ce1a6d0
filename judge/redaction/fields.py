"""Secret-named fields: `password`, `db_password`, `apiKey`, `x-api-key`, `client_secret`…

A name is secret when, lower-cased and stripped of everything but letters and digits, it is
one of `SECRET_NAMES` or ends with one of `SECRET_SUFFIXES` (so any prefix counts:
`MYAPP_API_KEY`, `awsSecretAccessKey`, `WLAN-Passwort`, `пароль`). A GCP service
account's `private_key_id` and a signed URL's `X-Amz-Signature` are secrets too. A plain
`key` is not secret (ledger entries and maps have `key` fields); `tokens` (a count) is not
a `token`.
"""

from __future__ import annotations

import re
from functools import lru_cache

SECRET_NAMES = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "passcode", "secret", "token",
    "apikey", "auth", "authorization", "proxyauthorization", "credential", "credentials",
    "cookie", "setcookie", "pin", "otp", "mfacode", "totp", "privatekey", "secretkey",
    "accesskey", "signingkey", "encryptionkey", "masterkey", "licensekey", "sessionid",
    "sessionkey", "connectionstring", "dsn", "ssn", "cvv", "cvc", "cardnumber",
    "cvv2", "cvc2", "privatekeyid", "xamzsignature", "xgoogsignature",
    # the word for a password (or PIN) in other languages
    "passwort", "kennwort", "geheimzahl", "motdepasse", "mdp", "contraseña", "contrasena",
    "senha", "palavrapasse", "wachtwoord", "hasło", "haslo", "şifre", "sifre", "пароль",
    "密码", "密碼", "パスワード", "暗証番号", "비밀번호",
})
SECRET_SUFFIXES = ("password", "passwd", "passphrase", "passcode", "secret", "token",
                   "apikey", "privatekey", "secretkey", "accesskey", "signingkey",
                   "encryptionkey", "masterkey", "licensekey", "credential", "credentials",
                   "sessionid", "sessionkey", "connectionstring", "webhookurl", "pwd",
                   "secretkeybase", "passwort", "kennwort", "motdepasse", "contraseña",
                   "senha", "wachtwoord", "пароль", "密码", "パスワード", "비밀번호")
#: names that end like a secret but are not one
NOT_SECRET = frozenset({"bypass", "compass", "encompass", "trespass", "surpass", "overpass",
                        "underpass", "tokentype", "secretname", "passwordhint",
                        "passwordpolicy", "passwordlength", "tokenendpoint", "tokenurl",
                        "publickey", "keyid", "accesskeyid", "spin", "opin", "pinned"})
#: everything but letters and digits (of any script: `пароль`, `contraseña` keep theirs)
_NON_ALNUM = re.compile(r"[\W_]")


@lru_cache(maxsize=8192)
def is_secret_field(name: str) -> bool:
    norm = _NON_ALNUM.sub("", name.lower())
    if norm in NOT_SECRET:
        return False
    return norm in SECRET_NAMES or norm.endswith(SECRET_SUFFIXES)


#: every name `is_secret_field` accepts contains one of these once lower-cased and stripped
FIELD_HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "cookie", "credential", "pin",
               "otp", "session", "dsn", "ssn", "cvv", "cvc", "card", "connectionstring",
               "webhookurl", "signature", "kennwort", "motdepasse", "contrase", "senha",
               "wachtwoord", "hasło", "haslo", "şifre", "sifre", "geheimzahl", "mdp",
               "пароль", "密码", "密碼", "パスワード", "暗証番号", "비밀번호")
_NON_ALNUM_ANY = re.compile(r"[^0-9a-z]+")
_JSON_KEY = re.compile(r'"([^"\\]*)"\s*:')


def may_hold_secret_fields(serialized: str) -> bool:
    """False only when the JSON text of a value cannot contain a secret-named field: no
    hint of one at all, or every object key in it is an ordinary name."""
    if "\\" in serialized:
        return True  # escapes could hide a name's characters; walk to be sure
    low = serialized.lower()
    if not any(h in low for h in FIELD_HINTS):
        flat = _NON_ALNUM_ANY.sub("", low)
        if not any(h in flat for h in FIELD_HINTS):
            return False
    return any(is_secret_field(k) for k in set(_JSON_KEY.findall(serialized)))
