"""judge/redaction: configuration, counts, the adapter's surface, and the policy decisions
named in the module docstrings (one test each, so a change of policy is a visible edit)."""

from __future__ import annotations

import pytest

from judge.errors import ConfigError
from judge.redaction import (
    CLASSES,
    IDENTITY_MARK,
    SECRET_MARK,
    ItemRedactor,
    Redaction,
    RedactionConfig,
    Scrubber,
    escape_fences,
    is_secret_field,
    may_hold_secret_fields,
)
from judge.redaction.gitleaks import SKIPPED, find_gitleaks, ruleset
from judge.redaction.numbers import card_network, luhn_ok, ssn_ok
from judge.redaction.secrets import find_secrets
from judge.redaction.words import is_common_word


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"secret_patterns": ["(unclosed"]}, r"^secret pattern '\(unclosed' is not a valid regular"),
    ({"identity_patterns": ["[a-"]}, r"^identity pattern '\[a-' is not a valid regular"),
    ({"identity_patterns": ["x*"]}, r"^identity pattern 'x\*' matches the empty string$"),
    ({"allow": "ORD-1"}, r"^redaction allow: expected a list of strings, got a string$"),
    ({"identity_names": [3]}, r"^redaction value 3 must be a string$"),
])
def test_invalid_configuration_is_one_line(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        RedactionConfig(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_adapter_validates_up_front_like_the_old_one() -> None:
    with pytest.raises(ConfigError, match=r"identity pattern '\(unclosed'"):
        Redaction(identity_patterns=["(unclosed"])
    with pytest.raises(ConfigError, match=r"secret pattern"):
        Redaction(secret_patterns=["+x"])


def test_scenario_additions_and_allow_list() -> None:
    cfg = RedactionConfig(secret_patterns=[r"ACME-\d{6}"], identity_names=["Helpdesk Hal"],
                          identity_patterns=[r"hal-\d+"],
                          allow=["sk_live_ORDER0000000000000001", "bob@example.com"])
    red = ItemRedactor(cfg, {"model": "m"})
    out = red.text("voucher ACME-123456 from Helpdesk  Hal (hal-9000); order "
                   "sk_live_ORDER0000000000000001 for bob@example.com, cc amy@example.com")
    assert out == (f"voucher {SECRET_MARK} from {IDENTITY_MARK} ({IDENTITY_MARK}); order "
                   "sk_live_ORDER0000000000000001 for bob@example.com, cc [email-1]")
    assert red.counts == {"secret": 1, "card": 0, "ssn": 0, "email": 1, "phone": 0,
                          "identity": 2}


def test_counts_name_every_class_and_never_a_value() -> None:
    red = ItemRedactor(None, {"model": "zz-model-9"})
    red.text("zz-model-9 / gpt-4o: mail a@example.com twice a@example.com, call "
             "(415) 555-2671, card 4111111111111111, ssn 123-45-6789, token=abc123def")
    assert set(red.counts) == set(CLASSES)
    assert red.counts == {"secret": 1, "card": 1, "ssn": 1, "email": 2, "phone": 1,
                          "identity": 2}
    assert all(isinstance(v, int) for v in red.counts.values())


def test_secrets_off_still_redacts_cards_and_ssns() -> None:
    red = ItemRedactor(RedactionConfig(secrets=False), {})
    out = red.text("token=abc123def card 4111 1111 1111 1111 ssn 123-45-6789")
    assert out == "token=abc123def card [redacted:card] ssn [redacted:ssn]"


def test_secret_named_fields_keep_their_shape_and_are_scrubbed_everywhere_after() -> None:
    red = ItemRedactor()
    value = {"user": "bo", "db_password": "Pw-771-xyz", "creds": {"apiKey": "k-99-abc",
             "enabled": True, "retries": 3}, "pin": 4821, "key": "refundOrder"}
    out = red.value(value)
    assert out == {"user": "bo", "db_password": SECRET_MARK,
                   "creds": {"apiKey": SECRET_MARK, "enabled": True, "retries": 3},
                   "pin": SECRET_MARK, "key": "refundOrder"}
    assert value["db_password"] == "Pw-771-xyz"  # the input is not mutated
    assert red.text("I typed Pw-771-xyz and k-99-abc") == f"I typed {SECRET_MARK} and {SECRET_MARK}"
    same = {"a": [1, {"b": "plain"}]}
    assert red.value(same) is same  # nothing to do: the same object


def test_secret_field_names() -> None:
    for name in ("password", "DB_PASSWORD", "MYAPP_API_KEY", "apiKey", "x-api-key",
                 "client_secret", "awsSecretAccessKey", "refresh_token", "passwd", "PIN",
                 "Authorization", "secret_key_base", "session_id"):
        assert is_secret_field(name), name
    for name in ("key", "tokens", "max_tokens", "bypass", "passenger", "boarding_pass",
                 "publicKey", "token_count", "password_hint", "keyboard", "order"):
        assert not is_secret_field(name), name
    assert may_hold_secret_fields('{"a":{"db_password":"x"}}')
    assert not may_hold_secret_fields('{"key":"refundOrder","value":1,"tokens":5}')


def test_candidate_values_that_are_short_common_or_numbers_are_kept() -> None:
    red = ItemRedactor(None, {"agent": "order", "max_tokens": 4200, "team": "ops",
                              "model": "acme:zz-ultra-9", "version": "2.1"})
    text = "order 4200 ops 2.1 acme zz-ultra-9"
    assert red.text(text) == f"order 4200 ops 2.1 {IDENTITY_MARK} {IDENTITY_MARK}"
    assert is_common_word("order") and is_common_word("Support")
    assert not is_common_word("acme") and not is_common_word("zz-ultra") and \
        not is_common_word("sonnet")


def test_numbers_policy() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert card_network("4111111111111111") and not card_network("9999000011112222")
    assert not ssn_ok("000", "12", "3456") and not ssn_ok("666", "12", "3456")
    assert not ssn_ok("900", "12", "3456") and not ssn_ok("123", "00", "3456")
    red = ItemRedactor()
    kept = "id 94111111111111111, x4111111111111111, 1.4111111111111111, 9999000011112222"
    assert red.text(kept) == kept


def test_gitleaks_rules_load_and_only_the_named_ones_are_skipped() -> None:
    rules = ruleset()
    assert len(rules.rules) >= 200
    assert set(rules.skipped) == set(SKIPPED)
    # a format only the gitleaks rules know (a Databricks token: hex, no entropy to spare)
    text = "token dapi0123456789abcdef0123456789abcdef here"
    assert [s.cls for s, _ in find_secrets(text, text.lower())] == []
    assert [text[s.start:s.end] for s in find_gitleaks(text, text.lower())] == [
        "dapi0123456789abcdef0123456789abcdef"]
    assert ItemRedactor().text(text) == f"token {SECRET_MARK} here"


def test_scrubber_surface_matches_what_render_uses() -> None:
    s = Scrubber(Redaction(extra_identity=["SupportBot"]), {"model": "zz-model-9"},
                 names=["gpt_lookup"])
    assert s.secrets is True
    assert s.value({"password": "x12345"}) == {"password": SECRET_MARK}
    assert s.texts(["SupportBot via gpt_lookup", "plain text"]) == [
        f"{IDENTITY_MARK} via gpt_lookup", "plain text"]
    assert s.counts["identity"] == 1 and s.counts["secret"] == 1
    assert escape_fences("a<<b<<<c<<<<<d") == "a<<b‹‹‹c‹‹‹‹‹d"
    assert Redaction() == Redaction() and "Redaction(" in repr(Redaction())
