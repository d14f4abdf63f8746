"""A PostgreSQL state's location as it may be shown, and every text said about it cleaned of
its password.

``settings.state`` may carry a password (``postgresql://user:PASSWORD@host/db``, or
``?password=`` in the URL, or ``password=`` in a libpq key/value string). The password never
appears in a log line, an error, ``doctor``, ``status`` or an HTTP answer (SPEC §10): what
shows the location shows :func:`redacted`, and an error of the driver is shown
:func:`scrubbed`, since libpq quotes the parts of a conninfo it cannot parse (a bad
percent-encoding quotes the password itself).

Pure text work, no driver: the CLI uses it before psycopg is ever loaded.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
"""What stands for a password where the location is shown."""
_SECRET_KEYS = frozenset({"password", "sslpassword"})
"""libpq's connection parameters that hold a secret: the server's password, the client key's."""
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PAIR = re.compile(r"(?P<key>[A-Za-z_]+)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'?|\S*)\s*")


def redacted(conninfo: str) -> str:
    """The location with the password in a URL's user part shown as ``***`` and every
    ``password=`` (and ``sslpassword=``) left out, for a URL or a key/value string alike.
    A directory (an SQLite state) comes back as it is."""
    scheme = _SCHEME.match(conninfo)
    if scheme is not None:
        return conninfo[:scheme.end()] + _redacted_url(conninfo[scheme.end():])
    if "=" in conninfo:
        return _redacted_pairs(conninfo)
    return conninfo


def scrubbed(text: str, conninfo: str, *more: str | None) -> str:
    """``text`` with every password ``conninfo`` holds, and each of ``more`` (a password
    given apart from the URL), replaced by ``***``: raw and percent-decoded, longest first."""
    secrets = {secret for secret in (*passwords(conninfo), *more) if secret}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def passwords(conninfo: str) -> set[str]:
    """Every spelling of every password in ``conninfo`` (empty: none)."""
    found: set[str] = set()
    scheme = _SCHEME.match(conninfo)
    if scheme is not None:
        base, _, query = conninfo[scheme.end():].partition("?")
        userinfo, at, _ = base.rpartition("@")
        if at and ":" in userinfo:
            found.add(userinfo.partition(":")[2])
        for item in query.split("&"):
            key, _, value = item.partition("=")
            if unquote(key) in _SECRET_KEYS:
                found.add(value)
    else:
        found.update(_value(match["value"]) for match in _PAIR.finditer(conninfo)
                     if match["key"] in _SECRET_KEYS)
    return {spelling for secret in found for spelling in (secret, unquote(secret)) if spelling}


def _redacted_url(rest: str) -> str:
    """A URL after its scheme. The user part ends at the last ``@`` before the query: libpq
    reads it to the first, but a password holding an ``@`` must not show its tail."""
    base, question, query = rest.partition("?")
    userinfo, at, hosts = base.rpartition("@")
    if at and ":" in userinfo:
        base = f"{userinfo.partition(':')[0]}:{HIDDEN}@{hosts}"
    kept = [item for item in query.split("&")
            if item and unquote(item.partition("=")[0]) not in _SECRET_KEYS]
    return base + (question + "&".join(kept) if kept else "")


def _redacted_pairs(conninfo: str) -> str:
    kept = [match.group(0).strip() for match in _PAIR.finditer(conninfo)
            if match["key"] not in _SECRET_KEYS]
    return " ".join(kept)


def _value(text: str) -> str:
    """A key/value string's value as libpq reads it: quotes removed, backslashes undone."""
    if text.startswith("'"):
        return re.sub(r"\\(.)", r"\1", text[1:].removesuffix("'"))
    return text
