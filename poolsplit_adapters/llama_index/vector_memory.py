"""VectorIndexMemory: a LlamaIndex ``VectorStoreIndex`` as a store-contract memory.

Retrieval over an index already has its one recall plan
([`PoolSplitRetriever.from_vector_store_index`][]: per-pool searches,
corrections by filter). This class adds the store contract
([`MemoryStore`][poolsplit_adapters.stores.MemoryStore]) on top: the verbs and their
rules are [`StoreVerbs`][]'; a node is an
entry (its text is ``content``, its node id ``id``, every other field in
``metadata``). The store engine (reads and writes, where the nodes live) is
``stores.vectorstores.llama_index_memory``; this class adds the selection.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from llama_index.core import VectorStoreIndex

from ..poolsplit import Pool, ScoringContext, Selection
from ..settings import Framework, recall_options
from ..stores.vectorstores.llama_index_memory import VectorIndexEntries
from .retriever import PoolSplitRetriever

__all__ = ["VectorIndexMemory"]


class VectorIndexMemory(VectorIndexEntries):
    """Long-term memory in a LlamaIndex ``VectorStoreIndex``, under the store contract.

    Args:
        index: the ``VectorStoreIndex`` (over any vector store).
        **retriever_options: the options of
            [`PoolSplitRetriever.from_vector_store_index`][] used by every
            [`select`][] (``fetch_k``, ``always_k``, ``max_fetch_k``,
            ``token_counter``, ...). Each pool's recall grows until its
            budget is full or the index has nothing more, and
            ``selection.notes["recall"]`` says which
            (`FillingRecall`).

    Example:
        ```python
        from llama_index.core import VectorStoreIndex
        from poolsplit_adapters import Pool
        from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory

        memory = VectorIndexMemory(VectorStoreIndex([], embed_model=embed_model))
        memory.add([{"type": "correction", "scope": "always", "content": "Amounts in cents."}])
        memory.add([{"type": "fact", "content": "Refunds round half-even."}])
        selection = memory.select([Pool("facts", 200, 5, ("fact",))], {"message": "refund rounding"})
        ```
    """

    def __init__(self, index: VectorStoreIndex, **retriever_options: Any) -> None:
        super().__init__(index)
        self.retriever_options = dict(retriever_options)

    # -- reading ----------------------------------------------------------------------

    def retriever(self, pools: Sequence[Pool], **options: Any) -> PoolSplitRetriever:
        """The per-pool retriever over the index for ``pools`` (the one recall
        plan); ``options`` override the constructor's."""
        return PoolSplitRetriever.from_vector_store_index(self.index, pools, **{**self.retriever_options, **options})

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """Recall per pool from the index, then select (the retriever's
        selection). ``options``: the retriever's settings (``now``,
        ``scorer``, ``visibility``, ...) and a store's (``settings.recall_options``)."""
        ScoringContext(context, None)  # the core's check of a context, as every store's select
        context = context or {}
        recall_options(options, self.retriever_options, Framework.LLAMA_INDEX)
        retriever = self.retriever(pools, **options)
        _, selection = retriever.retrieve_with_selection(
            str(context.get("message") or ""), tags=context.get("tags"), project=context.get("project")
        )
        return selection  # noted by the call (expired ids too)
