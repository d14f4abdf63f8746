"""The PostgreSQL store's password: given apart from the URL it reaches libpq as its own
connection parameter, libpq's environment works without it, and no error quotes it.

The test server trusts every connection from 127.0.0.1, so any password would be let in:
these tests look at the parameters each connection was made with instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cronduit.store.postgres import PostgresStore
from tests.helpers.postgres import fresh_schema, in_schema


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema:
        yield in_schema(schema)


def _used(store: PostgresStore) -> psycopg.Connection[Any]:
    """The connection a transaction of ``store`` runs on."""
    with store.transaction() as tx:
        return tx._cursor.connection  # type: ignore[attr-defined,no-any-return]


def test_a_password_given_apart_is_the_connections_and_in_no_conninfo_text(url: str) -> None:
    """The value of the secret settings.state_password names is libpq's ``password``
    parameter; the conninfo the pool holds (and could print) never has it."""
    store = PostgresStore(url, password="from-the-secret-42")
    try:
        connection = _used(store)
        assert "from-the-secret-42" == connection.info.password
        assert "from-the-secret-42" not in store._pool.conninfo
        assert "from-the-secret-42" not in connection.info.dsn
    finally:
        store.close()


def test_without_a_password_libpq_reads_pgpassword(url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """No state_password: libpq looks where it always does, PGPASSWORD first."""
    monkeypatch.setenv("PGPASSWORD", "from-the-environment-42")
    store = PostgresStore(url)
    try:
        assert "from-the-environment-42" == _used(store).info.password
    finally:
        store.close()


def test_a_password_given_apart_wins_over_pgpassword(url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "from-the-environment-42")
    store = PostgresStore(url, password="from-the-secret-42")
    try:
        assert "from-the-secret-42" == _used(store).info.password
    finally:
        store.close()


@pytest.mark.parametrize("migrate", [True, False])
def test_an_error_that_quotes_the_password_is_raised_without_it(migrate: bool) -> None:
    """libpq quotes a bad percent-encoding, the password's own included: the store raises
    the same error, of the same class, with *** in its place (before any pool could log
    it)."""
    with pytest.raises(psycopg.ProgrammingError) as raised:
        PostgresStore("postgresql://u:s3cret%ZZ42@127.0.0.1:1/test", migrate=migrate)
    assert 'invalid percent-encoded token: "***"' == str(raised.value).strip()


def test_a_refused_connection_with_a_password_given_apart_never_names_it() -> None:
    with pytest.raises(psycopg.OperationalError) as raised:
        PostgresStore("postgresql://u@127.0.0.1:1/test?connect_timeout=5",
                      password="from-the-secret-42")
    assert "refused" in str(raised.value)
    assert "from-the-secret-42" not in str(raised.value)
