"""VectorStoreMemory: a LangChain ``VectorStore`` as a store-contract memory.

Retrieval over a vector store already has its one recall plan
([`PoolSplitRetriever.from_vectorstore`][]: per-pool searches, corrections
by filter). This class adds the other half of the store contract
([`MemoryStore`][poolsplit_adapters.stores.MemoryStore]) on top, so the agent
middleware, a host's curation script and the SQLite store all write the same
way: the verbs and their rules are [`StoreVerbs`][]';
a document is an entry (``page_content`` = ``content``, ``id`` = the
document id, every other field in ``metadata``). The store engine (reads,
writes, ``PGVector``'s id claims) is
``stores.vectorstores.langchain_memory``; this class adds the selection.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from langchain_core.vectorstores import VectorStore

from ..poolsplit import Pool, ScoringContext, Selection
from ..settings import Framework, recall_options
from ..stores.vectorstores.langchain_documents import entry_to_document
from ..stores.vectorstores.langchain_memory import ListsDocuments, VectorStoreEntries
from .retriever import PoolSplitRetriever

__all__ = ["ListsDocuments", "VectorStoreMemory", "entry_to_document"]


class VectorStoreMemory(VectorStoreEntries):
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
        facts = [Pool("facts", 200, 5, ("fact",))]
        selection = memory.select(facts, {"message": "refund rounding"})  # the facts pool's best
        ```
    """

    def __init__(self, store: VectorStore, **retriever_options: Any) -> None:
        super().__init__(store)
        self.retriever_options = dict(retriever_options)

    # -- reading ----------------------------------------------------------------------

    def retriever(self, pools: Sequence[Pool], **options: Any) -> PoolSplitRetriever:
        """The per-pool retriever over the store for ``pools`` (the one
        recall plan); ``options`` override the constructor's."""
        return PoolSplitRetriever.from_vectorstore(self.store, pools, **{**self.retriever_options, **options})

    def _call(self, context: Optional[Mapping[str, Any]], options: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        ScoringContext(context, None)  # the core's check of a context, as every store's select
        context = context or {}
        recall_options(options, self.retriever_options, Framework.LANGCHAIN)
        return str(context.get("message") or ""), {"tags": context.get("tags"), "project": context.get("project")}

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """Recall per pool from the store, then select (the retriever's
        selection). ``options``: the retriever's settings (``now``,
        ``scorer``, ``visibility``, ...) and a store's (``settings.recall_options``)."""
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
