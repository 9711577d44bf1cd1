"""One write to a LlamaIndex ``VectorStoreIndex`` that never loses what it
replaces: the writes of `VectorIndexEntries` (``commit``, ``put_many``).

A node is replaced by deleting it and inserting the new version (not every
vector store overwrites a node id in place). Run as the index's own
``delete_nodes`` then ``insert_nodes``, those were two steps with the
embedding model's call between them: a model that failed (a timeout, an
outage) or a connection that dropped after the delete left neither version,
so a ``supersede`` of a correction that raised had deleted the correction.

So the new versions are embedded before anything is deleted, on every
vector store (a model's failure changes nothing). Over Postgres
(``PGVectorStore``, which holds the nodes itself) the whole write is one
transaction on the store's own session: the ids locked (transaction-level
advisory locks, `id_locks`, the keys ``PGVector``'s claim takes), the stored
versions read, the change planned from them, the old rows deleted and the
new ones inserted, committed together or not at all. The locks also keep
two writers of one new id (two processes, two memory objects) from both
inserting it: ``PGVectorStore`` has no unique node id, so both rows stayed.
The ids stay locked while the model embeds (it embeds what the read decided).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, Sequence

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import BaseNode

from ...recall_search import Search
from ..internals import require
from .id_locks import lock_statements
from .llama_index_search import PGVectorStoreSearch

__all__ = ["NodeWrite", "node_write"]

#: The private names of LlamaIndex's ``PGVectorStore`` one transaction of
#: ours is made of, beyond those its searches use: a table row of a node.
_ROW = ("_node_to_table_row",)


class NodeWrite:
    """The reads and the replacement of one write (see the module): `read`
    the stored nodes of some ids, then `replace` (delete ``doomed``, insert
    ``nodes``, embedded first)."""

    def __init__(self, index: VectorStoreIndex, read: Callable[[Sequence[str]], List[BaseNode]]) -> None:
        self.index = index
        self.read = read

    def embedded(self, nodes: Sequence[BaseNode]) -> List[BaseNode]:
        """``nodes`` carrying their embeddings (the index's model, called once
        for the ones without), before anything is deleted."""
        require(
            self.index,
            ("_get_node_with_embedding",),
            "llama-index-core",
            "the method embedding nodes with the index's model",
            __name__,
        )
        return list(self.index._get_node_with_embedding(nodes)) if nodes else []

    def replace(self, doomed: Sequence[str], nodes: Sequence[BaseNode]) -> None:
        """Delete the nodes ``doomed`` names, then insert ``nodes``: the new
        versions embedded first, so a model's failure deletes nothing."""
        ready = self.embedded(nodes)
        if doomed:
            self.index.delete_nodes(list(doomed), delete_from_docstore=True)
        if ready:
            self.index.insert_nodes(ready)  # embedded: not embedded again


class _PostgresNodeWrite(NodeWrite):
    """`NodeWrite` as one transaction on a ``PGVectorStore``'s session."""

    def __init__(self, index: VectorStoreIndex, session: Any) -> None:
        super().__init__(index, self._read)
        self.store: Any = index.vector_store
        self.session = session

    def _read(self, ids: Sequence[str]) -> List[BaseNode]:
        import sqlalchemy

        if not ids:
            return []
        table = self.store._table_class
        statement = sqlalchemy.select(table.node_id, table.text, table.metadata_).where(
            table.node_id.in_(list(dict.fromkeys(ids)))
        )
        rows = self.session.execute(statement).all()
        found = PGVectorStoreSearch(self.store)._nodes(Search("ids", len(rows) or 1, always=True), rows)
        return [n.node for n in found]

    def replace(self, doomed: Sequence[str], nodes: Sequence[BaseNode]) -> None:
        import sqlalchemy

        ready = self.embedded(nodes)
        table = self.store._table_class
        if doomed:
            self.session.execute(sqlalchemy.delete(table).where(table.node_id.in_(list(doomed))))
        for node in ready:
            self.session.add(self.store._node_to_table_row(node))
        self.session.flush()


def _transactional(index: VectorStoreIndex) -> bool:
    """Whether the index's nodes live in a ``PGVectorStore`` alone (no copy
    in the docstore, which a transaction of the store cannot include)."""
    return PGVectorStoreSearch.serves(index.vector_store) and not getattr(index, "_store_nodes_override", False)


@contextlib.contextmanager
def node_write(
    index: VectorStoreIndex, ids: Sequence[str], read: Callable[[Sequence[str]], List[BaseNode]]
) -> Iterator[NodeWrite]:
    """One write of ``index`` touching ``ids``: over a ``PGVectorStore``
    one transaction holding the ids' locks, committed when the block ends
    (rolled back if it raises); elsewhere the index's own calls, the new
    versions embedded before anything is deleted (``read``: the caller's
    reader of stored nodes).

    Example:
        ```python
        with node_write(index, ["fix-1"], reader) as write:
            stored = write.read(["fix-1"])
            write.replace(["fix-1"], nodes_from([new_version]))
        ```
    """
    if not _transactional(index):
        yield NodeWrite(index, read)
        return
    store: Any = index.vector_store
    require(store, _ROW, "llama-index-vector-stores-postgres", "the method making a table row of a node", __name__)
    store._initialize()
    with store._session() as session, session.begin():
        for statement in lock_statements(ids):
            session.execute(statement)
        yield _PostgresNodeWrite(index, session)
