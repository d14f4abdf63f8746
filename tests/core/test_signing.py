"""Webhook tokens and GitHub signatures: HMAC-SHA256, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.signing import github_signature_valid, token_matches, webhook_token

# GitHub's "Validating webhook deliveries" page gives this secret, body and signature as the
# check of an implementation.
GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_a_webhook_token_is_the_hex_hmac_sha256_of_the_secret_over_the_job_name() -> None:
    """RFC 4231 test case 2, with the job name as the message."""
    expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert expected == webhook_token("Jefe", "what do ya want for nothing?")


def test_a_webhook_token_is_stable_for_a_secret_and_a_job() -> None:
    """Nothing but the secret and the name goes in, so a restart keeps every URL valid."""
    assert webhook_token("s3cret", "poke") == webhook_token("s3cret", "poke")


def test_each_job_has_its_own_token() -> None:
    """One job's URL does not open another job."""
    assert webhook_token("s3cret", "poke") != webhook_token("s3cret", "post")


def test_rotating_the_secret_changes_every_token() -> None:
    """Rotation is how URLs are revoked."""
    assert webhook_token("old", "poke") != webhook_token("new", "poke")


def test_an_empty_webhook_secret_signs_nothing() -> None:
    """Anyone can compute an HMAC under the empty key, so no token is made from one."""
    with pytest.raises(ValueError, match="empty"):
        webhook_token("", "poke")


def test_the_right_token_matches() -> None:
    """The token made for a job opens that job."""
    assert token_matches("s3cret", "poke", webhook_token("s3cret", "poke"))


@pytest.mark.parametrize(
    "token",
    [
        "",
        "0" * 64,
        "not-hex",
        "é" * 64,
        "\udcff",
    ],
)
def test_a_wrong_or_odd_token_does_not_match(token: str) -> None:
    """Whatever a URL carries, a wrong token is just no match, never an exception."""
    assert not token_matches("s3cret", "poke", token)


def test_another_jobs_token_does_not_match() -> None:
    """A token is bound to its job name."""
    assert not token_matches("s3cret", "poke", webhook_token("s3cret", "post"))


def test_an_upper_case_token_does_not_match() -> None:
    """Tokens are compared exactly, as they were handed out."""
    assert not token_matches("s3cret", "poke", webhook_token("s3cret", "poke").upper())


def test_no_token_matches_under_an_empty_secret() -> None:
    """Not even the HMAC under the empty key."""
    forged = hmac.new(b"", b"poke", hashlib.sha256).hexdigest()
    assert not token_matches("", "poke", forged)


@given(st.text(max_size=40), st.text(min_size=1, max_size=40))
def test_a_token_matches_exactly_its_own_job(job: str, secret: str) -> None:
    """For any secret and name, the made token matches and a changed one does not."""
    token = webhook_token(secret, job)
    assert token_matches(secret, job, token)
    assert not token_matches(secret, job, token[:-1] + ("0" if token[-1] != "0" else "1"))


def test_githubs_documented_signature_is_valid() -> None:
    """The test values from GitHub's own documentation."""
    assert github_signature_valid(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE)


def test_an_upper_case_hex_signature_is_valid_too() -> None:
    """Hex digits mean the same in either case."""
    header = "sha256=" + GITHUB_SIGNATURE.removeprefix("sha256=").upper()
    assert github_signature_valid(GITHUB_SECRET, GITHUB_BODY, header)


def test_a_signature_of_another_body_is_not_valid() -> None:
    """One changed byte of the body breaks the signature."""
    assert not github_signature_valid(GITHUB_SECRET, b"Hello, World?", GITHUB_SIGNATURE)


def test_a_signature_with_another_secret_is_not_valid() -> None:
    """The GitHub secret is what vouches for the delivery."""
    assert not github_signature_valid("another secret", GITHUB_BODY, GITHUB_SIGNATURE)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=",
        "sha1=0123456789abcdef0123456789abcdef01234567",
        GITHUB_SIGNATURE.removeprefix("sha256="),
        GITHUB_SIGNATURE[:-1],
        GITHUB_SIGNATURE + "0",
        GITHUB_SIGNATURE[:-1] + "g",
        "SHA256=" + GITHUB_SIGNATURE.removeprefix("sha256="),
    ],
)
def test_a_missing_or_malformed_header_is_not_valid(header: str | None) -> None:
    """Only ``sha256=`` and 64 hex digits is read as a signature at all."""
    assert not github_signature_valid(GITHUB_SECRET, GITHUB_BODY, header)


def test_no_signature_is_valid_under_an_empty_secret() -> None:
    """An unset GitHub secret refuses every delivery rather than accept forged ones."""
    forged = "sha256=" + hmac.new(b"", GITHUB_BODY, hashlib.sha256).hexdigest()
    assert not github_signature_valid("", GITHUB_BODY, forged)
