"""PoolSplitCompressor: pool budgets re-applied to documents another stage produced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from langchain_core.callbacks import AsyncCallbackManager, BaseCallbackManager, CallbackManager, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import ConfigDict

from ..call import select_given
from ..poolsplit import Selection
from ..reports import event_payload
from ..settings import AdapterSettings
from .documents import SELECTION_EVENT, DocumentConverter


class PoolSplitCompressor(AdapterSettings, BaseDocumentCompressor):
    """Re-apply pool budgets to documents another stage produced.

    Use it in ``ContextualCompressionRetriever(base_compressor=...)`` or a
    ``DocumentCompressorPipeline``; put it last, since a later filter could
    drop the corrections it puts first. Its settings are those of
    `AdapterSettings`. Every call emits
    the ``poolsplit_selection`` callback event (when it runs with callbacks)
    and sets `last_selection` (the call that finished last).

    Example:
        ```python
        # corrections outside the budgets; episodes cannot take the facts' room
        pools = [Pool("fixes", 0, 0, ("correction",)), Pool("facts", 300, 4, ("fact",)),
                 Pool("episodes", 300, 4, ("episode",))]
        compressor = PoolSplitCompressor(pools=pools, k=4)
        retriever = ContextualCompressionRetriever(base_compressor=compressor, base_retriever=wide)
        selector = compressor.as_runnable()    # retriever | selector in LCEL
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Optional[Callbacks] = None,
    ) -> list[Document]:
        """Select from ``documents`` for ``query`` (new documents returned)."""
        selection, returned = self._compress(documents, query)
        manager = callbacks if isinstance(callbacks, BaseCallbackManager) else CallbackManager.configure(callbacks)
        if isinstance(manager, CallbackManager):
            manager.on_custom_event(SELECTION_EVENT, event_payload(selection), run_id=manager.parent_run_id)
        return returned

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Optional[Callbacks] = None
    ) -> list[Document]:
        """[`compress_documents`][], with the event sent to async handlers."""
        selection, returned = self._compress(documents, query)
        manager = callbacks if isinstance(callbacks, BaseCallbackManager) else AsyncCallbackManager.configure(callbacks)
        if isinstance(manager, AsyncCallbackManager):
            await manager.on_custom_event(SELECTION_EVENT, event_payload(selection), run_id=manager.parent_run_id)
        return returned

    def _compress(self, documents: Sequence[Document], query: str) -> tuple[Selection, list[Document]]:
        entries, source = DocumentConverter.entries(documents)
        selection, returned = select_given(self, query or "", entries)
        return selection, DocumentConverter.to_documents(selection, returned, source)

    def as_runnable(self) -> Runnable[Union[Sequence[Document], Mapping[str, Any]], list[Document]]:
        """This selection as an LCEL runnable.

        Input: a list of documents (``retriever | selector``: no query, so
        ranking uses priority, recency, tags and project only), or a mapping
        ``{"documents": [...], "query": "..."}``, e.g.
        ``{"documents": retriever, "query": RunnablePassthrough()} | selector``.
        """

        def run(value: Union[Sequence[Document], Mapping[str, Any]], config: RunnableConfig) -> list[Document]:
            callbacks = config.get("callbacks")
            if isinstance(value, Mapping):
                documents: Any = value.get("documents")  # None when missing: named by the check there
                return self.compress_documents(documents, value.get("query", ""), callbacks)
            return self.compress_documents(value, "", callbacks)

        return RunnableLambda(run, name="PoolSplitSelector")
