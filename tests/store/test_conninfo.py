"""A PostgreSQL state's location as it is shown: never with its password (SPEC §10)."""

from __future__ import annotations

import pytest

from cronduit.store.conninfo import passwords, redacted, scrubbed


@pytest.mark.parametrize(("given", "shown"), [
    ("postgresql://cronduit:s3cret@db:5432/state", "postgresql://cronduit:***@db:5432/state"),
    ("postgres://cronduit:p%40ss@db/state", "postgres://cronduit:***@db/state"),
    ("postgresql://:s3cret@db/state", "postgresql://:***@db/state"),
    ("postgresql://cronduit@db/state", "postgresql://cronduit@db/state"),
    ("postgresql://db/state", "postgresql://db/state"),
    ("postgresql://u:s3cret@h1:5432,h2:5433/state?target_session_attrs=read-write",
     "postgresql://u:***@h1:5432,h2:5433/state?target_session_attrs=read-write"),
    ("postgresql://db/state?password=s3cret", "postgresql://db/state"),
    ("postgresql://db/state?sslmode=require&password=s3cret&options=-csearch_path%3Dx",
     "postgresql://db/state?sslmode=require&options=-csearch_path%3Dx"),
    ("postgresql://db/state?sslpassword=keypass&pass%77ord=s3cret", "postgresql://db/state"),
    ("postgresql://u:s3cr@t@db/state", "postgresql://u:***@db/state"),
    ("postgresql://u:s3%ZZcret@db/state", "postgresql://u:***@db/state"),
    ("host=db user=cronduit password=s3cret dbname=state", "host=db user=cronduit dbname=state"),
    ("host=db password = 's3 cr\\'et' dbname=state", "host=db dbname=state"),
    ("/var/lib/cronduit", "/var/lib/cronduit"),
])
def test_the_shown_location_has_no_password(given: str, shown: str) -> None:
    """In the user part of a URL it shows as ***; as a parameter it is left out whole."""
    assert shown == redacted(given)


@pytest.mark.parametrize(("given", "found"), [
    ("postgresql://u:s3cret@db/state", {"s3cret"}),
    ("postgresql://u:p%40ss@db/state", {"p%40ss", "p@ss"}),
    ("postgresql://db/state?password=a%26b", {"a%26b", "a&b"}),
    ("host=db password='s3 cr\\'et'", {"s3 cr'et"}),
    ("host=db sslpassword=k password=p", {"k", "p"}),
    ("postgresql://u@db/state", set()),
])
def test_every_spelling_of_a_password_is_found(given: str, found: set[str]) -> None:
    assert found == passwords(given)


def test_a_text_is_scrubbed_of_the_urls_password_and_one_given_apart() -> None:
    """libpq quotes what it cannot parse: a bad percent-encoding quotes the password."""
    text = 'invalid percent-encoded token: "s3%ZZcret"; p@ss; from-secret'
    assert 'invalid percent-encoded token: "***"; ***; ***' == scrubbed(
        text, "postgresql://u:s3%ZZcret@db/x?password=p%40ss", "from-secret", None)
