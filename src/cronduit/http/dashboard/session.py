"""The dashboard's login sessions and its guards against cross-site requests.

A login with the API token opens a session: a random id, the cookie's only content, mapped
in this daemon's memory to what the session holds (its CSRF token, when it ends, and a
digest of the token it was opened with). The token itself never goes into the cookie, and
a session opened with a token that is no longer the API token is over: changing the token
logs every browser out. Sessions live as long as the daemon (a restart logs everyone out),
at most :data:`SESSION_HOURS` each, and at most :data:`MAX_SESSIONS` at once (the oldest
goes first).

Every form carries a CSRF token, checked on every POST; a POST whose ``Origin`` is another
site's, or that the browser marks ``Sec-Fetch-Site: cross-site``, is refused before that.
The login form has no session yet: its token is bound to a random cookie of its own
(``cronduit_login``), set with the form, so only a page this daemon served can log in.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from starlette.requests import Request

SESSION_COOKIE = "cronduit_session"
LOGIN_COOKIE = "cronduit_login"
THEME_COOKIE = "cronduit_theme"
SESSION_HOURS = 12
"""How long a session lasts from its login."""
MAX_SESSIONS = 1000
"""Sessions kept at once; a login past this ends the oldest."""


@dataclass(frozen=True)
class Session:
    """One logged-in browser."""

    csrf: str
    ends: datetime
    token_digest: bytes
    """A digest of the API token the session was opened with (never the token)."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Sessions:
    """The sessions of one daemon, in its memory, and the key its login forms are signed
    with (random per daemon)."""

    def __init__(self) -> None:
        self._open: OrderedDict[str, Session] = OrderedDict()
        self._key = secrets.token_bytes(32)

    def open(self, token: str, now: datetime) -> tuple[str, Session]:
        """A new session for a browser that gave ``token`` (already checked): its id."""
        while len(self._open) >= MAX_SESSIONS:
            self._open.popitem(last=False)
        session_id = secrets.token_urlsafe(32)
        session = Session(secrets.token_urlsafe(32), now + timedelta(hours=SESSION_HOURS),
                          _digest(token))
        self._open[session_id] = session
        return session_id, session

    def find(self, session_id: str | None, token: str | None, now: datetime
             ) -> Session | None:
        """The session of that id while it lasts and ``token`` (the API token now) is the
        one it was opened with; None otherwise (and a session past either is dropped)."""
        if not session_id:
            return None
        session = self._open.get(session_id)
        if session is None:
            return None
        if now >= session.ends or token is None or not hmac.compare_digest(
                session.token_digest, _digest(token)):
            self._open.pop(session_id, None)
            return None
        return session

    def close(self, session_id: str | None) -> None:
        """End the session (a logout); nothing for an unknown id."""
        if session_id:
            self._open.pop(session_id, None)

    def login_csrf(self, nonce: str) -> str:
        """The login form's CSRF token, bound to the browser's ``cronduit_login`` nonce."""
        return hmac.new(self._key, b"login:" + nonce.encode(), hashlib.sha256).hexdigest()

    def login_csrf_valid(self, nonce: str | None, given: str | None) -> bool:
        if not nonce or not given:
            return False
        return hmac.compare_digest(self.login_csrf(nonce).encode(), given.encode())


def csrf_valid(session: Session | None, given: str | None) -> bool:
    """Whether a form's ``csrf`` is its session's token."""
    if session is None or not given:
        return False
    return hmac.compare_digest(session.csrf.encode(), given.encode())


def cross_site(request: Request) -> str | None:
    """Why a POST comes from another site, or None: its ``Origin`` names another host than
    the one it was sent to, or the browser says ``Sec-Fetch-Site: cross-site``."""
    if request.headers.get("sec-fetch-site", "").lower() == "cross-site":
        return "Sec-Fetch-Site: cross-site"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    host = request.headers.get("host", "")
    parts = urlsplit(origin)
    if origin == "null" or parts.netloc.lower() != host.lower() or (
            parts.scheme not in ("http", "https")):
        return f"Origin: {origin[:100]} is not this listener's"
    return None


def secure_cookie(request: Request) -> bool:
    """Cookies are Secure when the browser reached the listener over HTTPS (a proxy in
    front): a Secure cookie sent over plain HTTP, on loopback, would never come back."""
    forwarded = request.headers.get("x-forwarded-proto", "").lower()
    return request.url.scheme == "https" or forwarded == "https"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)
