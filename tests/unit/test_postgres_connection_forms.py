"""``PostgresConnection``: one URL in, each store's form out (no server
needed; tests/integration/test_postgres_connection.py connects with them)."""

from __future__ import annotations

import doctest
import pathlib
import re

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


@pytest.mark.parametrize("dbname", ["a b", "q?r", "p%2F", "x/y", "db#1", "o'b", 'x"y', "ünï"])
def test_a_socket_url_names_any_database_name_exactly(dbname):
    """``socket_url`` wrote the name into the URI as it was: ``a b`` was
    refused by libpq's parser, ``q?r`` cut the query, ``p%2F`` named
    database ``p/``, ``db#1`` lost its fragment."""
    conninfo = pytest.importorskip("psycopg.conninfo")
    from poolsplit_adapters.stores.pg_install import socket_url

    url = socket_url(pathlib.Path("/tmp/pg sock"), dbname)
    assert conninfo.conninfo_to_dict(url) == {
        "dbname": dbname,
        "host": "/tmp/pg sock",
        "port": "5432",
        "user": "postgres",
    }
    assert conninfo.conninfo_to_dict(PostgresConnection(url).conninfo)["dbname"] == dbname


@pytest.mark.parametrize("value", ["/tmp/a\\b/sock", "/tmp/o'brien/sock", "/tmp/tab\there", "/tmp/new\nline", "/x\\'"])
def test_a_server_setting_is_written_as_postgresql_conf_reads_it_back(value):
    """``postgresql.conf`` reads a backslash in a quoted value as an escape:
    a folder ``a\\b`` was written as it was and read as ``a<backspace>``, so
    the server put its socket elsewhere and did not start."""
    from poolsplit_adapters.stores.pg_install import conf_value

    assert read_conf_value(conf_value(value)) == value


def read_conf_value(quoted: str) -> str:
    """Postgres' own reading of a quoted ``postgresql.conf`` value (its
    ``GUC_scanstr``): ``''`` is a quote, a backslash escapes b f n r t, an
    octal number or the next character; a raw newline ends the line."""
    assert quoted[0] == quoted[-1] == "'" and "\n" not in quoted
    body, out, n = quoted[1:-1], [], 0
    while n < len(body):
        char = body[n]
        if char == "\\":
            n += 1
            escape = body[n]
            if escape in "01234567":
                digits = re.match(r"[0-7]{1,3}", body[n:]).group(0)  # type: ignore[union-attr]
                out.append(chr(int(digits, 8)))
                n += len(digits)
                continue
            out.append({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}.get(escape, escape))
        elif char == "'":
            assert body[n + 1] == "'"
            out.append("'")
            n += 1
        else:
            out.append(char)
        n += 1
    return "".join(out)


@pytest.mark.parametrize(
    "given, shown",
    [
        (
            "host=/run/pg dbname=memory user=me password=s3cret",
            "PostgresConnection('postgresql://?dbname=memory&host=%2Frun%2Fpg&password=***&user=me')",
        ),
        (
            "postgresql://me@db/memory?password=s3cret&sslmode=require",
            "PostgresConnection('postgresql://me@db/memory?password=***&sslmode=require')",
        ),
        (
            "postgresql://me:s3cret@db/memory?PASSWORD=s3cret",
            "PostgresConnection('postgresql://me:***@db/memory?PASSWORD=***')",
        ),
    ],
)
def test_a_password_given_as_a_parameter_never_shows_in_repr(given, shown):
    """The password as libpq's keyword (``password=``), or as a URI query
    parameter, showed in ``repr`` (and so in every log of the object):
    only the ``user:password@`` form was masked."""
    pytest.importorskip("psycopg")
    pg = PostgresConnection(given)
    assert repr(pg) == shown
    assert "s3cret" not in repr(pg) and "s3cret" not in str(pg)
    assert "s3cret" in pg.conninfo  # the connection itself still has it


def test_an_unparsable_keyword_string_is_refused_without_its_password():
    pytest.importorskip("psycopg")
    with pytest.raises(ArgumentError) as raised:
        PostgresConnection("host=/run/pg password='s3cret unclosed")
    assert "s3cret" not in str(raised.value)
    assert "password=***" in str(raised.value)
