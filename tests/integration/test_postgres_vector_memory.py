"""The store contract over Postgres vector stores: LangChain PGVector through
VectorStoreMemory and LlamaIndex PGVectorStore through VectorIndexMemory, on
the embedded Postgres + pgvector (the same verbs' semantics as every store)."""

from __future__ import annotations

import datetime
from typing import Any, Iterator

import pytest
import sqlalchemy
from contract_checks import (
    check_a_changed_statement_supersedes_the_older,
    check_add_and_supersede,
    check_add_with_supersedes_closes_its_predecessor,
    check_supersede_back_to_a_closed_version,
)
from pg_embeddings import DIMS, HashedNgramEmbeddings, HashedNgramLlamaEmbedding
from pg_server import Database

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.stores import MemoryStore

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 200, 5, ("fact",))]


@pytest.fixture
def langchain_memory(pg_database: Database) -> Iterator[Any]:
    PGVector = pytest.importorskip("langchain_postgres").PGVector
    from poolsplit_adapters.langchain import VectorStoreMemory

    engine = sqlalchemy.create_engine(pg_database.url)
    store = PGVector(HashedNgramEmbeddings(), connection=engine, collection_name="contract", embedding_length=DIMS)
    yield VectorStoreMemory(store, token_counter=lambda text: max(1, len(text) // 4))
    engine.dispose()


@pytest.fixture
def llama_memory(pg_database: Database) -> Iterator[Any]:
    PGVectorStore = pytest.importorskip("llama_index.vector_stores.postgres").PGVectorStore
    from llama_index.core import VectorStoreIndex

    from poolsplit_adapters.llama_index import VectorIndexMemory

    store = PGVectorStore(
        connection_string=pg_database.url,
        async_connection_string=pg_database.url,
        table_name="contract",
        embed_dim=DIMS,
    )
    index = VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())
    yield VectorIndexMemory(index, token_counter=lambda text: max(1, len(text) // 4))
    if store._engine is not None:
        store._engine.dispose()


def check_the_contract(memory: Any) -> None:
    assert isinstance(memory, MemoryStore)
    memory.add([{"id": "fix", "type": "correction", "scope": "always", "content": "Amounts in cents."}])
    with pytest.raises(EntryError, match="'scope'"):
        memory.add([{"id": "x", "content": "Use cents.", "scope": " always"}])
    check_add_and_supersede(memory)
    selection = memory.select(POOLS, {"message": "refund rounding"}, now=NOW)
    assert [(c.entry["id"], c.always) for c in selection.chosen] == [("fix", True), ("v2", False)]
    assert memory.delete("v2") is True
    assert memory.get("v1") is None and memory.get("v2") is None and memory.get("fix") is not None
    assert memory.delete("v2") is False
    check_supersede_back_to_a_closed_version(memory)
    check_add_with_supersedes_closes_its_predecessor(memory)
    # PGVector and PGVectorStore list no entries: the statements' namespace is read
    check_a_changed_statement_supersedes_the_older(memory, namespace="u1")


def test_the_store_contract_holds_over_pgvector(langchain_memory):
    check_the_contract(langchain_memory)


def test_the_store_contract_holds_over_pgvectorstore(llama_memory):
    check_the_contract(llama_memory)


def test_the_vector_memories_over_postgres_implement_the_one_contract(langchain_memory, llama_memory):
    from contract_checks import check_implements_the_contract

    # Their sync engines have no async twin to run here (the async PGVector's are test_postgres_shared_ids').
    check_implements_the_contract(langchain_memory, async_twins=False)
    check_implements_the_contract(llama_memory, async_twins=False)
