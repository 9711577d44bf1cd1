"""The statement of a pool search over v2 ``PGVectorStore``, compiled for
Postgres (no server): each metadata key read where the store declares it,
the store's distance, and no value in the SQL text.

The server-side behaviour (short pages completed exactly, sync and async)
is in ``tests/integration/test_postgres_short_pages.py``.
"""

from __future__ import annotations

from typing import Any, Tuple

import pytest

from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.recall import Search

indexes = pytest.importorskip("langchain_postgres.v2.indexes")
sqlalchemy = pytest.importorskip("sqlalchemy")

from sqlalchemy.dialects.postgresql import psycopg  # noqa: E402

from poolsplit_adapters.stores.vectorstores.pgvector_v2_search import StoreTable  # noqa: E402

HOSTILE = ["x'); DROP TABLE canary; --", "o'brien", "$$dollar$$", "ünïcødé 名前"]


def table(metadata_columns: Tuple[str, ...] = (), json: Any = "langchain_metadata", **kw: Any) -> StoreTable:
    fields: dict = dict(
        schema="public",
        name="memory_v2",
        id_column="langchain_id",
        content_column="content",
        embedding_column="embedding",
        metadata_columns=metadata_columns,
        metadata_json_column=json,
        distance=indexes.DistanceStrategy.COSINE_DISTANCE,
        query_options=(),
    )
    fields.update(kw)
    return StoreTable(**fields)


def compiled(statement: Any) -> Any:
    return statement.compile(dialect=psycopg.dialect())


def search(**kw: Any) -> Search:
    return Search("pool:notes", 20, types=(HOSTILE[0], "note"), namespaces=tuple(HOSTILE[1:]), pool="notes", **kw)


def test_json_metadata_is_read_with_the_json_operator_and_every_value_is_bound():
    sql = compiled(table().statement(search(), [0.5, 0.25]))
    text = str(sql)
    assert "FROM public.memory_v2" in text
    assert "langchain_metadata ->>" in text
    assert "embedding <=>" in text and "cosine_distance(" in text
    assert "ORDER BY" in text and "LIMIT" in text
    for value in HOSTILE + ["note", "0.5"]:
        assert value not in text, value
    bound = repr(sql.params)
    for value in HOSTILE:
        assert repr(value) in bound, value
    assert sql.params["query_vector"] == "[0.5, 0.25]"


def test_a_key_the_store_keeps_in_a_column_is_read_from_that_column():
    sql = str(compiled(table(metadata_columns=("type",)).statement(search(), [1.0])))
    assert "memory_v2.type IN" in sql
    assert "langchain_metadata ->>" in sql  # the namespace still comes from the JSON column
    sql = str(compiled(table(metadata_columns=("type", "namespace"), json=None).statement(search(), [1.0])))
    assert "memory_v2.type IN" in sql and "memory_v2.namespace IN" in sql
    assert "->>" not in sql


def test_a_key_in_no_column_and_no_json_column_is_an_argument_error_naming_it():
    with pytest.raises(ArgumentError, match="'namespace'"):
        table(metadata_columns=("type",), json=None).statement(search(), [1.0])


def test_the_untyped_side_search_has_no_type_condition_as_over_pgvector():
    sql = str(compiled(table().statement(Search("pool:notes:untyped", 5, untyped=True, pool="notes"), [1.0])))
    assert "->>" not in sql and "IS NULL" not in sql


def test_the_stores_distance_orders_and_scores():
    strategy = indexes.DistanceStrategy.INNER_PRODUCT
    sql = str(compiled(table(distance=strategy).statement(search(), [1.0])))
    assert "ORDER BY public.memory_v2.embedding <#>" in sql
    assert "inner_product(" in sql


def test_the_stores_query_options_are_set_with_name_and_value_bound():
    options = indexes.HNSWQueryOptions(ef_search=123)
    from poolsplit_adapters.stores.vectorstores.pgvector_v2_search import _setting

    pairs = tuple(_setting(p) for p in options.to_parameter())
    assert pairs == (("hnsw.ef_search", "123"),)
    first, sizing = table(query_options=pairs).settings(20)
    sql = compiled(first)
    assert "123" not in str(sql) and "ef_search" not in str(sql)
    assert sql.params == {"name": "hnsw.ef_search", "value": "123"}
    assert compiled(sizing).params["k"] == 20
