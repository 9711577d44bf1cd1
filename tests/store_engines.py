"""Every in-process store engine the store contract holds for, built fresh
in a temporary folder: one table for the contract checks and the lifecycle
sequences (Postgres runs the contract in tests/integration)."""

from __future__ import annotations

import pathlib
import sqlite3
from typing import Any, Callable, Dict, Sequence

from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from llama_index.core import VectorStoreIndex

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, HashEmbeddings
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.llama_index import PoolSplitMemoryStore
from poolsplit_adapters.llama_index.embeddings import HashEmbedding
from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory
from poolsplit_adapters.stores import InProcessStore, SQLiteMemoryStore

#: The namespace of the LangGraph engines (a BaseStoreMemory reads one).
NAMESPACE = ("memories", "u1")


def counter(text: str) -> int:
    return max(1, len(text) // 4)


def engines(pools: Sequence[Pool]) -> Dict[str, Callable[[pathlib.Path], Any]]:
    """Name -> a builder of a fresh store in a folder (``pools``: the
    LlamaIndex memory store's plan)."""

    def basestore_sqlite(tmp: pathlib.Path) -> Any:
        store = SqliteStore(sqlite3.connect(str(tmp / "lg.db"), check_same_thread=False, isolation_level=None))
        store.setup()
        return BaseStoreMemory(store, NAMESPACE, token_counter=counter)

    return {
        "sqlite": lambda tmp: SQLiteMemoryStore(tmp / "memory.db", token_counter=counter),
        "in-process": lambda tmp: InProcessStore(token_counter=counter),
        "basestore-inmemory": lambda tmp: BaseStoreMemory(InMemoryStore(), NAMESPACE, token_counter=counter),
        "basestore-sqlite": basestore_sqlite,
        "langchain-vectorstore": lambda tmp: VectorStoreMemory(
            InMemoryVectorStore(HashEmbeddings()), token_counter=counter
        ),
        "llama-vector-index": lambda tmp: VectorIndexMemory(
            VectorStoreIndex([], embed_model=HashEmbedding()), token_counter=counter
        ),
        "llama-memory-store": lambda tmp: PoolSplitMemoryStore([], pools, token_counter=counter),
        "llama-memory-store-over-sqlite": lambda tmp: PoolSplitMemoryStore(
            [], pools, store=SQLiteMemoryStore(tmp / "durable.db", token_counter=counter), token_counter=counter
        ),
    }
