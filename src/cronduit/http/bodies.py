"""Reading request bodies under a size limit, enforced while reading.

Checking ``Content-Length`` alone trusts the client, and reading everything before checking
lets a client fill the daemon's memory; so both: a declared length over the limit is refused
before a byte is read, and a body that grows past it is refused at the chunk that crosses.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

WEBHOOK_LIMIT = 1024 * 1024
"""A job webhook's body: at most 1 MiB."""
GITHUB_LIMIT = 25 * 1024 * 1024
"""A GitHub delivery: GitHub caps its payloads at 25 MB, and a big push needs them all."""


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, or HTTP 413 naming the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"body: larger than the limit of {limit:,} bytes")
