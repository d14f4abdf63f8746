"""Who may start a job over HTTP: job webhook tokens and GitHub delivery signatures (SPEC §4).

Both are HMAC-SHA256 with a secret the daemon reads at the edge and passes in here, so the
check is a pure function of values. Comparisons go through ``hmac.compare_digest``: a
comparison that stops at the first differing character would tell an attacker, one
timing at a time, how much of a guessed token is right.

An empty secret signs nothing: anyone can compute an HMAC under the empty key, so every
check here fails for it rather than accept what looks like a valid token.
"""

from __future__ import annotations

import hashlib
import hmac
import re

SIGNATURE_PREFIX = "sha256="
"""How GitHub's ``X-Hub-Signature-256`` header starts; the hex digest follows."""

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def webhook_token(secret: str, job: str) -> str:
    """The token in a job's webhook URL ``/hooks/<job>/<token>``: hex HMAC-SHA256 of the
    webhook secret over the job name.

    Derived rather than stored, so the URL survives restarts and reloads with nothing to
    persist, and one token never opens another job. Rotating the secret revokes every
    URL at once; there is no per-job revocation short of renaming the job.
    """
    if not secret:
        # The message names the problem, never a value.
        raise ValueError("the webhook secret is empty; an empty key signs nothing")
    return _hex_hmac(secret, job.encode())


def token_matches(secret: str, job: str, token: str) -> bool:
    """Whether ``token`` is the webhook token of ``job``, compared in constant time.

    Any string is accepted as ``token`` (it comes from a URL); one that is not even the
    right length or alphabet simply does not match. The caller should ask even for a job
    that does not exist or takes no webhooks, so the three 404 cases cost the same time.
    """
    if not secret:
        return False
    expected = _hex_hmac(secret, job.encode())
    return hmac.compare_digest(expected.encode(), token.encode("utf-8", "surrogatepass"))


def github_signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` (``X-Hub-Signature-256``) signs ``body`` with the GitHub secret.

    GitHub sends ``sha256=`` and the hex HMAC-SHA256 of the raw request body, so the check
    must run on the bytes as received, before any JSON parsing: a re-serialised body
    would not match. A missing or malformed header is simply not a valid signature.
    """
    if not secret or header is None or not header.startswith(SIGNATURE_PREFIX):
        return False
    given = header.removeprefix(SIGNATURE_PREFIX).strip().lower()
    if not _HEX_DIGEST.fullmatch(given):
        return False
    return hmac.compare_digest(_hex_hmac(secret, body).encode(), given.encode())


def _hex_hmac(secret: str, message: bytes) -> str:
    """Hex HMAC-SHA256 of ``message`` under the UTF-8 bytes of ``secret``."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
