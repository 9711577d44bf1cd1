"""The store contract over a LangChain ``VectorStore``: the engine of the
LangChain adapter's `VectorStoreMemory`, which adds the selection (the
retriever's recall) on top. The verbs and their rules are
[`StoreVerbs`][]'; a document is an entry (``page_content`` = ``content``,
``id`` = the document id, every other field in ``metadata``).

A vector store has no change counter, so [`version`][poolsplit_adapters.langchain.vector_memory.VectorStoreMemory.version]
counts the writes made through this object: a document another path adds is
seen by every [`select`][poolsplit_adapters.langchain.vector_memory.VectorStoreMemory.select] (a fresh recall) but does not
change the version. Listing every entry (``entries()``) needs a store that can
list its documents (`ListsDocuments`: LangChain's ``InMemoryVectorStore``);
a vector store without a listing API says so.

``PGVector`` keeps one id space per database, not per collection, and its
upsert would overwrite another collection's row: every write here that could
take an id (``add``/``write``, ``supersede``, ``put_many``, the async twins)
is refused with [`IdHeldElsewhere`][] instead
(`pgvector_ids`).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, runtime_checkable

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from ..base import Change, IdHeldElsewhere, StoreVerbs, WriteReport, prepare_entries
from ..checks import fresh_copy
from ..postgres import check_entry_text
from ..write_locks import aholding, holding
from ..write_path import Derived
from .langchain_documents import document_to_entry, entry_to_document
from .langchain_search import PGVectorAlwaysFetch, namespace_documents
from .pgvector_ids import aclaim_ids, claim_ids

__all__ = ["ListsDocuments", "VectorStoreEntries", "entry_to_document"]

#: The one write-lock key of a vector store's entries (`holding`): a
#: change reads what it closes, then writes, so writers of one store object
#: take turns (four supersedes of one entry at once each closed it).
_ENTRIES = "vector store entries"


@runtime_checkable
class ListsDocuments(Protocol):
    """A vector store that keeps its documents in a dict by id (LangChain's
    ``InMemoryVectorStore``: ``store[id] = {"id", "vector", "text",
    "metadata"}``), so every entry can be listed."""

    store: Dict[str, Dict[str, Any]]


class VectorStoreEntries(StoreVerbs):
    """The store contract over a LangChain ``VectorStore``: reads by id or
    namespace, writes through [`StoreVerbs`][] (one ``add_documents`` and
    one ``delete`` a change), ids claimed on ``PGVector``. The LangChain
    adapter's `VectorStoreMemory` adds the selection (the retriever's
    recall) on top.

    Args:
        store: any LangChain ``VectorStore`` (``InMemoryVectorStore``,
            ``PGVector``, ...).
    """

    def __init__(self, store: VectorStore) -> None:
        if not isinstance(store, VectorStore):
            raise TypeError("VectorStoreMemory store must be a LangChain VectorStore, got %s" % type(store).__name__)
        self.store = store
        self._writes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__, type(self.store).__name__)

    @property
    def version(self) -> Tuple[str, int]:
        """``("writes", n)``: the writes made through this object."""
        return ("writes", self._writes)

    # -- the contract's primitives ----------------------------------------------------

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The entries with these ids (``get_by_ids``), or every entry (of
        ``namespace`` when given) of a store that can list its documents; on
        Postgres (``PGVector``, v2 ``PGVectorStore``) the entries of one
        ``namespace`` are read exactly, so ``forget(namespace=...)`` and
        ``entries(namespace)`` work there too."""
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            found = self.store.get_by_ids(wanted) if wanted else []
            return [fresh_copy(document_to_entry(d, n)) for n, d in enumerate(found)]
        if namespace is not None and not isinstance(self.store, ListsDocuments):
            exact = namespace_documents(self.store, namespace)
            if exact is not None:
                return [fresh_copy(document_to_entry(d, n)) for n, d in enumerate(exact)]
        if not isinstance(self.store, ListsDocuments):
            raise TypeError(
                "%s cannot list its documents (no listing API): entries() needs a store such as "
                "InMemoryVectorStore; read by id with get()" % type(self.store).__name__
            )
        rows = list(self.store.store.values())
        documents = [Document(page_content=r["text"], metadata=dict(r["metadata"]), id=r["id"]) for r in rows]
        entries = [fresh_copy(document_to_entry(d, n)) for n, d in enumerate(documents)]
        return [e for e in entries if namespace is None or e.get("namespace") == namespace]

    async def aread(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Async [`read`][] (by ids: ``aget_by_ids``; a listing: the sync one)."""
        if ids is None:
            return self.read(None, namespace)
        wanted = list(dict.fromkeys(ids))
        found = await self.store.aget_by_ids(wanted) if wanted else []
        return [fresh_copy(document_to_entry(d, n)) for n, d in enumerate(found)]

    def _planned(self, change: Change, stored: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[str]]:
        rows = change.rows(change.verify(stored))
        gone = {e["id"] for e in stored}
        return rows, [i for i in change.forget if i in gone]

    @staticmethod
    def _claimed(change: Change) -> List[str]:
        """Every id ``change`` may write: its touched ids and the repeats'
        own (a repeat whose kept entry is gone is inserted under its id)."""
        return change.touched + [str(candidate["id"]) for _, candidate in change.repeat]

    @staticmethod
    def _unchecked(rows: Sequence[Mapping[str, Any]], change: Change) -> List[Mapping[str, Any]]:
        """The planned rows the claim has not checked yet: all but the
        change's new entries as given (checked first, one round trip each)."""
        checked = {(str(e["id"]), e.get("namespace")) for e in change.insert}
        return [r for r in rows if (str(r["id"]), r.get("namespace")) not in checked]

    @staticmethod
    def _refuse_held(
        rows: Sequence[Mapping[str, Any]], held: Sequence[str], batch: Sequence[Mapping[str, Any]]
    ) -> None:
        """[`IdHeldElsewhere`][] when another
        collection holds ids of ``rows`` (nothing is written then), naming
        the first by its position in ``batch`` (what the caller gave) when
        it is there."""
        if not held:
            return
        first = next(r for r in rows if r["id"] == held[0])
        position = next((n for n, e in enumerate(batch) if e["id"] == held[0]), None)
        raise IdHeldElsewhere(first, position, held)

    def _to_documents(self, entries: Sequence[Mapping[str, Any]]) -> List[Document]:
        """The documents to write, all built before any is written: on
        PGVector a NUL (which Postgres text cannot hold) is an EntryError
        naming entry and field, and nothing of the batch is written."""
        if PGVectorAlwaysFetch.serves(self.store):
            for position, entry in enumerate(entries):
                check_entry_text(entry, position)
        return [entry_to_document(e, n) for n, e in enumerate(entries)]

    def commit(self, change: Change) -> None:
        """Apply ``change``: verified against the documents as read just
        before, then one ``add_documents`` (new and retired versions, by id)
        and one ``delete``. On ``PGVector``, whose ids are unique per
        database, an id another collection holds is refused
        ([`IdHeldElsewhere`][]), checked
        under a lock on the ids held until the write ended
        (`claim_ids`). One at a time with the store object's other writers
        of this process (`holding`): other stores have no claim."""
        with holding(self.store, _ENTRIES), claim_ids(self.store, self._claimed(change)) as held:
            # First the new entries: an id another namespace holds is that, not
            # "already in the store" (whose advice, supersede, would retire the other's entry).
            self._refuse_held(change.insert, held(change.insert), change.insert)
            rows, doomed = self._planned(change, self.read(change.touched + list(change.forget)))
            rest = self._unchecked(rows, change)
            self._refuse_held(rest, held(rest), change.insert)
            docs = self._to_documents(rows)
            if docs:
                self.store.add_documents(docs, ids=[str(d.id) for d in docs])
            if doomed:
                self.store.delete(doomed)
        self._wrote(bool(docs or doomed))

    async def acommit(self, change: Change) -> None:
        """Async [`commit`][] (on an async-mode ``PGVector``, the same claim;
        `aholding`)."""
        async with aholding(self.store, _ENTRIES), aclaim_ids(self.store, self._claimed(change)) as held:
            self._refuse_held(change.insert, await held(change.insert), change.insert)
            rows, doomed = self._planned(change, await self.aread(change.touched + list(change.forget)))
            rest = self._unchecked(rows, change)
            self._refuse_held(rest, await held(rest), change.insert)
            docs = self._to_documents(rows)
            if docs:
                await self.store.aadd_documents(docs, ids=[str(d.id) for d in docs])
            if doomed:
                await self.store.adelete(doomed)
        self._wrote(bool(docs or doomed))

    def _wrote(self, changed: bool) -> None:
        if changed:
            with self._lock:
                self._writes += 1

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries`` in one ``add_documents``, overwriting documents
        with the same id (the vector store's own upsert); checked first as
        every write is. Returns their ids. Only this collection's own
        documents are overwritten: on ``PGVector`` an id another collection
        holds is refused ([`commit`][] says how)."""
        rows = prepare_entries(entries, self.stamp())
        ids = [str(r["id"]) for r in rows]
        docs = self._to_documents(rows)  # checked before any I/O
        with claim_ids(self.store, ids) as held:
            self._refuse_held(rows, held(rows), rows)
            if docs:
                self.store.add_documents(docs, ids=ids)
        self._wrote(bool(docs))
        return ids

    async def aput_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Async [`put_many`][]."""
        rows = prepare_entries(entries, self.stamp())
        ids = [str(r["id"]) for r in rows]
        docs = self._to_documents(rows)  # checked before any I/O
        async with aclaim_ids(self.store, ids) as held:
            self._refuse_held(rows, await held(rows), rows)
            if docs:
                await self.store.aadd_documents(docs, ids=ids)
        self._wrote(bool(docs))
        return ids

    async def aderive(self, given: Sequence[Mapping[str, Any]]) -> Derived:
        """An async write's derivation here: the entries checked and stamped
        (`adding`), each inserted as given (a vector store's async API
        lists nothing a repeat could be compared with: the async ``add``
        of a vector store writes what it is given, as ``put_many`` does,
        and refuses an id stored already)."""
        change = self.adding(given)
        return list(change.insert), change, WriteReport([str(e["id"]) for e in change.insert], [])
