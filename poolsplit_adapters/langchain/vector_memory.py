"""VectorStoreMemory: a LangChain ``VectorStore`` as a store-contract memory.

Retrieval over a vector store already has its one recall plan
([`PoolSplitRetriever.from_vectorstore`][]: per-pool searches, corrections
by filter). This class adds the other half of the store contract
([`MemoryStore`][poolsplit_adapters.stores.MemoryStore]) on top, so the agent
middleware, a host's curation script and the SQLite store all write the same
way: the verbs and their rules are [`StoreVerbs`][]';
a document is an entry (``page_content`` = ``content``, ``id`` = the
document id, every other field in ``metadata``).

A vector store has no change counter, so [`VectorStoreMemory.version`][]
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

from ..convert import stored_parts
from ..poolsplit import Pool, Selection
from ..stores.base import Change, IdHeldElsewhere, StoreVerbs, prepare_entries
from ..stores.postgres import check_entry_text
from ..stores.vectorstores.langchain_search import PGVectorAlwaysFetch, namespace_documents
from ..stores.vectorstores.pgvector_ids import aclaim_ids, claim_ids
from .documents import document_to_entry
from .retriever import PoolSplitRetriever

__all__ = ["ListsDocuments", "VectorStoreMemory", "entry_to_document"]


@runtime_checkable
class ListsDocuments(Protocol):
    """A vector store that keeps its documents in a dict by id (LangChain's
    ``InMemoryVectorStore``: ``store[id] = {"id", "vector", "text",
    "metadata"}``), so every entry can be listed."""

    store: Dict[str, Dict[str, Any]]


def entry_to_document(entry: Mapping[str, Any]) -> Document:
    """The document for an entry: ``content`` as page content, ``id`` as the
    document id, every other field as metadata (the inverse of
    [`document_to_entry`][])."""
    text, metadata = stored_parts(entry)  # page_content is what the store embeds
    entry_id = entry.get("id")
    return Document(page_content=text, metadata=metadata, id=None if entry_id is None else str(entry_id))


class VectorStoreMemory(StoreVerbs):
    """Long-term memory in a LangChain vector store, under the store contract.

    Args:
        store: any LangChain ``VectorStore`` (``InMemoryVectorStore``,
            ``PGVector``, ...).
        **retriever_options: the options of
            [`PoolSplitRetriever.from_vectorstore`][] used by every
            [`select`][] (``fetch_k``, ``always_k``, ``max_fetch_k``,
            ``token_counter``, ``scorer``, ``embeddings``, ...); a call's
            keywords override them. Each pool's recall grows until its budget
            is full or the store has nothing more, and
            ``selection.notes["recall"]`` says which
            (`FillingRecall`).

    Example:
        ```python
        from langchain_core.vectorstores import InMemoryVectorStore
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import HashEmbeddings
        from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory

        memory = VectorStoreMemory(InMemoryVectorStore(HashEmbeddings()))
        [fix] = memory.add([{"type": "correction", "scope": "always", "content": "Amounts in cents."}])
        memory.add([{"type": "fact", "content": "Refunds round half-even."}])
        selection = memory.select([Pool("facts", 200, 5, ("fact",))], {"message": "refund rounding"})
        ```
    """

    def __init__(self, store: VectorStore, **retriever_options: Any) -> None:
        if not isinstance(store, VectorStore):
            raise TypeError("VectorStoreMemory store must be a LangChain VectorStore, got %s" % type(store).__name__)
        self.store = store
        self.retriever_options = dict(retriever_options)
        self._writes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "VectorStoreMemory(%s)" % type(self.store).__name__

    @property
    def version(self) -> Tuple[str, int]:
        """``("writes", n)``: the writes made through this object."""
        return ("writes", self._writes)

    # -- reading ----------------------------------------------------------------------

    def retriever(self, pools: Sequence[Pool], **options: Any) -> PoolSplitRetriever:
        """The per-pool retriever over the store for ``pools`` (the one
        recall plan); ``options`` override the constructor's."""
        return PoolSplitRetriever.from_vectorstore(self.store, pools, **{**self.retriever_options, **options})

    @staticmethod
    def _call(context: Optional[Mapping[str, Any]], options: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        context = context or {}
        if options.pop("layering", None) is not None:
            options["progressive"] = True
        return str(context.get("message") or ""), {"tags": context.get("tags"), "project": context.get("project")}

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """Recall per pool from the store, then select (the retriever's
        selection). ``options``: the retriever's settings (``now``,
        ``scorer``, ``visibility``, ...); ``layering`` turns on progressive
        loading."""
        query, keywords = self._call(context, options)
        retriever = self.retriever(pools, **options)
        retriever.invoke(query, **keywords)
        assert retriever.last_selection is not None
        return retriever.last_selection  # noted by the call (expired ids too)

    async def aselect(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> Selection:
        """Async [`select`][]."""
        query, keywords = self._call(context, options)
        retriever = self.retriever(pools, **options)
        await retriever.ainvoke(query, **keywords)
        assert retriever.last_selection is not None
        return retriever.last_selection  # noted by the call (expired ids too)

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
            return [document_to_entry(d, n) for n, d in enumerate(found)]
        if namespace is not None and not isinstance(self.store, ListsDocuments):
            exact = namespace_documents(self.store, namespace)
            if exact is not None:
                return [document_to_entry(d, n) for n, d in enumerate(exact)]
        if not isinstance(self.store, ListsDocuments):
            raise TypeError(
                "%s cannot list its documents (no listing API): entries() needs a store such as "
                "InMemoryVectorStore; read by id with get()" % type(self.store).__name__
            )
        rows = list(self.store.store.values())
        documents = [Document(page_content=r["text"], metadata=dict(r["metadata"]), id=r["id"]) for r in rows]
        entries = [document_to_entry(d, n) for n, d in enumerate(documents)]
        return [e for e in entries if namespace is None or e.get("namespace") == namespace]

    async def aread(self, ids: Sequence[str]) -> List[Dict[str, Any]]:
        """Async [`read`][] by ids."""
        wanted = list(dict.fromkeys(ids))
        found = await self.store.aget_by_ids(wanted) if wanted else []
        return [document_to_entry(d, n) for n, d in enumerate(found)]

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
        return [entry_to_document(e) for e in entries]

    def commit(self, change: Change) -> None:
        """Apply ``change``: verified against the documents as read just
        before, then one ``add_documents`` (new and retired versions, by id)
        and one ``delete``. On ``PGVector``, whose ids are unique per
        database, an id another collection holds is refused
        ([`IdHeldElsewhere`][]), checked
        under a lock on the ids held until the write ended
        (`claim_ids`)."""
        with claim_ids(self.store, self._claimed(change)) as held:
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
        """Async [`commit`][] (on an async-mode ``PGVector``, the same claim)."""
        async with aclaim_ids(self.store, self._claimed(change)) as held:
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

    async def aadd(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Async [`add`][poolsplit_adapters.stores.StoreVerbs.add]."""
        change = self.adding(entries)
        if change.insert:
            await self.acommit(change)
        return [e["id"] for e in change.insert]
