"""PoolSplitCompressor: pool budgets re-applied to documents another stage produced."""

from __future__ import annotations

import datetime
from typing import Any, List, Mapping, Optional, Sequence, Union

from langchain_core.callbacks import (
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from .._frameworks import (
    check_pools,
    select_with,
)
from ..poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility, default_scorer
from ..tokens import default_counter
from .documents import DocumentConverter


class PoolSplitCompressor(BaseDocumentCompressor):
    """Re-apply pool budgets to documents another stage produced.

    Use it in ``ContextualCompressionRetriever(base_compressor=...)`` or a
    ``DocumentCompressorPipeline``; put it last, since a later filter could
    drop the corrections it puts first. Same arguments as the retriever's
    selection part (``pools``, ``k``, ``token_counter``, ``scorer``,
    ``project``, ``now``, ``scope``); :attr:`last_selection` holds the last report.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: List[Pool]
    k: Optional[int] = None
    token_counter: Optional[TokenCounter] = None
    scorer: Scorer = Field(default=default_scorer)
    project: Optional[str] = None
    now: Optional[datetime.datetime] = None
    visibility: Optional[Visibility] = None

    _last: Optional[Selection] = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _prepare(self) -> PoolSplitCompressor:
        self.pools = check_pools(self.pools)
        if self.token_counter is None:
            self.token_counter = default_counter()
        return self

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection report of the most recent call."""
        return self._last

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Optional[Callbacks] = None,
    ) -> List[Document]:
        """Select from ``documents`` for ``query`` (new documents returned)."""
        entries, source = DocumentConverter.entries(documents)
        assert self.token_counter is not None
        context = {"message": query or "", "project": self.project}
        selection = select_with(self, entries, context)
        self._last = selection
        return DocumentConverter.to_documents(selection, self.k, source)

    def as_runnable(self) -> Runnable[Union[Sequence[Document], Mapping[str, Any]], List[Document]]:
        """This selection as an LCEL runnable.

        Input: a list of documents (``retriever | selector``: no query, so
        ranking uses priority, recency, tags and project only), or a mapping
        ``{"documents": [...], "query": "..."}``, e.g.
        ``{"documents": retriever, "query": RunnablePassthrough()} | selector``.
        """

        def run(value: Union[Sequence[Document], Mapping[str, Any]], config: RunnableConfig) -> List[Document]:
            if isinstance(value, Mapping):
                return self.compress_documents(value["documents"], value.get("query", ""))
            return self.compress_documents(list(value), "")

        return RunnableLambda(run, name="PoolSplitSelector")
