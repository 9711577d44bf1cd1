"""PoolSplitRetriever: pool-split selection as a LlamaIndex retriever."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from typing_extensions import Unpack

from ..call import AdapterCall, StoreCall, checked_metric, checked_plan
from ..checks import ArgumentError, check_overrides, check_tags
from ..index import MemoryIndex
from ..poolsplit import Pool, Selection
from ..recall import (
    RecallPlan,
    VisibleEntries,
    present_types,
    store_scoring,
    with_query_vector,
)
from ..render import explain_last
from ..reports import capture_selections
from ..settings import AdapterSettings, CallOverrides, Framework
from ..stores.vectorstores.llama_index_nodes import check_query, one_node_per_id
from ..stores.vectorstores.llama_index_search import IndexRecall
from .events import announce
from .nodes import AnyNode, NodeConverter

QueryType = Union[str, QueryBundle]

# Per-call overrides of retrieve_with_selection, read by _retrieve: LlamaIndex's
# retrieve() takes a query only, and going through it keeps its spans and events.
_OVERRIDES: contextvars.ContextVar[Optional[tuple[int, CallOverrides]]] = contextvars.ContextVar(
    "poolsplit_llama_index_overrides", default=None
)


class PoolSplitRetriever(BaseRetriever):
    """Retrieve nodes into reserved per-type budgets, corrections first.

    Args:
        pools: the pool plan.
        nodes: the memory (nodes, documents or ``NodeWithScore``), held in a
            [`MemoryIndex`][]. Or use
            [`from_vector_store_index`][] to recall per pool from an index.
        recall: what [`from_vector_store_index`][] passes (give ``nodes``
            or ``recall``, not both).
        tags: scoring-context tags for every query.
        show_selection_to_llm: keep the ``poolsplit`` metadata in the LLM view.
        callback_manager, verbose: as for any LlamaIndex retriever.
        **settings: the selection settings (``k``, ``token_counter``,
            ``scorer``, ``visibility``, ``project``, ``now``; ``pools="auto"``
            with ``total_tokens``/``total_entries`` and the task signals
            ``goal``/``action_type``/``phase``; ``progressive``;
            ``embeddings``, a LlamaIndex ``BaseEmbedding``) of
            `AdapterSettings`, held in
            `settings`.

    Every call emits a [`PoolSplitSelectionEvent`][]; a caller gets its
    own selection from [`retrieve_with_selection`][] (or
    [`capture_selections`][]), while
    [`last_selection`][] is the selection of the call that finished last.

    Example:
        ```python
        retriever = PoolSplitRetriever([Pool("facts", 200, 4, ("fact",)), Pool("skills", 60, 1, ("skill",))], nodes)
        engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        nodes, selection = retriever.retrieve_with_selection("how do we deploy?", tags=["ops"])
        ```
    """

    def __init__(
        self,
        pools: Sequence[Pool],
        nodes: Optional[Sequence[AnyNode]] = None,
        *,
        recall: Optional[IndexRecall] = None,
        tags: Sequence[str] = (),
        show_selection_to_llm: bool = False,
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
        **settings: Any,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.settings = AdapterSettings.held_by(
            "PoolSplitRetriever", Framework.LLAMA_INDEX, PoolSplitRetriever.__init__, pools=pools, **settings
        )
        if (nodes is None) == (recall is None):
            raise ArgumentError(
                "PoolSplitRetriever needs nodes=, or use PoolSplitRetriever.from_vector_store_index(...)"
            )
        if nodes is not None and (isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence)):
            raise ArgumentError("nodes must be a list of nodes, got %s" % type(nodes).__name__)
        self.context_tags = check_tags(tags)
        self._converter = NodeConverter(show_selection_to_llm)
        self._recall = recall
        # Both fixed here, so decided once (LangChain's retriever does the same).
        self._reuse_query, self._store_scores = (
            (False, False) if recall is None else store_scoring(self.settings.scorer, recall.embed_model, recall.metric)
        )
        self._index: Optional[MemoryIndex] = None
        self._held_types: Optional[frozenset[str]] = None
        self._source: dict[int, BaseNode] = {}
        if nodes is not None:
            assert self.settings.token_counter is not None
            # Built with the scorer's structures: the first call costs what the others do.
            counter, scorer = self.settings.token_counter, self.settings.scorer
            self._index, self._source = NodeConverter.index(nodes, counter, (scorer,))
            one_node_per_id(nodes)  # each checked to be a node by the line above
            self._held_types = present_types((n.node if isinstance(n, NodeWithScore) else n).metadata for n in nodes)

    @classmethod
    def from_vector_store_index(
        cls,
        index: VectorStoreIndex,
        pools: Sequence[Pool],
        *,
        fetch_k: int = RecallPlan.fetch_k,
        always_k: int = RecallPlan.always_k,
        max_fetch_k: int = RecallPlan.max_fetch_k,
        breadth: float = RecallPlan.breadth,
        type_key: str = "type",
        embed_model: Optional[BaseEmbedding] = None,
        store_metric: Any = None,
        setup_store: bool = True,
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Recall candidates per pool from ``index``, then select.

        The searches are the `RecallPlan`'s,
        as ``MetadataFilters``: each pool's types on ``type_key`` (``IN``),
        nodes without a type (``IS_EMPTY``; they count as ``"note"``) for a
        pool that admits ``"note"``, ``scope == "always"`` for the
        always-scope fetch (``always_k`` a round, doubled while it comes back
        full, independent of similarity),
        and the visibility's namespaces (``IN``) on all of them. The query is
        embedded once per retrieval (``embed_model``, default the index's
        own), sync and async, and that vector is the scorer's too (with
        ``embeddings=`` in the same vector space): one query embedding per call.

        Budgets are filled: a pool search that came back full while its
        pool's budget has room runs again with ``similarity_top_k`` at least
        doubled, up to ``max_fetch_k`` (`FillingRecall`),
        and until a pool's candidates hold ``breadth`` (default 2) times its
        budget, so the scorer's order chooses from more than fits;
        ``selection.notes["recall"]`` says how far each pool's recall went
        and which pools the index ran out for.

        With ``embeddings=`` (the index's own model) each recalled node's
        relevance is its ``NodeWithScore.score``, turned into a cosine by
        ``store_metric`` (a `StoreMetric`;
        known for ``SimpleVectorStore`` in its default cosine mode), so nodes
        are not embedded again per query. For a store whose metric is not
        known and not given, the scorer embeds the recalled nodes itself.

        Over ``PGVectorStore`` the first search creates the filter index the
        pool searches need when it is missing, then ``ANALYZE``
        (`ensure_filter_index`:
        once, under an advisory lock, so concurrent first uses create it
        once; with ``type_key="type"``, the key it serves). Where it is
        refused the searches go on without it (a
        `StoreSetupWarning` says
        so). ``setup_store=False`` creates nothing.
        """
        # Each call recalls for its own plan (pools="auto" varies by message),
        # so the recall plan holds the search sizes only; the settings check
        # the pools, once, when the retriever is built below.
        plan = checked_plan(fetch_k=fetch_k, always_k=always_k, max_fetch_k=max_fetch_k, breadth=breadth)
        recall = IndexRecall(index, plan, type_key=type_key, embed_model=embed_model, setup_store=setup_store)
        recall.metric = checked_metric(index, store_metric)
        return cls(pools, recall=recall, **kwargs)

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection of the call that finished last (None before the
        first); see [`retrieve_with_selection`][] for your own."""
        return self.settings.last_selection

    def expand_tool(self) -> Any:
        """A LlamaIndex ``FunctionTool`` ``expand_memory(entry_id)`` over this
        retriever's nodes (``nodes=`` mode), limited to what its visibility
        lets a query see: give it to an agent that reads summaries
        (``progressive=True``) so it can load an entry's full text.

        Example:
            ```python
            agent = FunctionAgent(tools=[retriever.expand_tool()], llm=llm)
            ```
        """
        if self._index is None:
            raise ArgumentError(
                "expand_tool() needs nodes= mode; for an index, build "
                "memory.expand_tools.llama_index_expand_tool over the memory the agent may read"
            )
        from ..memory.expand_tools import llama_index_expand_tool

        return llama_index_expand_tool(VisibleEntries(self._index, self.settings.visibility))

    def explain(self) -> str:
        """The why/why-not table of the call that finished last."""
        return explain_last(self.last_selection)

    def retrieve_with_selection(
        self, query: QueryType, **overrides: Unpack[CallOverrides]
    ) -> tuple[list[NodeWithScore], Selection]:
        """``retrieve(query)`` plus this call's own selection, with per-call
        `CallOverrides` (the LangChain
        retriever's ``invoke`` keywords)."""
        with self._overridden(query, overrides) as mine:
            nodes = self.retrieve(query)
        return nodes, mine[-1]

    async def aretrieve_with_selection(
        self, query: QueryType, **overrides: Unpack[CallOverrides]
    ) -> tuple[list[NodeWithScore], Selection]:
        """[`retrieve_with_selection`][], async."""
        with self._overridden(query, overrides) as mine:
            nodes = await self.aretrieve(query)
        return nodes, mine[-1]

    @contextlib.contextmanager
    def _overridden(self, query: Any, overrides: CallOverrides) -> Iterator[list[Selection]]:
        check_query(query)  # a bad query or overrides fail before any work
        check_overrides(overrides, tuple(CallOverrides.__annotations__))
        token = _OVERRIDES.set((id(self), overrides))
        try:
            with capture_selections() as mine:
                yield mine
        finally:
            _OVERRIDES.reset(token)

    def _overrides(self) -> Optional[CallOverrides]:
        current = _OVERRIDES.get()
        return current[1] if current is not None and current[0] == id(self) else None

    def _call(self, query: QueryBundle) -> AdapterCall:
        given: CallOverrides = {**(self._overrides() or {})}
        if given.get("tags") is None:
            given["tags"] = self.context_tags
        return AdapterCall(self.settings, query.query_str, given, entry_types=self._entry_types)

    def _entry_types(self) -> Optional[frozenset[str]]:
        """The types the source holds, for ``pools="auto"``: the nodes'
        (fixed at construction), else the index's (`IndexRecall.entry_types`)."""
        if self._held_types is not None or self._recall is None:
            return self._held_types
        return self._recall.entry_types()

    def _finish(self, call: AdapterCall, selection: Selection, source: dict[int, BaseNode]) -> list[NodeWithScore]:
        returned = call.finish(selection)
        announce("retriever", selection)
        return self._converter.to_nodes(returned, source)

    def _store_call(self, call: AdapterCall, query: QueryBundle) -> StoreCall[NodeWithScore]:
        """One call's growing recall over the index (`StoreCall`), for a prepared ``query``."""
        recall = self._recall
        assert recall is not None
        scorer = call.scorer
        if self._reuse_query:  # the query's vector, when it is the message's
            scorer = with_query_vector(scorer, query.query_str, recall.query_vector(query))
        entries = functools.partial(NodeConverter.entries, recalled=True, type_key=recall.type_key)
        # The recalled nodes' relevance from their store scores, when those serve the scorer.
        scores_of = _store_scores if self._store_scores else None
        return StoreCall(call, recall.plan, scorer, recall.metric, entries, scores_of)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call = self._call(query_bundle)
        recall = self._recall
        if recall is None:
            assert self._index is not None
            return self._finish(call, call.select_in(self._index), self._source)
        query = recall.prepare(query_bundle)
        one = self._store_call(call, query)
        selection = one.fill(lambda searches: recall.run(searches, query))
        return self._finish(call, selection, one.source)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        call = self._call(query_bundle)
        recall = self._recall
        if recall is None:
            assert self._index is not None
            return self._finish(call, call.select_in(self._index), self._source)
        query = await recall.aprepare(query_bundle)
        one = self._store_call(call, query)
        selection = await one.afill(lambda searches: recall.arun(searches, query))
        return self._finish(call, selection, one.source)


def _store_scores(candidates: list[NodeWithScore]) -> dict[str, float]:
    return {n.node.node_id: float(n.score) for n in candidates if n.score is not None}
