"""The words of credential phrases, by language: what names a secret, what says "is", and
what a secret can be said to be without being given (`wrong`, `falsch`, `неверный`).

Keywords come in four kinds, each with its own test for a value given without a separator
(phrases.py): `password` (passwords and their names in each language), `phrase`
(passphrases and seed phrases: the value may be several words), `number` (PIN, CVV/CVC, a
one-time code, a TAN: the value is digits) and `key` (secret keys, signing keys, tokens:
the value looks like key material). Languages: English, German, French, Spanish,
Portuguese, Italian, Dutch, Polish, Turkish, Russian/Ukrainian, Chinese, Japanese, Korean,
Arabic, Hindi. A keyword of a language written without spaces (Chinese, Japanese, Korean)
needs no word boundary and takes an ASCII value glued to it (`密码是hunter2`).

`STATE_WORDS` is a closed class (what a password *is* when it is not its value: wrong,
expired, required, too short…, and the articles, negations and adverbs that begin such a
statement) written out by hand for each language. A dictionary would be wrong here: it
would also exempt the real passwords that are words (`my password is sunshine`).
"""

from __future__ import annotations

#: keyword -> kind, spaced languages (the keyword must stand as a word)
_SPACED: dict[str, tuple[str, ...]] = {
    "password": (
        # English
        "password", "passwords", "passwd", "pwd", "pw", "passcode", "pass code",
        "master password", "login password", "admin password", "root password",
        "wifi password", "wi-fi password", "app password", "account password",
        "passw0rd", "p@ssword", "p@ssw0rd", "pa$$word", "pa55word", "p4ssword", "p4ssw0rd",
        "passwrd", "pasword", "passowrd", "pword", "pass word",
        # German
        "passwort", "kennwort", "zugangscode", "zugangspasswort", "losung",
        # French
        "mot de passe", "mot-de-passe", "mdp", "code d'accès", "code d’accès",
        # Spanish
        "contraseña", "contrasena", "clave de acceso",
        # Portuguese
        "senha", "palavra-passe", "palavra passe", "código de acesso",
        # Italian
        "parola d'ordine", "parola chiave d'accesso", "codice di accesso",
        # Dutch
        "wachtwoord", "toegangscode",
        # Polish
        "hasło", "haslo", "hasła",
        # Turkish
        "şifre", "şifrem", "şifreniz", "parola", "parolam",
        # Russian / Ukrainian
        "пароль", "пароля", "паролем", "паролю", "пароль от", "код доступа", "кодовое слово",
        # Arabic, Hindi
        "كلمة المرور", "كلمة السر", "पासवर्ड",
    ),
    "phrase": (
        "passphrase", "pass phrase", "pass-phrase", "seed phrase", "recovery phrase",
        "mnemonic phrase", "secret phrase", "backup phrase", "seed words",
        "phrase secrète", "phrase de passe", "frase de contraseña", "frase secreta",
        "frase-senha", "frase de recuperação", "merkspruch", "passphrase-satz",
        "кодовая фраза", "секретная фраза", "seed-фраза", "сид-фраза",
    ),
    "number": (
        # PINs
        "pin", "pin code", "pin-code", "pincode", "pin number", "pin-nummer", "pin nummer",
        "geheimzahl", "code pin", "code secret", "código pin", "codigo pin", "número pin",
        "codice pin", "pin-код", "пин-код", "пин код", "пин", "пін-код", "пін",
        # card security codes
        "cvv", "cvv2", "cvc", "cvc2", "csc", "cvn", "security code", "card security code",
        "card verification code", "card verification value", "sicherheitscode",
        "kartenprüfnummer", "prüfnummer", "prüfziffer", "cryptogramme",
        "cryptogramme visuel", "code de sécurité", "código de seguridad",
        "codigo de seguridad", "código de segurança", "codigo de seguranca",
        "codice di sicurezza", "codice cvv", "beveiligingscode", "kod cvv",
        "kod bezpieczeństwa", "güvenlik kodu", "код безопасности", "cvv-код", "cvc-код",
        "код cvv", "код cvc",
        # one-time codes
        "otp", "one-time code", "one time code", "one-time password", "one-time passcode",
        "verification code", "2fa code", "mfa code", "authentication code", "auth code",
        "sms code", "login code", "tan", "mtan", "bestätigungscode", "einmalcode",
        "code de vérification", "code de confirmation", "código de verificación",
        "codigo de verificacion", "código de verificação", "codigo de verificacao",
        "codice di verifica", "verificatiecode", "kod weryfikacyjny", "doğrulama kodu",
        "код подтверждения", "одноразовый код", "код из смс", "код из sms",
    ),
    "key": (
        "secret", "client secret", "shared secret", "webhook secret", "signing secret",
        "hmac secret", "app secret", "secret key", "signing key", "private key",
        "api key", "api-key", "access key", "secret access key", "encryption key",
        "decryption key", "hmac key", "master key", "session key", "license key",
        "licence key", "product key", "root key", "deploy key", "jwt secret", "aes key",
        "token", "access token", "auth token", "api token", "bearer token", "refresh token",
        "session token", "personal access token", "recovery code", "backup code",
        "recovery key", "webhook key", "shared key", "client key", "app key", "auth key",
        "jwt key", "wrapping key", "signing token", "hmac",
        "api-schlüssel", "api schlüssel", "geheimer schlüssel", "privater schlüssel",
        "signaturschlüssel", "geheimschlüssel", "zugangsschlüssel", "lizenzschlüssel",
        "clé api", "clé d'api", "clé secrète", "clé privée", "clé de signature",
        "clé d'accès", "jeton", "jeton d'accès", "clave api", "clave de api",
        "clave secreta", "clave privada", "clave de firma", "chave de api", "chave api",
        "chave secreta", "chave privada", "chave de assinatura", "chiave api",
        "chiave segreta", "chiave privata", "geheime sleutel", "klucz api",
        "klucz prywatny", "tajny klucz", "gizli anahtar", "api anahtarı",
        "секретный ключ", "закрытый ключ", "приватный ключ", "ключ api", "api-ключ",
        "api ключ", "ключ подписи", "ключ доступа", "токен", "токен доступа",
    ),
}

#: keyword -> kind, languages written without spaces (no word boundary; ASCII value)
_UNSPACED: dict[str, tuple[str, ...]] = {
    "password": ("密码", "密碼", "口令", "登录密码", "登入密碼", "パスワード", "暗号", "비밀번호",
                 "암호", "패스워드"),
    "phrase": ("助记词", "助記詞", "助记短语", "リカバリーフレーズ", "シードフレーズ", "복구 구문"),
    "number": ("暗証番号", "支付密码", "取款密码", "交易密码", "验证码", "驗證碼", "校验码",
               "安全码", "安全碼", "セキュリティコード", "認証コード", "確認コード",
               "ワンタイムパスワード",
               "인증번호", "인증 코드", "보안코드", "보안 코드", "핀번호"),
    "key": ("密钥", "密鑰", "秘钥", "私钥", "私鑰", "签名密钥", "令牌", "访问令牌", "秘密鍵",
            "署名鍵", "暗号鍵", "シークレットキー", "アクセストークン", "apiキー", "비밀 키",
            "비밀키",
            "개인 키", "액세스 토큰"),
}

KEYWORD_KIND: dict[str, str] = {w: kind for kind, words in _SPACED.items() for w in words}
UNSPACED_KIND: dict[str, str] = {w: kind for kind, words in _UNSPACED.items() for w in words}
#: keywords that need a separator or a copula: alone they are commands or ordinary words
#: (`pwd /home/bob`, `passwd bob2`, `tan 1234`, `parola` is Italian for "word")
NEEDS_SEPARATOR = frozenset({"pwd", "passwd", "mdp", "losung", "tan", "mtan", "parola",
                             "parolam", "auth code", "csc", "cvn", "暗号", "口令"})

#: "is" in each spaced language, longest first where one begins another (tried in order)
COPULAS: tuple[str, ...] = (
    # English (the forms "my password is …" took before)
    "has been changed to", "has been set to", "was changed to", "was set to", "is set to",
    "was reset to", "changed to", "reset to", "set to", "would be", "will be", "is now",
    "should be", "is", "was",
    # German
    "lautet", "ist jetzt", "ist", "war", "wäre", "heißt",
    # French
    "est maintenant", "c'est", "c’est", "est", "était", "sera", "serait",
    # Spanish / Portuguese / Italian
    "es", "era", "será", "sería", "é", "está", "foi", "será", "è", "sarà", "era",
    # Dutch, Polish, Turkish
    "is nu", "jest", "brzmi", "to", "şu",
    # Russian / Ukrainian
    "это", "будет", "был", "была", "было", "такой", "такая", "є", "це",
)
#: copulas that are ordinary words of another language: only after their own language's
#: keywords (`password to the VPN` is English, `hasło to X` Polish)
OWN_LANGUAGE_COPULAS: dict[str, frozenset[str]] = {
    "to": frozenset({"hasło", "haslo", "hasła", "kod weryfikacyjny", "klucz api",
                     "klucz prywatny", "tajny klucz", "kod cvv", "kod bezpieczeństwa"}),
    "es": frozenset({"contraseña", "contrasena", "clave de acceso", "código pin",
                     "codigo pin", "código de seguridad", "codigo de seguridad",
                     "código de verificación", "codigo de verificacion", "clave api",
                     "clave de api", "clave secreta", "clave privada", "clave de firma",
                     "frase de contraseña", "frase secreta", "número pin", "cvv", "pin"}),
    "é": frozenset({"senha", "palavra-passe", "palavra passe", "código de acesso",
                    "código de segurança", "codigo de seguranca", "código de verificação",
                    "codigo de verificacao", "chave de api", "chave api", "chave secreta",
                    "chave privada", "chave de assinatura", "frase-senha",
                    "frase de recuperação", "cvv", "pin"}),
}
#: particles and copulas glued to a keyword of an unspaced language (`密码是…`, `パスワードは…`)
UNSPACED_COPULAS: tuple[str, ...] = ("就是", "是", "为", "為", "は", "が", "を", "：", ":", "=",
                                     "는", "은", "이", "가")

#: words that end a passphrase given without quotes (`passphrase correct horse battery
#: staple, then log in`): the function words of a sentence, never those of a seed phrase
#: (BIP39's `about`, `above`, `able` are words of a passphrase)
FUNCTION_WORDS = frozenset({
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would", "can",
    "could", "must", "should", "may", "might", "not", "no", "the", "a", "an", "for", "of",
    "in", "on", "at", "to", "with", "and", "or", "but", "this", "that", "it", "its", "by",
    "from", "as", "if", "then", "so", "your", "my", "our", "their", "you", "we", "they", "i",
    "please", "enabled", "disabled", "required", "protection", "ist", "und", "der", "die",
    "das", "nicht", "für", "est", "et", "le", "la", "les", "pour", "pas", "es", "y", "el",
    "para", "é", "e", "o", "não", "это", "и", "не", "для",
})

#: what a secret can be said to be without being given, in every language above; a value
#: that is one of these (or starts with one) is no value
STATE_WORDS = frozenset({
    # English (articles, negations and adverbs too: "is not", "is too short", "is being")
    "null", "none", "nil", "true", "false", "undefined", "empty", "required", "optional",
    "invalid", "valid", "expired", "missing", "incorrect", "wrong", "set", "unset",
    "changed", "reset", "updated", "hidden", "masked", "redacted", "provided", "needed", "ok",
    "yes", "no", "not", "the", "a", "an", "your", "my", "our", "their", "his", "her", "its",
    "being", "still", "now", "correct", "too", "very", "also", "stored", "saved",
    "encrypted", "hashed", "secret", "unknown", "same", "different", "weak", "strong",
    "short", "long", "new", "old", "blank", "sent", "shown", "below", "above", "here",
    "there", "available", "active", "revoked", "rotated", "disabled", "enabled", "present",
    "absent", "string", "str", "bearer", "basic", "token", "password", "xxx", "xxxx", "****",
    "n/a", "na", "tbd", "locked", "unlocked", "forgotten", "lost", "known", "case-sensitive",
    "case",
    "about", "going", "never", "always", "only", "just", "already", "safe", "unsafe",
    "secure", "insecure", "compromised", "leaked", "accepted", "rejected", "denied",
    "generated", "attached", "included", "protected", "working", "fine", "good", "bad",
    "for", "of", "to", "in", "on", "at", "by", "with", "and", "or", "but", "that", "this",
    "which", "what", "it", "is", "was", "be", "been", "please", "again", "must", "should",
    "can", "cannot", "will", "may", "expires", "expiring", "due", "out", "see", "check",
    "click", "use", "enter", "type", "visit", "follow", "contact", "ask", "call", "tap",
    "select", "choose", "read", "refer", "go",
    # German
    "falsch", "ungültig", "abgelaufen", "erforderlich", "korrekt", "richtig", "geändert",
    "zurückgesetzt", "nicht", "zu", "sehr", "leer", "neu", "alt", "gespeichert",
    "verschlüsselt", "sicher", "unsicher", "schwach", "stark", "gesperrt", "vergessen",
    "bereits", "schon", "noch", "jetzt", "immer", "auch", "wieder", "ein", "eine", "einen",
    "der", "die", "das", "dein", "deine", "mein", "meine", "ihr", "ihre", "unser", "kein",
    "keine", "bitte", "gültig", "abgelehnt", "angegeben", "unbekannt", "geheim", "lang",
    "kurz", "vergeben", "und", "oder", "für", "von", "mit",
    # French
    "incorrecte", "invalide", "expiré", "expirée", "requis", "requise",
    "obligatoire", "modifié", "modifiée", "réinitialisé", "réinitialisée", "trop", "très",
    "pas", "vide", "nouveau", "nouvelle", "ancien", "ancienne", "enregistré", "enregistrée",
    "chiffré", "chiffrée", "sécurisé", "faible", "fort", "forte", "oublié", "oubliée",
    "déjà", "toujours", "encore", "le", "la", "les", "un", "une", "votre", "vos", "mon",
    "ma", "mes", "ton", "ta", "son", "sa", "erroné", "erronée", "bloqué", "bloquée",
    "valide", "correcte", "et", "ou", "pour", "de", "du", "des",
    # Spanish
    "incorrecta", "incorrecto", "inválida", "inválido", "invalida", "caducada", "caducado",
    "expirada", "expirado", "requerida", "requerido", "obligatoria", "obligatorio",
    "cambiada", "cambiado", "restablecida", "demasiado", "muy", "vacía", "vacío", "nueva",
    "nuevo", "antigua", "antiguo", "guardada", "cifrada", "segura", "seguro", "débil",
    "fuerte", "olvidada", "ya", "todavía", "aún", "el", "los", "las", "unos", "tu", "su",
    "mi", "sus", "bloqueada", "válida", "correcta", "errónea", "y", "o", "para", "del",
    # Portuguese
    "errada", "errado", "incorreta", "incorreto", "obrigatória",
    "alterada", "redefinida", "muito", "não", "vazia", "salva", "fraca", "esquecida", "já",
    "ainda", "está", "foi", "um", "uma", "sua", "seu", "minha", "meu", "correta", "e", "da", "do",
    # Italian
    "errata", "sbagliata", "scaduta", "obbligatoria", "cambiata", "troppo", "molto", "non",
    "vuota", "nuova", "vecchia", "salvata", "debole", "corretta", "il", "lo", "gli", "una",
    # Dutch
    "onjuist", "verkeerd", "verlopen", "verplicht", "gewijzigd", "te", "niet", "zeer",
    "leeg", "nieuw", "oud", "opgeslagen", "zwak", "sterk", "vergeten", "het", "een", "je",
    "jouw", "uw", "mijn",
    # Polish
    "nieprawidłowe", "nieprawidłowy", "błędne", "błędny", "wygasło", "wymagane", "zmienione",
    "zbyt", "nie", "jest", "puste", "nowe", "stare", "zapisane", "słabe", "silne",
    "zapomniane", "twoje", "moje",
    # Turkish
    "yanlış", "hatalı", "geçersiz", "gerekli", "değiştirildi", "çok", "değil", "boş",
    "yeni", "eski", "zayıf", "güçlü", "unutuldu",
    # Russian / Ukrainian
    "неверный", "неверен", "неверно", "неправильный", "неправильно", "истёк", "истек",
    "обязателен", "обязательно", "изменён", "изменен", "сброшен", "слишком", "очень", "не",
    "пустой", "новый", "старый", "сохранён", "сохранен", "надёжный", "надежный", "слабый",
    "сильный", "забыт", "уже", "ещё", "еще", "мой", "ваш", "твой", "этот", "от", "для",
    "и", "или", "заблокирован", "верный", "правильный", "невірний", "змінено",
})
