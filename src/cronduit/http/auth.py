"""Who may ask: the API token (``Authorization: Bearer``), for writes always and for reads
on a listener other than loopback (SPEC §9). One check for both, so a read and a write
refuse a wrong token alike."""

from __future__ import annotations

import hmac

from starlette.exceptions import HTTPException

from cronduit.http.gateway import Gateway

BEARER = {"WWW-Authenticate": "Bearer"}


def api_token(gateway: Gateway) -> str | None:
    """The API token's value: the secret ``settings.api_token`` names; None while unset."""
    name = gateway.config().settings.api_token
    return gateway.secret(name) if name else None


def authorize(gateway: Gateway, header: str | None) -> None:
    """Pass a request that carries the API token; 401 otherwise (and while no token is
    set: the API is closed then, not open)."""
    expected = api_token(gateway)
    if expected is None:
        raise HTTPException(401, "the API is closed: settings.api_token names no secret "
                                 "that is set", headers=BEARER)
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                             expected.encode()):
        raise HTTPException(401, "Authorization: expected Bearer <api token>", headers=BEARER)


def authorize_read(gateway: Gateway, header: str | None) -> None:
    """Pass a read: open on a loopback listener, else as :func:`authorize` says."""
    if not gateway.config().settings.reads_open:
        authorize(gateway, header)
