"""Writer and reader processes for the Postgres fault and load tests.

The tests run these functions in child processes forked from a
``multiprocessing`` fork server that has imported the frameworks once, so a
worker starts in milliseconds instead of re-importing them:

- :func:`write` adds batches of entries through the framework's store
  (``langchain``: PGVector; ``llama``: LlamaIndex's PGVectorStore), one
  framework call per batch, and sends ``("ack", batch)`` on its pipe once
  that call has returned: the acknowledgement.
- :func:`read` queries through PoolSplitRetriever (``("ready", n)`` after
  its first query) until told to stop,
  checks that every entry it sees is whole (content and every metadata key
  as written), and sends ``("partial", id)`` for any that is not, then
  ``("read", checked)``.

Entries are made from their ids alone (:func:`entry`), so anyone can tell
what a whole entry looks like without asking the writer.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Dict, List

from pg_corpus import NOW, POOLS

COLLECTION = "memory"
TYPES = ["note", "task", "fact", "skill", "growth"]
QUERIES = ["checkout deploy staging", "writer batch item", "rollback release notes"]


def entry_id(writer: int, batch: int, item: int) -> str:
    return "w%d-b%03d-i%03d" % (writer, batch, item)


def batch_ids(writer: int, batch: int, size: int) -> List[str]:
    return [entry_id(writer, batch, i) for i in range(size)]


def entry(entry_id_: str) -> Dict[str, Any]:
    """The whole entry for an id, exactly as the writer stores it."""
    writer, batch, item = (int(part[1:]) for part in entry_id_.split("-"))
    return {
        "id": entry_id_,
        "content": "Writer %d batch %d item %d: checkout deploy to staging, release notes and rollback."
        % (writer, batch, item),
        "type": TYPES[item % len(TYPES)],
        "batch": "w%d-b%03d" % (writer, batch),
        "created": "2026-07-0%dT00:00:00Z" % (1 + item % 6),
        "source": "writer-%d" % writer,
        "base_priority": 1 + item % 9,
    }


def metadata(e: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in e.items() if k not in ("id", "content")}


def whole(entry_id_: str, content: str, meta: Dict[str, Any]) -> bool:
    expected = entry(entry_id_)
    stored = {k: v for k, v in meta.items() if k in expected}
    return content == expected["content"] and stored == metadata(expected)


# -- the two integrations -------------------------------------------------------------


def langchain_store(url: str) -> Any:
    from langchain_postgres import PGVector
    from pg_embeddings import DIMS, HashedNgramEmbeddings

    return PGVector(HashedNgramEmbeddings(), connection=url, collection_name=COLLECTION, embedding_length=DIMS)


def langchain_add(store: Any, ids: List[str]) -> None:
    from langchain_core.documents import Document

    docs = [Document(page_content=entry(i)["content"], id=i, metadata=metadata(entry(i))) for i in ids]
    store.add_documents(docs)  # one INSERT ... ON CONFLICT (id) DO UPDATE, one transaction


def llama_store(url: str) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore
    from pg_embeddings import DIMS

    return PGVectorStore(connection_string=url, async_connection_string=url, table_name=COLLECTION, embed_dim=DIMS)


def llama_index(store: Any) -> Any:
    from llama_index.core import VectorStoreIndex
    from pg_embeddings import HashedNgramLlamaEmbedding

    return VectorStoreIndex.from_vector_store(store, embed_model=HashedNgramLlamaEmbedding())


def llama_add(index: Any, ids: List[str]) -> None:
    from poolsplit_adapters.llama_index.nodes import nodes_from

    nodes = nodes_from([entry(i) for i in ids])
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    index.insert_nodes(nodes)  # one PGVectorStore.add: one transaction


def with_name(url: str, name: str) -> str:
    """The URL with an ``application_name``, so the tests can find this
    process's session in ``pg_stat_activity``."""
    return "%s&application_name=%s" % (url, name)


# -- roles ----------------------------------------------------------------------------


def write(kind: str, url: str, writer: int, first: int, last: int, size: int, out: Connection) -> None:
    url = with_name(url, "writer-%d" % writer)
    if kind == "langchain":
        store = langchain_store(url)
        for batch in range(first, last):
            langchain_add(store, batch_ids(writer, batch, size))
            out.send(("ack", batch))
    else:
        index = llama_index(llama_store(url))
        for batch in range(first, last):
            llama_add(index, batch_ids(writer, batch, size))
            out.send(("ack", batch))


def read(kind: str, url: str, seconds: float, stop: Event, out: Connection) -> None:
    url = with_name(url, "reader")
    if kind == "langchain":
        from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever

        lc = LangChainRetriever.from_vectorstore(langchain_store(url), POOLS, fetch_k=30, now=NOW)

        def seen(query: str) -> List[Any]:
            return [(d.id, d.page_content, d.metadata) for d in lc.invoke(query)]
    else:
        from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever

        li = LlamaRetriever.from_vector_store_index(llama_index(llama_store(url)), POOLS, fetch_k=30, now=NOW)

        def seen(query: str) -> List[Any]:
            return [(n.node.node_id, n.node.get_content(), n.node.metadata) for n in li.retrieve(query)]

    checked, deadline, turn = 0, time.monotonic() + seconds, 0
    while time.monotonic() < deadline and not stop.is_set():
        for entry_id_, content, meta in seen(QUERIES[turn % len(QUERIES)]):
            if not whole(entry_id_, content, meta):
                out.send(("partial", entry_id_))
            checked += 1
        if turn == 0:
            out.send(("ready", checked))  # the test starts its writers only now
        turn += 1
        stop.wait(0.05)  # leave the two cores to the writers: a load test, not a race
    out.send(("read", checked))


#: What the fork server imports once, before any worker is forked.
PRELOAD = [
    "pg_workers",
    "pg_embeddings",
    "langchain_postgres",
    "llama_index.vector_stores.postgres",
    "llama_index.core",
    "poolsplit_adapters.langchain",
    "poolsplit_adapters.llama_index",
]
