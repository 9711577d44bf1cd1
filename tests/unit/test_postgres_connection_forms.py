"""``PostgresConnection``: one URL in, each store's form out (no server
needed; tests/integration/test_postgres_connection.py connects with them)."""

from __future__ import annotations

import doctest

import pytest

from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.stores import postgres
from poolsplit_adapters.stores.postgres import PostgresConnection


@pytest.mark.parametrize(
    "given",
    [
        "postgresql://me:pw@db:5432/memory?sslmode=require",
        "postgres://me:pw@db:5432/memory?sslmode=require",
        "postgresql+psycopg://me:pw@db:5432/memory?sslmode=require",
        "postgresql+psycopg2://me:pw@db:5432/memory?sslmode=require",
        "  postgresql+asyncpg://me:pw@db:5432/memory?sslmode=require ",
    ],
)
def test_every_url_form_gives_both_forms_with_the_rest_unchanged(given):
    pg = PostgresConnection(given)
    assert pg.conninfo == "postgresql://me:pw@db:5432/memory?sslmode=require"
    assert pg.sqlalchemy_url == "postgresql+psycopg://me:pw@db:5432/memory?sslmode=require"
    assert pg.llama_index == {"connection_string": pg.sqlalchemy_url, "async_connection_string": pg.sqlalchemy_url}
    assert repr(pg) == "PostgresConnection('postgresql://me:***@db:5432/memory?sslmode=require')"


def test_a_libpq_keyword_string_becomes_a_uri_of_query_parameters():
    pytest.importorskip("psycopg")  # the postgres extra's driver parses libpq's keyword form
    pg = PostgresConnection("host=/run/pg dbname=memory user=me")
    assert pg.conninfo == "postgresql://?dbname=memory&host=%2Frun%2Fpg&user=me"
    assert pg.sqlalchemy_url == "postgresql+psycopg://?dbname=memory&host=%2Frun%2Fpg&user=me"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("", "must be a non-empty string"),
        (None, "must be a non-empty string"),
        ("mysql://me@db/memory", "must start with postgresql://"),
        ("postgresql+mysqldb://me@db/memory", "must start with postgresql://"),
        ("host='unclosed", "is not a libpq connection string"),
    ],
)
def test_a_value_that_is_no_postgres_url_is_an_argument_error_naming_url(bad, message):
    with pytest.raises(ArgumentError, match=message):
        PostgresConnection(bad)


def test_the_docstring_example_runs():
    assert doctest.testmod(postgres).failed == 0
