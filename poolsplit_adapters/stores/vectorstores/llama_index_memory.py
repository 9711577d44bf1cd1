"""The store contract over a LlamaIndex ``VectorStoreIndex``: the engine of
the LlamaIndex adapter's `VectorIndexMemory`, which adds the selection (the
retriever's recall) on top. The verbs and their rules are
[`StoreVerbs`][]'; a node is an entry (its text is ``content``, its node id
``id``, every other field in ``metadata``).

Where the nodes live depends on the vector store: one that stores text
(``PGVectorStore``, ...) answers ``get_nodes``; the default
``SimpleVectorStore`` does not, and the index keeps the nodes in its
docstore instead. A node is replaced by deleting it and inserting the new
version, since not every vector store overwrites a node id in place.
[`version`][poolsplit_adapters.llama_index.vector_memory.VectorIndexMemory.version] counts the writes made through this object.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import BaseNode

from ..base import Change, StoreVerbs, prepare_entries
from ..checks import fresh_copy
from ..write_locks import holding
from .llama_index_nodes import node_to_entry, nodes_from
from .llama_index_search import PGVectorStoreSearch
from .llama_index_writes import node_write

#: The one write-lock key of an index's nodes (`holding`): a change reads
#: what it closes, then writes, so the writers of one index object take
#: turns (four supersedes of one entry at once over an in-process index
#: each closed it; over ``PGVectorStore`` the ids' locks held already).
_NODES = "vector index nodes"

__all__ = ["VectorIndexEntries"]


class VectorIndexEntries(StoreVerbs):
    """The store contract over a LlamaIndex ``VectorStoreIndex``: reads by
    id or namespace (from the vector store when it holds the text, else the
    docstore), writes through [`StoreVerbs`][] (delete, then insert). The
    LlamaIndex adapter's `VectorIndexMemory` adds the selection (the
    retriever's recall) on top.

    Args:
        index: the ``VectorStoreIndex`` (over any vector store).
    """

    def __init__(self, index: VectorStoreIndex) -> None:
        if not isinstance(index, VectorStoreIndex):
            raise TypeError(
                "VectorIndexMemory index must be a LlamaIndex VectorStoreIndex, got %s" % type(index).__name__
            )
        self.index = index
        self._writes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__, type(self.index.vector_store).__name__)

    @property
    def version(self) -> Tuple[str, int]:
        """``("writes", n)``: the writes made through this object."""
        return ("writes", self._writes)

    @property
    def _text_in_store(self) -> bool:
        return bool(self.index.vector_store.stores_text)

    # -- the contract's primitives ----------------------------------------------------

    def _nodes(self, ids: Optional[Sequence[str]], namespace: Optional[str] = None) -> List[BaseNode]:
        if self._text_in_store:
            if ids is not None and not ids:
                return []
            if ids is None and namespace is not None and PGVectorStoreSearch.serves(self.index.vector_store):
                # One subject's nodes, exactly (forget, export): the store's
                # own filters would paste the namespace into SQL text.
                return PGVectorStoreSearch(self.index.vector_store).in_namespace(namespace)
            if ids is None and not self.lists_entries:
                raise TypeError(
                    "%s cannot list its nodes without ids or filters; read by id with get()"
                    % type(self.index.vector_store).__name__
                )
            return list(self.index.vector_store.get_nodes(node_ids=None if ids is None else list(ids)))
        docstore = self.index.docstore
        if ids is None:
            return list(docstore.docs.values())
        found = (docstore.get_node(i, raise_error=False) for i in dict.fromkeys(ids))
        return [n for n in found if n is not None]

    @property
    def lists_entries(self) -> bool:
        """Whether every node can be listed (``entries()``): the docstore
        can; a vector store holding the text only when it lists without ids
        (Postgres' ``PGVectorStore`` needs ids or filters)."""
        if not self._text_in_store:
            return True
        try:
            from llama_index.vector_stores.postgres import PGVectorStore
        except ImportError:  # pragma: no cover - the postgres extra is not installed
            return True
        return not isinstance(self.index.vector_store, PGVectorStore)

    @staticmethod
    def _entries(nodes: Sequence[BaseNode]) -> List[Dict[str, Any]]:
        return [fresh_copy(node_to_entry(n, i)) for i, n in enumerate(nodes)]

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The entries with these ids, or every entry (of ``namespace`` when
        given; on ``PGVectorStore``, which lists nothing without ids, the
        entries of one ``namespace`` are read exactly, so
        ``forget(namespace=...)`` and ``entries(namespace)`` work there too)."""
        entries = self._entries(self._nodes(ids, namespace))
        return [e for e in entries if namespace is None or e.get("namespace") == namespace]

    def commit(self, change: Change) -> None:
        """Apply ``change``: verified against the nodes as read just before;
        replaced and forgotten nodes deleted, then every new version
        inserted (embedded by the index's model first), as one write that
        loses nothing if it fails (`node_write`: over ``PGVectorStore``
        one transaction, the ids locked from the read to the commit)."""
        ids = change.touched + list(change.forget)
        with holding(self.index, _NODES), node_write(self.index, ids, self._nodes) as write:
            stored = self._entries(write.read(ids))
            rows = change.rows(change.verify(stored))
            present = {e["id"] for e in stored}
            doomed = [e["id"] for e in rows if e["id"] in present] + [i for i in change.forget if i in present]
            write.replace(doomed, nodes_from(rows))
        if doomed or rows:  # committed
            with self._lock:
                self._writes += 1

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries``, replacing nodes with the same id; checked first
        as every write is. Returns their ids."""
        prepared = prepare_entries(entries, self.stamp())
        ids = [e["id"] for e in prepared]
        with holding(self.index, _NODES), node_write(self.index, ids, self._nodes) as write:
            present = {node.node_id for node in write.read(ids)}
            write.replace(sorted(present), nodes_from(prepared))
        if prepared:  # committed
            with self._lock:
                self._writes += 1
        return ids
