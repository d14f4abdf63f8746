"""The cursor of a page of runs: opaque to clients, the id of the page's last run inside.

Pages are keyed on the store's order of runs (``find_runs`` goes on below the run a cursor
names), so a cursor stays good however many runs are created after it was given.
"""

from __future__ import annotations

import base64
import binascii

from cronduit.intake import RequestRefused

_PREFIX = "r1."
"""Names the cursor's form, so another can follow without breaking the cursors given."""


def encode_cursor(run_id: str) -> str:
    """The cursor of the page that goes on after the run ``run_id``."""
    return _PREFIX + base64.urlsafe_b64encode(run_id.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The run id inside ``cursor``; 422 for one this API could not have given."""
    body = cursor.removeprefix(_PREFIX)
    try:
        if body == cursor or not body.isascii():
            raise ValueError
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RequestRefused(422, "cursor: not one this API gave") from None
